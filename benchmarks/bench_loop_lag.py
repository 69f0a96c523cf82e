"""Event-loop lag while a large non-streamed MCP response is bounded (async, instrument()).

Run: .venv/bin/python benchmarks/bench_loop_lag.py [rounds]
A ticker task sleeps 1 ms in a loop beside the client and records how late it wakes up;
per request, the worst lateness. The baseline is the same client without budgetware in
the same run: reading a 4.3 MB JSON response costs the loop something by itself. Bounding
the tools/call result in it parses 4.3 MB, cuts it, hashes and writes a new
artifact: on the loop that stalls every other task; off the loop (a worker thread, as for
request bodies over 1 MiB) the loop waits for the GIL at most the interpreter's switch
interval (5 ms) and the longest single C call of the worker. Target: never more than 10
ms. The cases run interleaved, one request each per round, in a rotating order; "added" is
each statistic of a case minus the same statistic of the baseline. A usage listener is
subscribed while bounded (an MCP answer is no model call: its body is not read for token
counters). The same message is then measured as one server-sent event (a
text/event-stream answer).
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import multiprocessing
import multiprocessing.process
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx2
from _harness import print_table

from budgetware.core import observe
from budgetware.core.config import BudgetConfig
from budgetware.http import transport
from budgetware.http.instrument import instrument

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "dump"}}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
TEXT = "2026-11-30T10:00:00Z INFO request handled path=/api/items status=200" + " " * 31 + "\n"
BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"content": [{"type": "text", "text": "#000000 " + TEXT * 43_000}]},
    }
).encode()
# The same answer whose text is a JSON document (44,000 rows of ten numbers, as
# ``json.dumps`` writes them): its preview is JSON, read with msgspec.
_ROWS = [
    [round((i * 7919 + j * 104729) % 2_000_000 / 1e3 - 1e3, 4) for j in range(10)]
    for i in range(44_000)
]
DOC_BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "content": [{"type": "text", "text": json.dumps({"run": "#000000", "rows": _ROWS})}]
        },
    }
).encode()
ROUNDS = 40
SIZES: dict[str, bytes] = {}  # each answer's body, for its table's title


def serve() -> Served:
    """The MCP server, in a process of its own (forked), as a user's server is: its work on
    4 MB answers does not compete with the measured loop for the GIL."""
    count = itertools.count()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            # Every result is new output (as a tool's usually is): its artifact is written.
            answer = DOC_BODY if self.path.startswith("/doc") else BODY
            body = answer.replace(b"#000000", b"#%06d" % next(count), 1)
            sse = self.path.endswith("/sse")
            if sse:  # the same message as one server-sent event (a streamable HTTP server)
                body = b"event: message\r\ndata: " + body + b"\r\n\r\n"
            self.send_response(200)
            self.send_header("content-type", "text/event-stream" if sse else "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    process = multiprocessing.get_context("fork").Process(target=server.serve_forever)
    process.start()
    return Served(server, process)


class Served(NamedTuple):
    server: ThreadingHTTPServer
    process: multiprocessing.process.BaseProcess

    @property
    def server_address(self) -> Any:
        return self.server.server_address

    def shutdown(self) -> None:
        self.process.terminate()
        self.process.join()
        self.server.server_close()


@contextmanager
def case(config: BudgetConfig, *, bounded: bool, threshold: int | None) -> Iterator[None]:
    """The process set up for one case while one request is measured."""
    saved = transport.OFFLOAD_BYTES
    if threshold is not None:
        transport.OFFLOAD_BYTES = threshold
    try:
        if bounded:  # a usage listener, as telemetry subscribes one when OpenTelemetry is in
            with instrument(config=config), observe.subscribe(usage=lambda report: None):
                yield
        else:
            yield
    finally:
        transport.OFFLOAD_BYTES = saved


Case = Callable[[], AbstractContextManager[None]]


# Requests during which the process ran a full (generation 2) garbage collection: such a
# collection stops every thread for as long as it walks the whole heap (15 to 25 ms in a
# process with httpx2, pydantic and budgetware loaded), with or without budgetware.
FULL_COLLECTIONS: dict[str, list[float]] = {}


async def lags(url: str, cases: dict[str, Case], rounds: int) -> dict[str, list[float]]:
    """The worst ticker lag during each request of each case, in seconds; requests during
    which a full collection ran go to ``FULL_COLLECTIONS`` instead."""
    worst = 0.0
    stop = False
    full = 0

    def count_full(phase: str, info: dict[str, int]) -> None:
        nonlocal full
        full += phase == "start" and info["generation"] == 2

    async def ticker() -> None:
        nonlocal worst
        while not stop:
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            worst = max(worst, time.perf_counter() - start - 0.001)

    task = asyncio.create_task(ticker())
    out: dict[str, list[float]] = {name: [] for name in cases}
    FULL_COLLECTIONS.clear()
    names = list(cases)
    gc.callbacks.append(count_full)
    try:
        async with httpx2.AsyncClient() as client:
            for name in names:  # warm up: the connection, and each case's first request
                with cases[name]():
                    await client.post(url, json=CALL, headers=HEADERS)
            for round_ in range(rounds):
                turn = round_ % len(names)
                for name in names[turn:] + names[:turn]:
                    with cases[name]():
                        await asyncio.sleep(0.01)
                        worst, full = 0.0, 0
                        await client.post(url, json=CALL, headers=HEADERS)
                        await asyncio.sleep(0.005)  # the ticker records a stall once it runs
                        (FULL_COLLECTIONS.setdefault(name, []) if full else out[name]).append(
                            worst
                        )
    finally:
        gc.callbacks.remove(count_full)
    stop = True
    await task
    return out


def stats(values: list[float]) -> tuple[float, float, float]:
    """(median, p99, max) of the per-request worst lags."""
    p99 = statistics.quantiles(values, n=100, method="inclusive")[98] if values[1:] else values[0]
    return statistics.median(values), p99, max(values)


def lag_cases(config: BudgetConfig) -> dict[str, Case]:
    """The baseline (no budgetware) and the rewrite as a default install runs it."""
    return {
        "without budgetware": partial(case, config, bounded=False, threshold=None),
        "bounded off the loop": partial(case, config, bounded=True, threshold=None),
    }


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS
    server = serve()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    directory = Path(tempfile.mkdtemp(prefix="budgetware-bench-lag-"))
    # Every request writes a new 4.3 MB artifact: room for all of them (the default 500 MiB
    # quota would refuse the later ones, which then write nothing and cost less).
    config = BudgetConfig(artifact_dir=directory, max_store_bytes=1 << 36)
    cases = lag_cases(config)
    # The rewrite forced onto the loop: why a large body is bounded in a worker thread.
    cases["bounded on the loop"] = partial(case, config, bounded=True, threshold=1 << 62)
    answers = {
        "JSON": "/mcp",
        "one server-sent event (text/event-stream)": "/sse",
        "JSON, its text a JSON document of numbers": "/doc",
    }
    SIZES.update(
        {answer: DOC_BODY if path == "/doc" else BODY for answer, path in answers.items()}
    )
    tables = {}
    try:
        for answer, path in answers.items():
            tables[answer] = asyncio.run(lags(base_url + path, cases, rounds))
            for name, values in FULL_COLLECTIONS.items():  # the process's pause, not ours
                tables[answer][f"{name}, with a full collection"] = values
    finally:
        server.shutdown()
        shutil.rmtree(directory, ignore_errors=True)
    for answer, results in tables.items():
        base = stats(results["without budgetware"])
        rows = []
        for name, values in results.items():
            row = stats(values)
            rows.append(
                (
                    name,
                    *(f"{v * 1e3:.1f} ms" for v in row),
                    *(f"{(v - b) * 1e3:+.1f} ms" for v, b in zip(row, base)),
                )
            )
        print_table(
            f"loop lag per request, {len(SIZES[answer]) / 1e6:.1f} MB tools/call answer as "
            f"{answer}, "
            f"AsyncClient.post under instrument(), {rounds} rounds interleaved",
            rows,
            ("case", "median", "p99", "max", "added median", "added p99", "added max"),
        )


if __name__ == "__main__":
    main()
