"""The artifact store as a user meets it: what an S3 artifact costs to write (target: at
most two requests, a HEAD and a PUT), what a process's first write costs (it counts the
store), and the sweep.

Run: .venv/bin/python benchmarks/bench_store.py
S3 numbers come from moto's server on 127.0.0.1 (started here, stopped after): every call
pays moto's fixed cost (a few ms, in Python) and no network, so the times say how many
round trips a case makes, not how fast S3 is.

1. S3, 300 KB artifacts: the calls each case makes (counted from botocore's events) and
   its median time, beside one ``put_object`` of the same bytes.
2. The count before a process's first write: a local store of 1,000 and 10,000 artifacts,
   an S3 prefix of 1,000.
3. The sweep of a local store of 100,000 artifacts against listing and stat-ing the same
   directory, and the latency of requests made while it runs against requests made with
   no sweep (target: no request waits for it). ``BENCH_STORE_ARTIFACTS=0`` skips it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The suite's local servers (tests/testing).
sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "tests"))

from _harness import print_table
from testing.s3 import LocalS3Server, aws_env

from budgetware import BudgetConfig
from budgetware.core.artifacts import text_key
from budgetware.finalizer import ToolResult, finalize_batch, finalize_body
from budgetware.store import sweeper
from budgetware.store.local import LocalArtifactStore

SIZE = 300_000
ROUNDS = 30


def median_time(fn: Callable[[], object], *, rounds: int = ROUNDS) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def s3_benchmarks(endpoint: str) -> None:
    os.environ.update(aws_env(endpoint))
    from budgetware.mcp.bound import bound_tool_result
    from budgetware.store.s3 import S3ArtifactStore

    bucket = f"bench-{uuid.uuid4().hex[:8]}"
    seed = S3ArtifactStore(bucket, "artifacts", max_store_bytes=1 << 40)
    client = seed.client()  # the same client (timeouts, checksum settings) for all
    client.create_bucket(Bucket=bucket)
    calls: list[str] = []
    client.meta.events.register("before-call.s3", lambda model, **_: calls.append(model.name))
    config = BudgetConfig(batch_budget=10_000)
    counter = [0]

    def fresh_text() -> str:
        counter[0] += 1
        return f"{counter[0]:012d}" + "L" * (SIZE - 12)

    def process(prefix: str = "artifacts", **kw: Any) -> S3ArtifactStore:
        """A store as a process has it once it has counted the store (its first write)."""
        store = S3ArtifactStore(bucket, prefix, client=client, max_store_bytes=1 << 40, **kw)
        store.retention.count()
        return store

    def stored_elsewhere() -> str:
        text = fresh_text()
        seed.put(text)
        return text

    producer_previews = []

    def preview_elsewhere() -> str:
        produced = {"content": [{"type": "text", "text": fresh_text()}]}
        bound = bound_tool_result(produced, budget=20_000, store=seed)
        preview: str = bound.result["content"][0]["text"]
        producer_previews.append(bound.refs)
        return preview

    def unconditional() -> S3ArtifactStore:
        store = process("old")
        store._conditional = False  # as a store is after a server refused If-None-Match
        return store

    def put(pair: tuple[S3ArtifactStore, str]) -> object:
        store, text = pair
        return store.put(text, key=text_key(text))

    def finalized(pair: tuple[S3ArtifactStore, str]) -> object:
        store, text = pair
        return finalize_batch([ToolResult("c", "t", (text,))], config=config, store=store)

    Case = tuple[str, Callable[[], S3ArtifactStore], Callable[[], str], Callable[[Any], object]]
    cases: list[Case] = [
        (
            "put_object of the same bytes (one request, for scale)",
            lambda: seed,
            fresh_text,
            lambda pair: client.put_object(Bucket=bucket, Key=f"raw/{pair[1][:12]}", Body=pair[1]),
        ),
        ("a new artifact, through put (the MCP boundary)", process, fresh_text, put),
        ("a new artifact, through the finalizer", process, fresh_text, finalized),
        ("an artifact another process wrote, through put", process, stored_elsewhere, put),
        (
            "an artifact another process wrote, through the finalizer",
            process,
            stored_elsewhere,
            finalized,
        ),
        (
            "a producer's preview, through the finalizer (its decision, its artifact)",
            process,
            preview_elsewhere,
            finalized,
        ),
        ("a new artifact, a server without conditional writes", unconditional, fresh_text, put),
    ]
    rows = []
    for label, new, make, run in cases:
        # Each round a process that has counted the store and not met this output yet.
        made = [(new(), make()) for _ in range(ROUNDS + 1)]
        drain()
        calls.clear()
        run(made.pop())
        seen = list(calls)
        drain()  # the background refreshes are not the request's

        def one(made: list[Any] = made, run: Callable[[Any], object] = run) -> None:
            run(made.pop())

        took = median_time(one)
        writes = seen.count("PutObject") + seen.count("HeadObject")
        rows.append((label, " + ".join(seen) or "none", f"{took * 1000:.1f} ms", str(writes)))
    try:  # the library choice (docs/artifacts.md, "Why boto3"); the dev extra has it
        import obstore
        from obstore.store import S3Store

        other = S3Store(
            bucket,
            endpoint=endpoint,
            region="us-east-1",
            access_key_id="bench",
            secret_access_key="bench",
            client_options={"allow_http": True},
        )
        texts = [fresh_text() for _ in range(ROUNDS + 1)]
        obstore.put(other, "ob/warm", texts.pop().encode())
        took = median_time(
            lambda: obstore.put(other, f"ob/{texts[-1][:12]}", texts.pop().encode())
        )
        rows.append(
            (
                "obstore.put of the same bytes (another library)",
                "PutObject",
                f"{took * 1000:.1f} ms",
                "1",
            )
        )
    except ImportError:
        rows.append(("obstore.put (another library)", 'not installed: the "dev" extra', "", ""))
    assert all(refs for refs in producer_previews)
    store = process()
    text = fresh_text()
    key = text_key(text)
    store.put(text, key=key)
    calls.clear()
    again = median_time(lambda: store.put(text, key=key), rounds=1000)
    rows.append(("the same artifact again in a process", "none", f"{again * 1e6:.1f} us", "0"))
    assert calls == []
    print_table(
        "1. S3: a 300 KB artifact (target: at most a HEAD and a PUT)",
        rows,
        ("case", "calls", "median", "HEAD/PUT"),
    )

    rows = []
    many = S3ArtifactStore(bucket, "many", client=client, max_store_bytes=1 << 40)
    for i in range(1000):
        client.put_object(
            Bucket=bucket, Key=f"many/{hashlib.sha256(str(i).encode()).hexdigest()}.txt", Body=b"x"
        )
    calls.clear()
    took = median_time(lambda: many.retention.count(), rounds=10)
    rows.append(
        (
            "S3 prefix of 1,000 artifacts",
            " + ".join(calls[: len(calls) // 10]),
            f"{took * 1000:.0f} ms",
        )
    )
    print_table(
        "2a. the count before a process's first write, S3", rows, ("store", "calls", "median")
    )


def local_count_benchmarks() -> None:
    rows = []
    root = Path(tempfile.mkdtemp(prefix="budgetware-bench-count-"))
    try:
        for count in (1_000, 10_000):
            directory = root / str(count)
            make_store(directory, count)
            store = LocalArtifactStore(directory, max_store_bytes=1 << 40)
            took = median_time(store.retention.count, rounds=10)
            rows.append((f"local store of {count:,} artifacts", f"{took * 1000:.1f} ms"))
        print_table(
            "2b. the count before a process's first write, local", rows, ("store", "median")
        )
    finally:
        shutil.rmtree(root)


def drain() -> None:
    """Wait until the stores' background thread has run every job submitted so far."""
    done = threading.Event()
    sweeper.submit("benchmark drain", done.set)
    done.wait(60)


