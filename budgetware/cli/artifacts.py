"""``budgetware artifacts``: see, read and prune the artifact store (``list``, ``usage``,
``sweep`` and ``prune`` show sizes, ages and references; ``show`` and ``grep`` the content)."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from budgetware.cli.errors import ArgumentParser, CliError
from budgetware.core.artifacts import ArtifactNotFound
from budgetware.core.config import ENV_PREFIX, BudgetConfig, ConfigError, parse_duration
from budgetware.retrieval.errors import InvalidReadArgument
from budgetware.retrieval.read import read_ref, read_window
from budgetware.store.base import ContentStore
from budgetware.store.lifecycle import StoreUsage, plan_prune, stale_temps, summarize
from budgetware.store.retention import Progress
from budgetware.store.select import check_store, store_for_config
from budgetware.tools import MAX_CONTEXT, MAX_LIMIT, run_read_tool_output

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


def _store_options(parser: argparse.ArgumentParser, default: Any) -> None:
    """``--dir`` / ``--store``, taken before the subcommand and after it."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--dir", type=Path, default=default, help="store directory (default: the configured one)"
    )
    where.add_argument(
        "--store", default=default, help="store URL: a path, file:// or s3://bucket/prefix"
    )


def _parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="budgetware artifacts",
        description="See, read, sweep or prune the artifact store. show and grep print "
        "full outputs; the other commands counts, sizes, ages and references.",
    )
    _store_options(parser, None)
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        found: argparse.ArgumentParser = sub.add_parser(name, help=help)
        _store_options(found, argparse.SUPPRESS)  # after the subcommand too
        return found

    command("where", "print where the store is")
    command("usage", "count, total size and age range of the artifacts")
    command("list", "every artifact, newest first: last use, size, reference")
    show = command("show", "print a full output (paged on a terminal)")
    show.add_argument("ref", help="the reference a preview names, or its SHA-256")
    show.add_argument("--offset", type=int, default=0, help="the first character to print")
    show.add_argument("--limit", type=int, help="how many characters (default: to the end)")
    grep = command("grep", "the lines of a full output matching a regular expression")
    grep.add_argument("ref", help="the reference a preview names, or its SHA-256")
    grep.add_argument("pattern", help="a regular expression (Python syntax)")
    grep.add_argument(
        "--context", type=int, default=0, help=f"lines around each match (at most {MAX_CONTEXT})"
    )
    command("sweep", "apply the configured retention now (as the automatic sweep does)")
    prune = command("prune", "delete artifacts unused for a while, or the oldest")
    prune.add_argument("--older-than", type=parse_age, help="e.g. 7d: unused for longer")
    prune.add_argument("--max-size", type=parse_size, help="e.g. 500M: keep at most this much")
    prune.add_argument("--dry-run", action="store_true", help="only say what would go")
    return parser


