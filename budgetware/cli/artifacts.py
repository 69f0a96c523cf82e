"""``budgetware artifacts``: see and prune the artifact store (sizes and ages, never content)."""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from budgetware.cli.errors import ArgumentParser, CliError
from budgetware.core.config import BudgetConfig
from budgetware.store.lifecycle import StoreUsage
from budgetware.store.local import LocalArtifactStore

__all__ = ["main", "parse_age", "parse_size"]

_AGE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw]?)")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)", re.IGNORECASE)
_AGE_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """``"90"``, ``"30m"``, ``"12h"``, ``"7d"``, ``"2w"`` as seconds."""
    match = _AGE.fullmatch(text.strip().lower())
    if match is None:
        raise argparse.ArgumentTypeError(f"not an age: {text!r} (examples: 12h, 7d, 2w)")
    return float(match.group(1)) * _AGE_UNITS[match.group(2)]


def parse_size(text: str) -> int:
    """``"500M"``, ``"2G"``, ``"100k"``, ``"1048576"`` as bytes (K/M/G/T are powers of 1024)."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 100M, 2G)")
    power = "bkmgt".index((match.group(2)[:1] or "b").lower())
    return int(float(match.group(1)) * 1024**power)


def _describe(usage: StoreUsage, now: float) -> str:
    if usage.oldest is None or usage.newest is None:
        return "0 artifacts"
    return (
        f"{usage.count:,} artifacts, {usage.total_bytes:,} bytes, last used "
        f"{_ago(now - usage.newest)} to {_ago(now - usage.oldest)} ago"
    )


def _ago(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{max(seconds, 0):.0f}s"


def main(argv: list[str]) -> int:
    """Run ``budgetware artifacts``; returns the exit code."""
    parser = ArgumentParser(
        prog="budgetware artifacts",
        description="See or prune the artifact store. Shows counts, sizes and ages only.",
    )
    parser.add_argument("--dir", type=Path, help="store directory (default: the configured one)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("where", help="print the store directory")
    sub.add_parser("usage", help="count, total size and age range of the artifacts")
    prune = sub.add_parser("prune", help="delete artifacts unused for a while, or the oldest")
    prune.add_argument("--older-than", type=parse_age, help="e.g. 7d: unused for longer")
    prune.add_argument("--max-size", type=parse_size, help="e.g. 500M: keep at most this much")
    prune.add_argument("--dry-run", action="store_true", help="only say what would go")
    args = parser.parse_args(argv)
    if args.command == "prune" and args.older_than is None and args.max_size is None:
        parser.error("prune needs --older-than and/or --max-size")
    directory = args.dir or BudgetConfig.from_env().resolved_artifact_dir()
    if directory.exists() and not directory.is_dir():
        raise CliError(f"{directory} is not a directory (the artifact store is a directory)")
    store = LocalArtifactStore(directory)
    now = time.time()
    if args.command == "where":
        print(store.directory)
    elif args.command == "usage":
        print(f"{store.directory}: {_describe(store.usage(), now)}")
    else:
        gone = store.prune(
            older_than=args.older_than,
            max_total_bytes=args.max_size,
            now=now,
            dry_run=args.dry_run,
        )
        verb = "would delete" if args.dry_run else "deleted"
        print(f"{verb} {_describe(gone, now)}")
        print(f"left: {_describe(store.usage(), now)}")
    return 0
