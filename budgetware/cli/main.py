"""The ``budgetware`` command line: one subcommand per feature, each imported lazily."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

__all__ = ["main"]

# name -> (module with a ``main(argv: list[str]) -> int``, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("budgetware.cli.demo", "run a scripted agent against a local fake provider"),
    "diagnose": ("budgetware.cli.diagnose", "summarize a budgetware debug log per tool call"),
    "acp-proxy": ("budgetware.cli.acp_proxy", "run an ACP agent with bounded tool output"),
    "artifacts": ("budgetware.cli.artifacts", "see or prune the artifact store"),
}


def _usage() -> str:
    lines = ["usage: budgetware <command> [options]", "", "commands:"]
    width = max(len(name) for name in COMMANDS)
    lines += [f"  {name.ljust(width)}  {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch ``budgetware <command> ...``; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help"}:
        print(_usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"budgetware: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    code: int = module.main(rest)
    return code
