"""``budgetware artifacts``: see and prune the artifact store (sizes and ages, never content)."""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path
from typing import Any

from budgetware.cli.errors import ArgumentParser, CliError
from budgetware.core.config import ENV_PREFIX, BudgetConfig, ConfigError, parse_duration
from budgetware.store.base import ContentStore
from budgetware.store.lifecycle import StoreUsage
from budgetware.store.select import check_store, store_for_config

__all__ = ["main", "parse_age", "parse_size"]

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)", re.IGNORECASE)


def parse_age(text: str) -> float:
    """``"90"``, ``"30m"``, ``"12h"``, ``"7d"``, ``"2w"`` as seconds."""
    try:
        return parse_duration(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an age: {text!r} (examples: 12h, 7d, 2w)") from None


def parse_size(text: str) -> int:
    """``"500M"``, ``"2G"``, ``"100k"``, ``"1048576"`` as bytes (K/M/G/T are powers of 1024)."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 100M, 2G)")
    power = "bkmgt".index((match.group(2)[:1] or "b").lower())
    return int(float(match.group(1)) * 1024**power)


def _count(number: int, thing: str) -> str:
    """``1 artifact``, ``2 artifacts``, ``1,000 bytes``."""
    return f"{number:,} {thing}{'' if number == 1 else 's'}"


def _describe(usage: StoreUsage, now: float) -> str:
    if usage.oldest is None or usage.newest is None:
        text = "0 artifacts"
    else:
        newest, oldest = _ago(now - usage.newest), _ago(now - usage.oldest)
        when = newest if usage.count == 1 or newest == oldest else f"{newest} to {oldest}"
        text = (
            f"{_count(usage.count, 'artifact')}, {_count(usage.total_bytes, 'byte')}, "
            f"last used {when} ago"
        )
    if usage.temp_count:
        text += (
            f"; {_count(usage.temp_count, 'temporary file')}, {_count(usage.temp_bytes, 'byte')}"
        )
    return text


def _ago(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{max(seconds, 0):.0f}s"


def _name_the_option(message: str, args: argparse.Namespace) -> str:
    """``message`` naming the option the user typed, not the variable it stands for."""
    if args.store is not None:
        return message.replace(f"({ENV_PREFIX}ARTIFACT_STORE)", "(--store)")
    if args.dir is not None:
        return message.replace(f"({ENV_PREFIX}ARTIFACT_DIR)", "(--dir)")
    return message


def main(argv: list[str]) -> int:
    """Run ``budgetware artifacts``; returns the exit code."""
    parser = ArgumentParser(
        prog="budgetware artifacts",
        description="See, sweep or prune the artifact store. Shows counts, sizes and ages only.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--dir", type=Path, help="store directory (default: the configured one)")
    where.add_argument("--store", help="store URL: a path, file:// or s3://bucket/prefix")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("where", help="print where the store is")
    sub.add_parser("usage", help="count, total size and age range of the artifacts")
    sub.add_parser(
        "sweep", help="apply the configured retention now (as the automatic sweep does)"
    )
    prune = sub.add_parser("prune", help="delete artifacts unused for a while, or the oldest")
    prune.add_argument("--older-than", type=parse_age, help="e.g. 7d: unused for longer")
    prune.add_argument("--max-size", type=parse_size, help="e.g. 500M: keep at most this much")
    prune.add_argument("--dry-run", action="store_true", help="only say what would go")
    args = parser.parse_args(argv)
    if args.command == "prune" and args.older_than is None and args.max_size is None:
        parser.error("prune needs --older-than and/or --max-size")
    overrides: dict[str, Any] = {"persist": True, "artifact_sweep_interval": 0}
    if args.store is not None:
        overrides["artifact_store"] = args.store
    elif args.dir is not None:
        if args.dir.exists() and not args.dir.is_dir():
            raise CliError(f"{args.dir} is not a directory (the artifact store is a directory)")
        if not args.dir.exists() and args.command != "where":
            # A mistyped --dir would otherwise report "0 artifacts" (or prune nothing).
            raise CliError(f"{args.dir}: no such directory (no artifact store there)")
        overrides["artifact_dir"] = args.dir
        overrides["artifact_store"] = None
    try:
        config = BudgetConfig.from_env(**overrides)
        check_store(config)
    except ConfigError as exc:
        raise ConfigError(_name_the_option(str(exc), args)) from None
    store = store_for_config(config)
    if not isinstance(store, ContentStore):
        raise CliError("no artifact store can be named (set BUDGETWARE_ARTIFACT_DIR)")
    name = store.location
    now = time.time()
    return _run(args, store, name, now)


def _run(args: argparse.Namespace, store: ContentStore, name: str, now: float) -> int:
    if args.command == "where":
        print(name)
    elif args.command == "usage":
        print(f"{name}: {_describe(store.usage(), now)}")
    elif args.command == "sweep":
        gone = store.sweep(now=now)
        print(f"deleted {_describe(gone, now)}")
        print(f"left: {_describe(store.usage(), now)}")
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
