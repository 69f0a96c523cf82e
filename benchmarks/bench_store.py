"""The artifact store: S3 puts and reuse against boto3's own calls, and the sweep.

Run: .venv/bin/python benchmarks/bench_store.py
S3 numbers come from moto's server on 127.0.0.1 (started here, stopped after), so every
call pays moto's fixed cost per request (about 2 ms) and no network: a ratio there says
how many round trips a put makes and what budgetware adds to them, not how fast S3 is.

1. A new 300 KB artifact through ``S3ArtifactStore.put`` against ``put_object`` of the
   same bytes (target: 1.2x): one conditional ``PutObject`` (``If-None-Match: *``, the
   SHA-256 checksum); the same call made directly; budgetware's own work (a client that
   answers at once, through the per-call deadline's worker thread); a server without
   conditional writes (``HeadObject`` + ``PutObject``); through the finalizer
   (``HeadObject`` + ``PutObject``); and obstore's put (the library choice; the
   ``bench`` extra).
2. Reuse of an existing 300 KB artifact by a process that has not seen it (target: no
   upload, one metadata call) against one ``head_object``: through the finalizer (an
   output, and a producer's preview, which has its decision looked up), and through
   ``put`` alone (the MCP boundary): in a store whose blind puts have so far written new
   artifacts (a conditional ``PutObject``, refused, then ``HeadObject``), and in one whose
   blind puts have been refused (it looks first: ``HeadObject``); and reuse within the
   process (no call).
3. Reuse within a process, local store: the stat that checks the artifact is still there
   (a store directory removed under a running process), against the same path without it.
4. The sweep of a local store of 100,000 artifacts against listing and stat-ing the same
   directory, and the latency of requests made while it runs against requests made with
   no sweep (target: no request waits for it).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
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
ROUNDS = 60  # of the interleaved cases


def median_time(fn: Callable[[], object], *, rounds: int = 40) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(
    fns: list[Callable[[], object]], *, rounds: int = ROUNDS
) -> tuple[list[float], list[float]]:
    """Each function once per round, in turn: the median time of each, and the median of
    its per-round ratio to the first (noise on a shared machine hits a round, not a case)."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - start)
    medians = [statistics.median(t) for t in times]
    ratios = [statistics.median(a / b for a, b in zip(t, times[0])) for t in times]
    return medians, ratios


