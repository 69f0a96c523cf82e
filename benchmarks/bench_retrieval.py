"""Reading artifacts back: a 64 KB window at offset 0 and at offset 99 MB of a 100 MB
artifact (ASCII and CJK), against os.pread of the same bytes; a literal grep over 100 MB
against ``grep -c -F`` on the same file; a regular-expression grep, reported.

Targets (issue #14): the two windows within 2x of each other and within 2x of os.pread of
the same bytes; the literal grep within 2x of ``grep -c -F``. Also where the fixed cost
of an ASCII window goes, and a search with context around 20,000 matches. The data is
generated in a temporary directory and deleted at the end; everything runs from the page
cache (each timing is the best of several rounds after a warm-up).

The same windows from the S3 store (moto's server on 127.0.0.1, when boto3 and
moto[server] are installed), against one ranged ``GetObject`` of the same bytes with the
store's own boto3 client: every read of a window is the index lookup plus one ranged GET.

    .venv/bin/python benchmarks/bench_retrieval.py [--mb 100] [--s3-mb 20]
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
from budgetware.retrieval.read import read_artifact, resolve_ref
from budgetware.store.local import LocalArtifactStore

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
    text = row * rows
    chars = len(text) * 97 // 100
    start = text.rfind("\n", 0, chars) + 1
    needle = "失败 FAILED tests/test_cart.py\n"
    return text[:start] + needle + text[start + len(needle) :]


def window_rows(store: LocalArtifactStore, name: str, text: str) -> list[tuple[str, ...]]:
    ref = store.put(text)
    key = text_key(text)
    started = time.perf_counter()
    read_artifact(ref, limit=1, store=store)  # verify (hash) and build the index, once
    first = time.perf_counter() - started
    index_bytes = os.path.getsize(Path(ref).with_suffix(".index"))
    far = len(text) - len(text) // 100 - WINDOW  # ~99% in: offset 99 MB of 100 MB
    rows = [
        (
            f"{name}: first read (builds the index)",
            f"{first * 1e3:.0f} ms",
            f"index {index_bytes:,} bytes",
            "",
        )
    ]
    fd = os.open(ref, os.O_RDONLY)
    try:
        times = {}
        for label, offset in (("offset 0", 0), (f"offset {far / MIB:.0f} Mi chars", far)):
            begin = len(text[:offset].encode("utf-8", "surrogatepass"))
            length = len(text[offset : offset + WINDOW].encode("utf-8", "surrogatepass"))
            assert (
                read_artifact(ref, offset=offset, limit=WINDOW, store=store)
                == (text[offset : offset + WINDOW])
            )
            ours = best_time(
                lambda o=offset: read_artifact(ref, offset=o, limit=WINDOW, store=store),
                repeat=9,
                number=200,
            )
            on_fd = best_time(
                lambda b=begin, n=length: os.pread(fd, n, b).decode("utf-8"),
                repeat=9,
                number=200,
            )
            raw = best_time(lambda b=begin, n=length: os.pread(fd, n, b), repeat=9, number=200)

            def opened(b: int = begin, n: int = length) -> str:
                handle = os.open(ref, os.O_RDONLY)
                try:
                    return os.pread(handle, n, b).decode("utf-8")
                finally:
                    os.close(handle)

            by_path = best_time(opened, repeat=9, number=200)
            times[label] = ours
            rows.append(
                (
                    f"{name}: 64 Ki chars at {label} ({length // 1024} KiB)",
                    f"{ours * 1e6:.0f} us",
                    f"pread+decode {on_fd * 1e6:.0f} us (x{ours / on_fd:.2f}); "
                    f"open+pread+decode {by_path * 1e6:.0f} us (x{ours / by_path:.2f}); "
                    f"pread alone (bytes) {raw * 1e6:.0f} us (x{ours / raw:.2f})",
                    "",
                )
            )
        near, far_time = times.values()
        rows.append((f"{name}: far / near", f"x{far_time / near:.2f}", "target <= 2", ""))
    finally:
        os.close(fd)
    del key
    return rows


def per_call(fns: dict[str, Callable[[], object]], rounds: int = 40) -> dict[str, float]:
    """The median time of one call of each, over interleaved rounds (seconds)."""
    times: dict[str, list[int]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            for _ in range(100):
                start = time.perf_counter_ns()
                fn()
                times[name].append(time.perf_counter_ns() - start)
    return {name: statistics.median(t) / 1e9 for name, t in times.items()}


def fixed_cost_rows(store: LocalArtifactStore, text: str) -> list[tuple[str, ...]]:
    """Where the time of a 64 KiB ASCII window goes, beside pread on an open fd: one call
    of each part, timed alone (medians of interleaved rounds: steadier than batches on a
    shared machine). A window of an artifact read lately is a stat of its name and a
    pread (``budgetware/retrieval/cache.py``); a read that goes the whole way (the first
    of a reference, and one a second per artifact) resolves, opens and checks."""
    ref = store.put(text)
    key = text_key(text)
    read_artifact(ref, limit=1, store=store)
    read_artifact(ref, limit=1, store=store)
    fd = os.open(ref, os.O_RDONLY)
    folder = store.open_artifact(key)
    os.close(folder[0])
    dir_fd, name = folder[2].fd, key + ".txt"
    if dir_fd is None:  # pragma: no cover - no directory descriptors
        name = ref

    def whole_way() -> str:
        resolved, found = resolve_ref(ref, store=store)
        return resolved.read_text(found, 0, WINDOW)

    try:
        parts = per_call(
            {
                "read_artifact": lambda: read_artifact(ref, limit=WINDOW, store=store),
                "stat of the name": lambda: os.stat(name, dir_fd=dir_fd, follow_symlinks=False),
                "pread+decode": lambda: os.pread(fd, WINDOW, 0).decode("utf-8"),
                "the whole way": whole_way,
                "resolve_ref": lambda: resolve_ref(ref, store=store),
                "open+fstat+close": lambda: os.close(store._open_for_reading(key + ".txt")[0]),
            }
        )
    finally:
        os.close(fd)
    total, base = parts["read_artifact"], parts["pread+decode"]
    detail = ", ".join(
        f"{name} {parts[name] * 1e6:.1f} us" for name in ("stat of the name", "pread+decode")
    )
    whole = ", ".join(
        f"{name} {parts[name] * 1e6:.1f} us" for name in ("resolve_ref", "open+fstat+close")
    )
    return [
        (
            "ASCII: 64 Ki chars, one call (median)",
            f"{total * 1e6:.1f} us",
            f"pread+decode on an open fd {base * 1e6:.1f} us (x{total / base:.2f}, target <= 2)",
            "",
        ),
        ("ASCII: where the time goes", f"{total * 1e6:.1f} us", detail, ""),
        (
            "ASCII: the whole way (first read of a reference; once a second per artifact)",
            f"{parts['the whole way'] * 1e6:.1f} us",
            whole,
            "",
        ),
    ]


def context_rows(store: LocalArtifactStore) -> list[tuple[str, ...]]:
    """A search with context on non-ASCII text with many matches: 20,000 matches, two
    lines around each, in 9 MiB of CJK lines (quadratic before: 48 s)."""
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
            (
                f"CJK {len(text.encode()) / MIB:.0f} MiB: {pattern!r}, 20,000 matches, context=2",
                f"{took * 1e3:.0f} ms",
                "",
                "",
            )
        )
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
        started = time.perf_counter()
        read_artifact(ref, limit=1, store=store)  # verify and build the index, once
        rows.append(
            (
                f"S3 {name}: first read (builds the index)",
                f"{(time.perf_counter() - started) * 1e3:.0f} ms",
                "",
                "",
            )
        )
        far = len(text) - len(text) // 100 - WINDOW
        times = {}
        for label, offset in (("offset 0", 0), (f"offset {far / MIB:.0f} Mi chars", far)):
            begin = len(text[:offset].encode("utf-8", "surrogatepass"))
            length = len(text[offset : offset + WINDOW].encode("utf-8", "surrogatepass"))
            assert (
                read_artifact(ref, offset=offset, limit=WINDOW, store=store)
                == (text[offset : offset + WINDOW])
            )
            ours = best_time(
                lambda o=offset: read_artifact(ref, offset=o, limit=WINDOW, store=store),
                repeat=7,
                number=20,
            )
            raw = best_time(
                lambda b=begin, n=length: (
                    client.get_object(
                        Bucket=bucket,
                        Key=f"artifacts/{key}.txt",
                        Range=f"bytes={b}-{b + n - 1}",
                    )["Body"]
                    .read()
                    .decode("utf-8")
                ),
                repeat=7,
                number=20,
            )
            times[label] = ours
            rows.append(
                (
                    f"S3 {name}: 64 Ki chars at {label}",
                    f"{ours * 1e3:.2f} ms",
                    f"ranged GetObject {raw * 1e3:.2f} ms (x{ours / raw:.2f})",
                    "",
                )
            )
        near, far_time = times.values()
        rows.append((f"S3 {name}: far / near", f"x{far_time / near:.2f}", "target <= 2", ""))
    return rows


def grep_rows(
    store: LocalArtifactStore, name: str, text: str, tool: str | None
) -> list[tuple[str, ...]]:
    ref = store.put(text)
    literal = "FAILED tests/test_cart.py"
    regex = r"FAILED tests/\w+\.py"
    found = grep_result(ref, literal, max_matches=10_000, store=store)
    assert len(found.matches) == 1, len(found.matches)
    ours = best_time(lambda: grep_result(ref, literal, max_matches=10_000, store=store), repeat=5)
    rows = [(f"{name}: literal grep, 1 match", f"{ours * 1e3:.0f} ms", "", "")]
    if tool:
        out = subprocess.run([tool, "-c", "-F", literal, ref], capture_output=True, text=True)
        assert out.stdout.strip() == "1", out
        theirs = best_time(
            lambda: subprocess.run([tool, "-c", "-F", literal, ref], capture_output=True),
            repeat=5,
        )
        rows[-1] = (
            rows[-1][0],
            rows[-1][1],
            f"grep -c -F {theirs * 1e3:.0f} ms (x{ours / theirs:.2f}, target <= 2)",
            "",
        )
    assert len(grep_result(ref, regex, store=store).matches) == 1
    ours_re = best_time(lambda: grep_result(ref, regex, store=store), repeat=3)
    row = (f"{name}: regex grep {regex}", f"{ours_re * 1e3:.0f} ms", "", "")
    if tool:
        theirs_re = best_time(
            lambda: subprocess.run(
                [tool, "-c", "-E", r"FAILED tests/\w+\.py", ref], capture_output=True
            ),
            repeat=3,
        )
        row = (
            row[0],
            row[1],
            f"grep -c -E {theirs_re * 1e3:.0f} ms (x{ours_re / theirs_re:.2f})",
            "",
        )
    rows.append(row)
    # No plain string every match must contain: the whole artifact is decoded and matched.
    bare = r"[A-Z]{6} tests/test_cart"
    assert len(grep_result(ref, bare, store=store).matches) == 1
    ours_bare = best_time(lambda: grep_result(ref, bare, store=store), repeat=3)
    row = (f"{name}: regex grep {bare}", f"{ours_bare * 1e3:.0f} ms", "", "")
    if tool:
        theirs_bare = best_time(
            lambda: subprocess.run([tool, "-c", "-E", bare, ref], capture_output=True),
            repeat=3,
        )
        versus = f"grep -c -E {theirs_bare * 1e3:.0f} ms (x{ours_bare / theirs_bare:.2f})"
        row = (row[0], row[1], versus, "")
    rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=100, help="artifact size in MB (default 100)")
    parser.add_argument(
        "--s3-mb", type=int, default=20, help="S3 artifact size in MB (default 20; 0: skip)"
    )
    args = parser.parse_args()
    size = args.mb * MIB
    tool = shutil.which("grep")
    directory = Path(tempfile.mkdtemp(prefix="budgetware-bench-retrieval-"))
    try:
        store = LocalArtifactStore(
            directory / "artifacts", max_artifact_bytes=2 * size, max_store_bytes=8 * size
        )
        rows: list[tuple[str, ...]] = []
        for name, make in (("ASCII", make_ascii), ("CJK", make_cjk)):
            text = make(size)
            rows += window_rows(store, name, text)
            if name == "ASCII":
                rows += fixed_cost_rows(store, text)
            rows += grep_rows(store, name, text, tool)
            del text
        rows += context_rows(store)
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
            f"Reading a {args.mb} MB artifact back (best of several rounds, page cache warm)",
            rows,
            ("what", "time", "baseline (same run)", ""),
        )
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
