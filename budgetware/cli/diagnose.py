"""``budgetware diagnose LOG``: per tool call, the stages its result crossed, where it changed."""

from __future__ import annotations

import sys

from budgetware.cli.errors import ArgumentParser, CliError, describe_os_error
from budgetware.diagnostics.diagnose import read_log, render

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Entry point of ``budgetware diagnose``; returns the exit code."""
    parser = ArgumentParser(
        prog="budgetware diagnose",
        description="Show, per tool call, the stages its result crossed and where it changed.",
    )
    parser.add_argument("log", help="a file written through BUDGETWARE_DEBUG_LOG_FILE")
    parser.add_argument("--call", help="only the tool call whose hash starts with this")
    args = parser.parse_args(argv)
    try:
        with open(args.log, encoding="utf-8", errors="replace") as handle:
            log = read_log(handle)
    except OSError as exc:
        raise CliError(f"cannot read {describe_os_error(exc)}") from None
    if log.events == 0 and log.skipped:
        raise CliError(
            f"{args.log} is not a budgetware debug log: none of its {log.skipped:,} lines is "
            "a budgetware event (write one with BUDGETWARE_DEBUG_LOG_FILE=PATH)"
        )
    if args.call and not any(path.call.startswith(args.call) for path in log.calls.values()):
        raise CliError(
            f"no tool call in {args.log} starts with {args.call!r} "
            f"({len(log.calls)} tool call{'' if len(log.calls) == 1 else 's'}; "
            "run without --call to list them)"
        )
    render(log, sys.stdout, call_prefix=args.call)
    return 0