def s3_benchmarks(endpoint: str) -> None:
    os.environ.update(aws_env(endpoint))
    from botocore.exceptions import ClientError

    from budgetware.store.s3 import S3ArtifactStore

    bucket = f"bench-{uuid.uuid4().hex[:8]}"
    store = S3ArtifactStore(bucket, "artifacts", max_store_bytes=1 << 40)
    client = store.client()  # the same client (timeouts, checksum settings) for all
    client.create_bucket(Bucket=bucket)
    # A server without conditional writes, as the store meets it after its first refusal.
    unconditional = S3ArtifactStore(bucket, "old", max_store_bytes=1 << 40, client=client)
    unconditional._conditional = False
    counter = [0]

    def fresh_text() -> str:
        counter[0] += 1
        return f"{counter[0]:012d}" + "L" * (SIZE - 12)

    def ours() -> None:
        text = fresh_text()
        store.put(text, key=text_key(text))

    def ours_unconditional() -> None:
        text = fresh_text()
        unconditional.put(text, key=text_key(text))

    def raw() -> None:
        data = fresh_text().encode()
        client.put_object(Bucket=bucket, Key=f"raw/{counter[0]}", Body=data)

    def raw_conditional() -> None:
        data = fresh_text().encode()
        digest = hashlib.sha256(data)
        client.put_object(
            Bucket=bucket,
            Key=f"raw/{digest.hexdigest()}.txt",
            Body=data,
            ChecksumAlgorithm="SHA256",
            ChecksumSHA256=base64.b64encode(digest.digest()).decode(),
            IfNoneMatch="*",
        )

    config = BudgetConfig(batch_budget=10_000)

    def finalized() -> None:
        finalize_batch([ToolResult("c", "t", (fresh_text(),))], config=config, store=store)

    class Stub:
        """A client that answers at once: what budgetware itself spends on a put."""

        def put_object(self, **_: Any) -> Any:
            return {"ETag": '"stub"'}

        def get_object(self, **_: Any) -> Any:  # the store's first count: no marker
            raise ClientError({"Error": {"Code": "NoSuchKey"}}, "GetObject")

        def list_objects_v2(self, **_: Any) -> Any:  # and nothing listed
            return {}

    stubbed = S3ArtifactStore(bucket, "stub", client=Stub(), max_store_bytes=1 << 40)

    def own_work() -> None:
        text = fresh_text()
        stubbed.put(text, key=text_key(text))

    cases = [
        (raw, "put_object (baseline)"),
        (ours, "S3ArtifactStore.put, new: one conditional PUT"),
        (raw_conditional, "  put_object with If-None-Match and the SHA-256 checksum"),
        (own_work, "  budgetware's own work (a client that answers at once)"),
        (ours_unconditional, "S3ArtifactStore.put, new, no conditional writes: HEAD + PUT"),
        (finalized, "finalize_batch, new 300 KB output: HEAD + PUT"),
    ]
    try:
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

        def obstore_put() -> None:
            text = fresh_text()
            obstore.put(other, f"ob/{text[:12]}", text.encode())

        cases.append((obstore_put, "obstore.put (another library)"))
    except ImportError:
        obstore_put = None
    for fn, _ in cases:  # warm the connections (and the stores' first count)
        fn()
    drain()
    medians, ratios = interleaved([fn for fn, _ in cases])
    rows = [
        (label, f"{m * 1000:.2f} ms", f"{r:.2f}x")
        for (_, label), m, r in zip(cases, medians, ratios)
    ]
    if obstore_put is None:
        rows.append(("obstore.put (another library)", 'not installed: the "bench" extra', ""))
    print_table("1. a new 300 KB artifact, S3 (moto)", rows, ("case", "median", "ratio"))
    # Only new outputs went through it: its blind puts still start with the PUT.
    assert not store._looks_first()

    text = "R" * SIZE
    key = text_key(text)
    store.put(text, key=key)
    calls: list[str] = []
    client.meta.events.register("before-call.s3", lambda model, **_: calls.append(model.name))
    entry = [ToolResult("c", "t", (text,))]

    def new_process() -> S3ArtifactStore:
        # A store that has not seen the artifact, whose first sweep (and count) is behind
        # it: a process's one count of the prefix is not what this measures.
        other = S3ArtifactStore(bucket, "artifacts", client=client, sweep_interval=3600)
        other._next_sweep = math.inf
        return other

    def reuse_by_new_process_put() -> None:
        new_process().put(text, key=key)

    # Processes whose one blind put so far found its name taken (another process had
    # stored that output), made before the timing: one for each round, and one more.
    elsewhere = "stored by another process first " * 100
    store.put(elsewhere)

    def refused_process() -> S3ArtifactStore:
        other = new_process()
        other.put(elsewhere, key=text_key(elsewhere))  # refused (412), then verified
        assert other._looks_first()
        return other

    refused = [refused_process() for _ in range(ROUNDS + 1)]

    def reuse_by_refused_process_put() -> None:
        refused.pop().put(text, key=key)

    def reuse_by_new_process_finalizer() -> None:
        finalize_batch(entry, config=config, store=new_process())

    # A producer's preview (the MCP boundary's) of another output, with its decision.
    from budgetware.mcp.bound import bound_tool_result

    produced = {"content": [{"type": "text", "text": "P" * SIZE}]}
    preview = bound_tool_result(produced, budget=20_000, store=store).result["content"][0]
    preview_entry = [ToolResult("c", "t", (preview["text"],))]

    def preview_by_new_process_finalizer() -> None:
        (done,) = finalize_batch(preview_entry, config=config, store=new_process())
        assert done.persisted_output_files, done

    calls.clear()
    reuse_by_new_process_finalizer()
    finalizer_calls = list(calls)
    calls.clear()
    preview_by_new_process_finalizer()
    preview_calls = list(calls)
    calls.clear()
    reuse_by_new_process_put()
    put_calls = list(calls)
    calls.clear()
    reuse_by_refused_process_put()
    refused_calls = list(calls)
    (
        (head, through_finalizer, through_preview, through_put, through_refused),
        (
            _,
            finalizer_ratio,
            preview_ratio,
            put_ratio,
            refused_ratio,
        ),
    ) = interleaved(
        [
            lambda: client.head_object(Bucket=bucket, Key=f"artifacts/{key}.txt"),
            reuse_by_new_process_finalizer,
            preview_by_new_process_finalizer,
            reuse_by_new_process_put,
            reuse_by_refused_process_put,
        ],
        rounds=ROUNDS,
    )
    assert refused == [], len(refused)
    calls.clear()
    same = median_time(lambda: store.put(text, key=key), rounds=1000)
    rows = [
        ("head_object (baseline)", f"{head * 1000:.2f} ms", "1.00x", "HeadObject"),
        (
            "first time in a process, through the finalizer",
            f"{through_finalizer * 1000:.2f} ms",
            f"{finalizer_ratio:.2f}x",
            " ".join(finalizer_calls),
        ),
        (
            "a producer's preview, first time in a process, through the finalizer",
            f"{through_preview * 1000:.2f} ms",
            f"{preview_ratio:.2f}x",
            " ".join(preview_calls) + " (its decision, then its artifact)",
        ),
        (
            "first time in a process, through put (the MCP boundary)",
            f"{through_put * 1000:.2f} ms",
            f"{put_ratio:.2f}x",
            " ".join(put_calls) + " (the PUT refused: 412)",
        ),
        (
            "through put (the MCP boundary), in a store that has seen its blind puts refused",
            f"{through_refused * 1000:.2f} ms",
            f"{refused_ratio:.2f}x",
            " ".join(refused_calls) + " (no upload)",
        ),
        ("again in the process", f"{same * 1e6:.1f} us", f"{same / head:.4f}x", "none"),
    ]
    assert calls == [], calls
    print_table(
        "2. reuse of an existing 300 KB artifact, S3", rows, ("case", "median", "ratio", "calls")
    )


