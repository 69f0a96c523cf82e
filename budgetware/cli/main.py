"""The ``budgetware`` command line: dispatches to one lazily imported module per command,
turning a user's mistake into one line (``cli/errors.py``) and a closed pipe into quiet."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Sequence

from budgetware.cli.errors import CliError, describe_os_error

__all__ = ["COMMANDS", "main"]

# name -> (module with a ``main(argv: list[str]) -> int``, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("budgetware.cli.demo", "run a scripted agent against a local fake provider"),
    "diagnose": ("budgetware.cli.diagnose", "summarize a budgetware debug log per tool call"),
    "acp-proxy": ("budgetware.cli.acp_proxy", "run an ACP agent with bounded tool output"),
    "artifacts": ("budgetware.cli.artifacts", "see or prune the artifact store"),
    "mcp-server": ("budgetware.cli.mcp_server", "serve read_tool_output over MCP (stdio or HTTP)"),
    "run": ("budgetware.cli.run", "run a Python program with budgetware on, unchanged"),
    "report": ("budgetware.cli.report", "summarize what budgetware did in a session"),
    "inspect": ("budgetware.cli.inspect", "see a session in the browser: cuts, previews, outputs"),
}

# A process killed by SIGPIPE exits with 128 + 13; say the same when the reader went away.
EXIT_BROKEN_PIPE = 141
EXIT_INTERRUPTED = 130


def _usage() -> str:
    lines = ["usage: budgetware <command> [options]", "       budgetware --version", ""]
    lines.append("commands:")
    width = max(len(name) for name in COMMANDS)
    lines += [f"  {name.ljust(width)}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "Run 'budgetware <command> --help' for a command's options."]
    return "\n".join(lines)


def _fail(prog: str, message: str, code: int) -> int:
    print(f"{prog}: {message}", file=sys.stderr)
    return code


def _dispatch(args: list[str]) -> int:
    if not args:
        return _fail("budgetware", "no command given (see 'budgetware --help')", 2)
    if args[0] in {"-h", "--help"}:
        print(_usage())
        return 0
    if args[0] in {"-V", "--version"}:
        from budgetware.core.environment import version

        print(f"budgetware {version()}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        known = ", ".join(COMMANDS)
        return _fail("budgetware", f"unknown command {name!r} (commands: {known})", 2)
    prog = f"budgetware {name}"
    try:
        module = importlib.import_module(COMMANDS[name][0])
        code: int = module.main(rest)
    except CliError as exc:
        return _fail(prog, exc.message, exc.code)
    except BrokenPipeError:
        raise  # the reader went away: handled once, in main()
    except OSError as exc:
        return _fail(prog, describe_os_error(exc), 1)
    except ValueError as exc:
        # A ConfigError, looked up without importing pydantic (``run`` and --help start without).
        config = sys.modules.get("budgetware.core.config")
        if config is not None and isinstance(exc, config.ConfigError):
            return _fail(prog, str(exc), 2)
        raise
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch ``budgetware <command> ...``; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _dispatch(args)
        # Here a closed pipe can still be handled; at exit it prints "Exception ignored".
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that Python's flush at exit has nothing to fail on."""
    with contextlib.suppress(OSError, ValueError):  # no real stdout (captured in-process)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