def main(argv: list[str]) -> int:
    """Run ``budgetware artifacts``; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.dir is not None and args.store is not None:
        parser.error("give one of --dir and --store")
    if args.command == "prune" and args.older_than is None and args.max_size is None:
        parser.error("prune needs --older-than and/or --max-size")
    if args.command == "show" and (args.offset < 0 or (args.limit is not None and args.limit < 1)):
        parser.error(
            "--offset must be 0 or more" if args.offset < 0 else "--limit must be 1 or more"
        )
    if args.command == "grep" and not 0 <= args.context <= MAX_CONTEXT:
        parser.error(f"--context must be from 0 to {MAX_CONTEXT}")
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
    try:
        return _run(args, store, time.time())
    except (ArtifactNotFound, InvalidReadArgument) as exc:
        prefix = "no such full output: " if isinstance(exc, ArtifactNotFound) else ""
        raise CliError(prefix + str(exc)) from None


def _run(args: argparse.Namespace, store: ContentStore, now: float) -> int:
    name = store.location
    if args.command == "where":
        print(name)
    elif args.command == "usage":
        print(f"{name}: {_describe(store.usage(), now)}")
    elif args.command == "list":
        _list(store, now)
    elif args.command == "show":
        _show(store, args.ref, args.offset, args.limit)
    elif args.command == "grep":
        _grep(store, args.ref, args.pattern, args.context)
    elif args.command == "prune" and args.dry_run:
        listing = store.retention.listing()
        doomed = plan_prune(
            listing.artifacts, older_than=args.older_than, max_total_bytes=args.max_size, now=now
        )
        names = {entry.name for entry in doomed}
        stale = set(stale_temps(listing.temps, now=now))
        kept = [entry for entry in listing.artifacts if entry.name not in names]
        left = summarize(kept, [temp for temp in listing.temps if temp not in stale])
        print(f"would delete {_describe(summarize(doomed), now)}")
        print(f"would leave: {_describe(left, now)}")
    else:
        if sys.stderr.isatty():
            print(f"listing {name} ...", file=sys.stderr, flush=True)
        if args.command == "sweep":
            gone = store.retention.sweep(now=now, progress=_progress())
        else:
            gone = store.retention.prune(
                older_than=args.older_than,
                max_total_bytes=args.max_size,
                now=now,
                progress=_progress(),
            )
        print(f"deleted {_describe(gone, now)}")
        print(f"left: {_describe(store.usage(), now)}")
    return 0


def _list(store: ContentStore, now: float) -> None:
    """Every artifact, newest first: when last used, its size, its reference."""
    entries = sorted(store.retention.listing().artifacts, key=lambda e: (-e.used, e.name))
    for entry in entries:
        ago = _ago(now - entry.used) + " ago"
        print(f"{ago:>12}  {entry.size:>11,} B  {store.ref_for(entry.name[: -len('.txt')])}")
    total = sum(entry.size for entry in entries)
    print(
        f"{store.location}: {_count(len(entries), 'artifact')}, {_count(total, 'byte')}",
        file=sys.stderr,
    )


# Characters (or bytes) written to the reader per piece.
_PIECE = 1 << 20


def _show(store: ContentStore, ref: str, offset: int, limit: int | None) -> None:
    """The full output (or ``limit`` characters from ``offset``), paged on a terminal; a
    window says on stderr where it is, once the pager is done."""
    if offset == 0 and limit is None:
        with _output() as out:  # the verified bytes as they are
            read_ref(ref, lambda artifact: out.writelines(artifact.pieces(_PIECE)), store=store)
        return
    window = read_window(ref, offset=offset, limit=limit or sys.maxsize, store=store)
    with _output() as out:
        out.write(window.text.encode("utf-8", "surrogatepass"))
    at, total = window.end, window.total
    head = f"chars {offset:,}-{at:,} of {total:,}"
    print(head + (f"; more with --offset {at}" if at < total else ""), file=sys.stderr)


def _grep(store: ContentStore, ref: str, pattern: str, context: int) -> None:
    """``read_tool_output``'s search and its limits: the head on stderr, the lines on stdout."""
    arguments = {"ref": ref, "pattern": pattern, "context": context, "limit": MAX_LIMIT}
    answer = run_read_tool_output(arguments, store=store)
    if answer.startswith("error: "):
        raise CliError(answer[len("error: ") :])
    head, _, lines = answer.partition("\n")
    print(head, file=sys.stderr)
    if lines:
        print(lines)


@contextlib.contextmanager
def _output() -> Iterator[IO[bytes]]:
    """Where ``show`` writes: the pager (``$PAGER``, else ``less``) when stdout is a
    terminal, else stdout; a pager the reader quit ends the output quietly."""
    sys.stdout.flush()
    pager = None
    command = os.environ.get("PAGER") or ("less" if shutil.which("less") else "")
    if sys.stdout.isatty() and command:
        env = {**os.environ, "LESS": os.environ.get("LESS", "FRX")}
        with contextlib.suppress(OSError):  # a shell, as git and man run $PAGER (with options)
            pager = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    if pager is None or pager.stdin is None:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    try:
        yield pager.stdin
    except BrokenPipeError:
        pass  # the reader quit the pager
    finally:
        with contextlib.suppress(BrokenPipeError):
            pager.stdin.close()
        pager.wait()


def _progress() -> Progress | None:
    """Deletions as ``deleting N of M files`` on stderr when it is a terminal, else None."""
    if not sys.stderr.isatty():
        return None

    def report(done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        print(f"\rdeleting {done:,} of {total:,} files", end=end, file=sys.stderr, flush=True)

    return report
