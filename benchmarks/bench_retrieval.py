"""Reading artifacts back, as a user meets it: a 64 KiB window of a 50 MiB artifact (the
largest a store keeps), ASCII and multi-byte, through ``read_artifact`` and the
``read_tool_output`` tool (target: under 1 ms a window, on a local store); the first read
of an artifact in a process (it hashes the artifact and indexes it); searches, reported.

Each window time is the median (and 99th percentile) of single calls, interleaved near
and far and with ``os.pread`` and a decode of the same bytes (the least any reader does:
its 99th percentile is the machine's). The data is generated in a temporary directory
and deleted at the end; everything runs from the page cache. The same windows from the
S3 store (moto's server on 127.0.0.1, when boto3 and moto[server] are installed), beside
one ranged ``GetObject`` of the same bytes: a window there is one round trip.

    .venv/bin/python benchmarks/bench_retrieval.py [--mb 50] [--s3-mb 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The suite's local servers (tests/testing).
sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "tests"))

from _harness import best_time, print_table

from budgetware.core.artifacts import text_key
from budgetware.retrieval.grep import grep_result
from budgetware.retrieval.read import read_artifact
from budgetware.store.base import ContentStore
from budgetware.store.local import LocalArtifactStore
from budgetware.tools import run_read_tool_output

MIB = 1024 * 1024
WINDOW = 65_536  # characters


def make_ascii(size: int) -> str:
    line = "2026-12-01T05:00:00Z INFO worker-17 PASSED tests/test_module_{:07d}.py::test_case ok\n"
    lines = [line.format(i) for i in range(size // len(line) + 1)]
    text = "".join(lines)[:size]
    middle = len(text) * 97 // 100
    needle = "FAILED tests/test_cart.py::test_checkout_total - AssertionError\n"
    start = text.rfind("\n", 0, middle) + 1
    return text[:start] + needle + text[start + len(needle) :]


def make_cjk(size: int) -> str:
    # Lines of 3-byte characters (CJK) with an ASCII line break: ~size bytes of UTF-8.
    row = "".join(chr(0x4E00 + (i * 37) % 20000) for i in range(40)) + "\n"
    rows = size // len(row.encode()) + 1
    text = (row * rows)[: size // 3]
    chars = len(text) * 97 // 100
    start = text.rfind("\n", 0, chars) + 1
    needle = "失败 FAILED tests/test_cart.py\n"
    return text[:start] + needle + text[start + len(needle) :]


def single_calls(fns: dict[str, Callable[[], object]], rounds: int = 30) -> dict[str, list[int]]:
    """Nanoseconds of single calls of each, interleaved (noise hits a round, not a case)."""
    times: dict[str, list[int]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            for _ in range(20):
                start = time.perf_counter_ns()
                fn()
                times[name].append(time.perf_counter_ns() - start)
    return times


def p50_p99(ns: list[int]) -> str:
    ordered = sorted(ns)
    high = ordered[int(0.99 * len(ordered))]
    return f"{statistics.median(ordered) / 1e3:.0f} / {high / 1e3:.0f} us"


def window_rows(directory: Path, name: str, text: str) -> list[tuple[str, ...]]:
    size = len(text.encode("utf-8", "surrogatepass"))
    writer = LocalArtifactStore(directory, max_artifact_bytes=size, max_store_bytes=1 << 40)
    ref = writer.put(text)
    # A process that did not write it: its first read hashes and indexes the artifact.
    store = LocalArtifactStore(directory, max_artifact_bytes=size, max_store_bytes=1 << 40)
    started = time.perf_counter()
    read_artifact(ref, limit=1, store=store)
    first = time.perf_counter() - started
    rows = [
        (f"{name} {size / MIB:.0f} MiB: the first read in a process", f"{first * 1e3:.0f} ms", "")
    ]
    far = len(text) - len(text) // 100 - WINDOW  # 99% of the way in
    cases: dict[str, Callable[[], object]] = {}
    fd = os.open(ref, os.O_RDONLY)
    for label, offset in (("offset 0", 0), (f"offset {far:,}", far)):
        expected = text[offset : offset + WINDOW]
        begin = len(text[:offset].encode("utf-8", "surrogatepass"))
        length = len(expected.encode("utf-8", "surrogatepass"))
        cases[f"pread+decode of the same bytes (for scale), {label}"] = lambda b=begin, n=length: (
            os.pread(fd, n, b).decode("utf-8")
        )
        assert read_artifact(ref, offset=offset, limit=WINDOW, store=store) == expected
        args = {"ref": ref, "offset": offset, "limit": WINDOW}
        assert run_read_tool_output(args, store=store).endswith(expected)
        cases[f"read_artifact, {label}"] = lambda o=offset: read_artifact(
            ref, offset=o, limit=WINDOW, store=store
        )
        cases[f"read_tool_output, {label}"] = lambda a=args: run_read_tool_output(a, store=store)
    try:
        measured = single_calls(cases)
    finally:
        os.close(fd)
    for label, ns in measured.items():
        target = (
            ""
            if label.startswith("pread")
            else "met"
            if statistics.median(ns) < 1e6
            else "NOT MET"
        )
        rows.append((f"{name}: 64 Ki chars, {label}", p50_p99(ns), target))
    return rows


def context_rows(store: ContentStore) -> list[tuple[str, ...]]:
    """A search with context on non-ASCII text with many matches: 20,000 matches, two
    lines around each, in 9 MiB of CJK lines."""
    row = "汉字" * 25
    text = "".join(f"{row} FAILED {i}\n{row}\n{row}\n" for i in range(20_000))
    ref = store.put(text)
    rows: list[tuple[str, ...]] = []
    for pattern in ("FAILED", "FAILED \\d+", "^[^F\\n]+FAILED"):
        found = grep_result(ref, pattern, context=2, max_matches=20_000, store=store)
        assert len(found.matches) == 20_000, len(found.matches)
        took = best_time(
            lambda p=pattern: grep_result(ref, p, context=2, max_matches=20_000, store=store),
            repeat=3,
        )
        rows.append(
            (f"CJK 9 MiB: {pattern!r}, 20,000 matches, context=2", f"{took * 1e3:.0f} ms", "")
        )
    return rows


def grep_rows(
    store: ContentStore, name: str, text: str, tool: str | None
) -> list[tuple[str, ...]]:
    ref = store.put(text)
    rows: list[tuple[str, ...]] = []
    for pattern, flag in (
        ("FAILED tests/test_cart.py", "-F"),
        (r"FAILED tests/\w+\.py", "-E"),
        (r"[A-Z]{6} tests/test_cart", "-E"),
    ):
        assert len(grep_result(ref, pattern, store=store).matches) == 1
        ours = best_time(lambda p=pattern: grep_result(ref, p, store=store), repeat=3)
        scale = ""
        if tool:
            theirs = best_time(
                lambda p=pattern, f=flag: subprocess.run(
                    [tool, "-c", f, p, ref], capture_output=True
                ),
                repeat=3,
            )
            scale = f"grep -c {flag}: {theirs * 1e3:.0f} ms"
        rows.append((f"{name}: grep {pattern!r}, 1 match", f"{ours * 1e3:.0f} ms", scale))
    return rows


def s3_window_rows(name: str, text: str) -> list[tuple[str, ...]]:
    import uuid

    from testing.s3 import LocalS3Server

    from budgetware.store.s3 import S3ArtifactStore

    rows: list[tuple[str, ...]] = []
    with LocalS3Server() as server:
        os.environ.update(server.aws_env())
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        store = S3ArtifactStore(
            bucket, "artifacts", max_artifact_bytes=1 << 40, max_store_bytes=1 << 40
        )
        client = store.client()
        client.create_bucket(Bucket=bucket)
        ref = store.put(text)
        key = text_key(text)
        reader = S3ArtifactStore(
            bucket, "artifacts", max_artifact_bytes=1 << 40, max_store_bytes=1 << 40
        )
        started = time.perf_counter()
        read_artifact(ref, limit=1, store=reader)
        first = time.perf_counter() - started
        size = len(text.encode("utf-8", "surrogatepass"))
        rows.append(
            (
                f"S3 {name} {size / MIB:.0f} MiB: the first read in a process",
                f"{first * 1e3:.0f} ms",
                "",
            )
        )
        far = len(text) - len(text) // 100 - WINDOW
        for label, offset in (("offset 0", 0), (f"offset {far:,}", far)):
            begin = len(text[:offset].encode("utf-8", "surrogatepass"))
            length = len(text[offset : offset + WINDOW].encode("utf-8", "surrogatepass"))
            assert (
                read_artifact(ref, offset=offset, limit=WINDOW, store=reader)
                == (text[offset : offset + WINDOW])
            )
            ours = best_time(
                lambda o=offset: read_artifact(ref, offset=o, limit=WINDOW, store=reader),
                repeat=7,
                number=10,
            )
            raw = best_time(
                lambda b=begin, n=length: client.get_object(
                    Bucket=bucket, Key=f"artifacts/{key}.txt", Range=f"bytes={b}-{b + n - 1}"
                )["Body"].read(),
                repeat=7,
                number=10,
            )
            rows.append(
                (
                    f"S3 {name}: 64 Ki chars, {label}",
                    f"{ours * 1e3:.1f} ms",
                    f"one ranged GetObject of the same bytes: {raw * 1e3:.1f} ms",
                )
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=50, help="artifact size in MiB (default 50)")
    parser.add_argument(
        "--s3-mb", type=int, default=20, help="S3 artifact size in MiB (default 20; 0: skip)"
    )
    args = parser.parse_args()
    size = args.mb * MIB
    tool = shutil.which("grep")
    root = Path(tempfile.mkdtemp(prefix="budgetware-bench-retrieval-"))
    try:
        rows: list[tuple[str, ...]] = []
        for name, make in (("ASCII", make_ascii), ("CJK", make_cjk)):
            text = make(size)
            rows += window_rows(root / name, name, text)
            rows += grep_rows(
                LocalArtifactStore(root / name, max_artifact_bytes=size, max_store_bytes=1 << 40),
                name,
                text,
                tool,
            )
            del text
        rows += context_rows(LocalArtifactStore(root / "context", max_store_bytes=1 << 40))
        try:
            import boto3  # noqa: F401
            import moto.server  # noqa: F401
        except ImportError:
            print("boto3 or moto[server] is not installed (dev extra): S3 windows skipped")
        else:
            if args.s3_mb > 0:
                for name, make in (("ASCII", make_ascii), ("CJK", make_cjk)):
                    rows += s3_window_rows(name, make(args.s3_mb * MIB))
        print_table(
            f"Reading artifacts back ({args.mb} MiB local; target: a 64 KiB window under 1 ms)",
            rows,
            ("what", "p50 / p99 or time", "target / for scale"),
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