def local_reuse_benchmarks() -> None:
    """Reuse within a process, local store: with the stat on reuse against without it."""

    class Unchecked(LocalArtifactStore):
        """The reuse path as it was: an artifact verified once is named with no syscall."""

        def _still_there(self, key: str) -> bool:
            return True

    root = Path(tempfile.mkdtemp(prefix="budgetware-bench-reuse-"))
    try:
        checked = LocalArtifactStore(root / "checked", max_store_bytes=1 << 40)
        unchecked = Unchecked(root / "unchecked", max_store_bytes=1 << 40)
        text = "R" * SIZE
        key = text_key(text)
        config = BudgetConfig(batch_budget=10_000)
        entry = [ToolResult("c", "t", (text,))]
        for store in (checked, unchecked):
            store.put(text, key=key)
            finalize_batch(entry, config=config, store=store)
        (put_before, put_after), (_, put_ratio) = interleaved(
            [lambda: unchecked.put(text, key=key), lambda: checked.put(text, key=key)],
            rounds=2000,
        )

        def turn(store: LocalArtifactStore) -> Callable[[], object]:
            # A new request re-sending the output: a new string (JSON decoding makes one).
            return lambda: finalize_batch(
                [ToolResult("c", "t", ("R" * SIZE,))], config=config, store=store
            )

        (turn_before, turn_after), (_, turn_ratio) = interleaved(
            [turn(unchecked), turn(checked)], rounds=200
        )
        rows = [
            ("put of a verified artifact, no check (before)", f"{put_before * 1e6:.2f} us", ""),
            (
                "  the same with the stat (after)",
                f"{put_after * 1e6:.2f} us",
                f"{put_ratio:.2f}x",
            ),
            (
                "finalize_batch re-sending a 300 KB output, no check (before)",
                f"{turn_before * 1000:.3f} ms",
                "",
            ),
            (
                "  the same with the stat (after)",
                f"{turn_after * 1000:.3f} ms",
                f"{turn_ratio:.3f}x",
            ),
        ]
        print_table("3. reuse within a process, local store", rows, ("case", "median", "ratio"))
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
            drained = threading.Event()
            sweeper.submit("benchmark drain", drained.set)
            drained.wait()
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
        due = LocalArtifactStore(root / "due", sweep_interval=3600)
        due._next_sweep = float("inf")  # a sweep never due: the check alone
        check = min(timeit_once(due._schedule_sweep) for _ in range(1000))
        rows.append(("the request path's sweep check", f"{check * 1e9:.0f} ns", ""))
        gone_store = LocalArtifactStore(directory, max_age=30 * 86400, max_store_bytes=1 << 40)
        evict = timeit_once(gone_store.sweep)
        rows.append(("sweep deleting the half older than 30 days", f"{evict * 1000:.0f} ms", ""))
        print_table(
            f"4. the sweep, a local store of {count:,} artifacts", rows, ("case", "time", "ratio")
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
    local_reuse_benchmarks()
    count = int(os.environ.get("BENCH_STORE_ARTIFACTS", "100000"))
    if count > 0:  # 0: no sweep case (it takes minutes on a loaded machine)
        sweep_benchmarks(count)


if __name__ == "__main__":
    main()
