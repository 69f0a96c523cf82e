"""Event-loop lag while a large non-streamed MCP response is bounded (async, instrument()).

Run: .venv/bin/python benchmarks/bench_loop_lag.py
A ticker task sleeps 1 ms in a loop beside the client and records how late it wakes up.
The baseline is the same client without budgetware in the same run: reading a 4.3 MB JSON
response costs the loop something by itself. Bounding the tools/call result in it parses
4.3 MB, cuts it, hashes and writes (and fsyncs) a new artifact: on the loop that stalls
every other task;
off the loop (a worker thread, as for request bodies over 1 MiB) it must add under 10 ms.
The salient-line scan of the 4.3 MB text runs in newline-aligned pieces, so the worker lets
the loop run between them; with budgetware[fast] installed it is measured both with the
accelerator and in pure re.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx2
from _harness import print_table

from budgetware.core import salient
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
ROUNDS = 15


def serve() -> ThreadingHTTPServer:
    count = itertools.count()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            # Every result is new output (as a tool's usually is): its artifact is written.
            body = BODY.replace(b"#000000", b"#%06d" % next(count), 1)
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def lags(url: str) -> list[float]:
    """The worst ticker lag during each of ROUNDS requests, in seconds."""
    worst = 0.0
    stop = False

    async def ticker() -> None:
        nonlocal worst
        while not stop:
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            worst = max(worst, time.perf_counter() - start - 0.001)

    task = asyncio.create_task(ticker())
    out = []
    async with httpx2.AsyncClient() as client:
        await client.post(url, json=CALL, headers=HEADERS)  # warm up: the connection
        for _ in range(ROUNDS):
            await asyncio.sleep(0.01)
            worst = 0.0
            await client.post(url, json=CALL, headers=HEADERS)
            await asyncio.sleep(0.005)  # the ticker records a stall once it runs again
            out.append(worst)
    stop = True
    await task
    return out


def main() -> None:
    server = serve()
    url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
    directory = Path(tempfile.mkdtemp(prefix="budgetware-bench-lag-"))
    config = BudgetConfig(artifact_dir=directory)
    rows = []
    try:
        base = asyncio.run(lags(url))
        fast = salient.accelerator() is not None
        cases = [
            ("bounded on the loop (before)", 1 << 62, fast),
            (
                "bounded off the loop"
                + (" (salient scan: budgetware[fast])" if fast else " (pure re scan)"),
                None,
                fast,
            ),
        ]
        if fast:
            cases.append(("bounded off the loop (pure re scan)", None, False))
        results = {"without budgetware": base}
        for name, threshold, accelerated in cases:
            saved = transport.OFFLOAD_BYTES, list(salient._ACCELERATOR)
            if threshold is not None:
                transport.OFFLOAD_BYTES = threshold
            if not accelerated:
                salient._ACCELERATOR[:] = [None]
            try:
                with instrument(config=config):
                    results[name] = asyncio.run(lags(url))
            finally:
                transport.OFFLOAD_BYTES = saved[0]
                salient._ACCELERATOR[:] = saved[1]
        base_median = statistics.median(base)
        for name, values in results.items():
            median = statistics.median(values)
            rows.append(
                (
                    name,
                    f"{median * 1e3:.1f} ms",
                    f"{max(values) * 1e3:.1f} ms",
                    f"{(median - base_median) * 1e3:+.1f} ms",
                )
            )
    finally:
        server.shutdown()
        shutil.rmtree(directory, ignore_errors=True)
    print_table(
        f"loop lag per request, {len(BODY) / 1e6:.1f} MB JSON tools/call response, "
        f"AsyncClient.post under instrument(), {ROUNDS} rounds",
        rows,
        ("case", "median worst lag", "max", "added (median)"),
    )


if __name__ == "__main__":
    main()
