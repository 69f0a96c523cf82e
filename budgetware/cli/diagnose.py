"""``budgetware diagnose LOG``: per tool call, the stages its result crossed, where it changed."""

from __future__ import annotations

import argparse
import sys

from budgetware.diagnostics.diagnose import read_log, render

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Entry point of ``budgetware diagnose``; returns the exit code."""
    parser = argparse.ArgumentParser(
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
        print(f"budgetware diagnose: cannot read {args.log}: {exc.strerror}", file=sys.stderr)
        return 1
    render(log, sys.stdout, call_prefix=args.call)
    return 0