def make_store(directory: Path, count: int) -> None:
    directory.mkdir(mode=0o700)
    now = time.time()
    for i in range(count):
        data = f"artifact {i} ".encode() * 80
        name = hashlib.sha256(data).hexdigest() + ".txt"
        fd = os.open(directory / name, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, data)
        os.close(fd)
        then = now - 86400 * (i % 60)  # last used from today to 60 days ago
        os.utime(directory / name, (then, then))


def list_and_stat(directory: Path) -> int:
    total = 0
    with os.scandir(directory) as entries:
        for entry in entries:
            total += entry.stat(follow_symlinks=False).st_size
    return total


def sweep_benchmarks(count: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="budgetware-bench-store-"))
    try:
        directory = root / "store"
        make_store(directory, count)
        keep_all = LocalArtifactStore(directory, max_age=0, max_store_bytes=1 << 40)
        base = min(timeit_once(lambda: list_and_stat(directory)) for _ in range(3))
        sweep = min(timeit_once(keep_all.sweep) for _ in range(3))
        rows = [
            (f"scandir + stat of {count:,} files (baseline)", f"{base * 1000:.0f} ms", "1.00x"),
            ("sweep, nothing to delete", f"{sweep * 1000:.0f} ms", f"{sweep / base:.2f}x"),
        ]
        # Request latency while the sweep runs on the background thread, against none: a
        # 1.2 MB chat request re-sending four 300 KB tool outputs (stored on its first turn).
        writer = LocalArtifactStore(root / "requests", max_store_bytes=1 << 40)
        config = BudgetConfig(batch_budget=50_000, artifact_dir=root / "requests")
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for turn in range(4):
            messages.append({"role": "assistant", "tool_calls": [{"id": f"c{turn}"}]})
            messages.append(
                {"role": "tool", "tool_call_id": f"c{turn}", "content": f"{turn}" * SIZE}
            )
        body = json.dumps({"model": "m", "messages": messages}).encode()
        url = "https://api.openai.com/v1/chat/completions"

        def request() -> None:
            finalize_body(url, body, config=config)

        request()
        assert writer.usage().count == 4
        quiet: list[float] = []
        busy: list[float] = []
        for _ in range(10):  # alternate phases, so that load from elsewhere hits both
            quiet += [timeit_once(request) for _ in range(25)]
            done = threading.Event()
            running = threading.Event()

            def sweep_loop(
                done: threading.Event = done, running: threading.Event = running
            ) -> None:
                running.set()
                while not done.is_set():
                    keep_all.sweep()

            # On the stores' own background thread, as the automatic sweep runs.
            sweeper.submit("benchmark sweeps", sweep_loop)
            running.wait()
            try:
                busy += [timeit_once(request) for _ in range(25)]
            finally:
                done.set()
            drain()
        q50, q99 = statistics.median(quiet), percentile(quiet, 0.99)
        b50, b99 = statistics.median(busy), percentile(busy, 0.99)
        rows += [
            ("1.2 MB request, no sweep: p50 / p99", f"{q50 * 1000:.2f} / {q99 * 1000:.2f} ms", ""),
            (
                "1.2 MB request, sweeps running: p50 / p99",
                f"{b50 * 1000:.2f} / {b99 * 1000:.2f} ms",
                f"{b50 / q50:.2f}x / {b99 / q99:.2f}x",
            ),
        ]
        gone_store = LocalArtifactStore(directory, max_age=30 * 86400, max_store_bytes=1 << 40)
        evict = timeit_once(gone_store.sweep)
        rows.append(("sweep deleting the half older than 30 days", f"{evict * 1000:.0f} ms", ""))
        print_table(
            f"3. the sweep, a local store of {count:,} artifacts", rows, ("case", "time", "ratio")
        )
    finally:
        shutil.rmtree(root)


def timeit_once(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError:
        print("boto3 or moto[server] is not installed (dev extra): S3 benchmarks skipped")
    else:
        with LocalS3Server() as server:
            s3_benchmarks(server.endpoint)
    local_count_benchmarks()
    count = int(os.environ.get("BENCH_STORE_ARTIFACTS", "100000"))
    if count > 0:  # 0: no sweep case (it takes minutes on a loaded machine)
        sweep_benchmarks(count)


if __name__ == "__main__":
    main()
