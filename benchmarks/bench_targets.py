"""The user-level targets, measured beside baselines of the same run.

Run: .venv/bin/python benchmarks/bench_targets.py [rounds]

1. Bounding a 10 MB tool output adds at most 100 ms, in pure Python: one chat request
   carrying one new output of each realistic kind (a ``pytest -v`` log, a service log, JSON
   documents) through ``finalize_body`` with the default settings, against one
   ``orjson.loads`` of the same body. "with its artifact" writes the full
   output to a local store, as a default install does; "in memory" has ``persist`` off (the
   bounding alone). Every round's output is new (one field differs), so nothing is
   remembered from an earlier round.
2. An async event loop is never stalled more than 10 ms by a 4 MB MCP response: the
   longest gap of a 1 ms ticker on the loop while ``httpx2.AsyncClient`` under
   ``instrument()`` reads a 4.3 MB ``tools/call`` answer (JSON, then one server-sent
   event), against the same client without budgetware (``bench_loop_lag.py``). Requests
   during which the process ran a full garbage collection are shown apart: it stops every
   thread, with or without budgetware. The loop
   waits for the worker's GIL at most the switch interval (5 ms) plus the worker's longest
   single C call, reported too (CPU time of the call: on a shared machine the ticker's
   gaps are mostly other processes').
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx2
import orjson
from _harness import print_table
from bench_loop_lag import (
    BODY,
    CALL,
    DOC_BODY,
    FULL_COLLECTIONS,
    HEADERS,
    lag_cases,
    lags,
    serve,
    stats,
)
from bench_preview import _log, _pytest_log

from budgetware.core.config import BudgetConfig
from budgetware.http.hooks import rewrite_response
from budgetware.wire.body import finalize_body

URL = "https://api.openai.com/v1/chat/completions"
MB = 1024 * 1024
ROUNDS = 7
MARK = "#000000"


def outputs() -> dict[str, str]:
    """The 10 MB outputs, each holding ``MARK`` once (made new every round)."""
    rng = random.Random(1)
    return {
        "pytest -v log, 10 MB": f"run {MARK}\n" + _pytest_log(10 * MB),
        "service log, 10 MB": f"run {MARK}\n" + _log(10 * MB),
        "JSON: 42,000 API objects, indented": _listing(),
        "JSON: 100,000 rows x 10 floats": json.dumps(
            {
                "run": MARK,
                "series": [
                    [round(rng.uniform(-1000, 1000), 4) for _ in range(10)] for _ in range(100_000)
                ],
            }
        ),
        "JSON: 500,000 floats from json.dumps": json.dumps(
            {"run": MARK, "embedding": [rng.gauss(0, 0.05) for _ in range(500_000)]}
        ),
        # Non-ASCII, which json.dumps escapes (\u00e9): the parts shown are respelled.
        "JSON: 42,000 API objects, escaped": _listing("itém"),
        # NaN, which msgspec refuses: over 4 MiB such a document gets the text forms.
        "JSON: 42,000 API objects with a NaN": _listing(nan=float("nan")),
    }


def _listing(word: str = "item", **members: Any) -> str:
    """42,000 API objects named with ``word``, indented, after the run and ``members``."""
    data = [
        {"id": i, "name": f"{word} {i}", "tags": ["a", "b"], "text": "lorem ipsum " * 10}
        for i in range(42_000)
    ]
    return json.dumps({"run": MARK, **members, "data": data}, indent=1)


def chat(text: str) -> bytes:
    return orjson.dumps(
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "user", "content": "Why does it fail?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "shell", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": text},
            ],
        }
    )


def bounding(rounds: int) -> None:
    directory = Path(tempfile.mkdtemp(prefix="budgetware-bench-targets-"))
    stored = BudgetConfig(artifact_dir=directory, max_store_bytes=1 << 36)
    memory = BudgetConfig(persist=False)
    serial = iter(range(1, 1 << 30))
    rows = []
    try:
        for name, text in outputs().items():

            def body(text: str = text) -> bytes:
                return chat(text.replace(MARK, f"#{next(serial):06d}", 1))

            def bound(config: BudgetConfig, text: str = text) -> Callable[[], object]:
                data = body(text)
                return lambda: finalize_body(URL, data, config=config)

            sample = body()
            assert finalize_body(URL, sample, config=memory) != sample  # it is bounded
            cases: dict[str, Callable[[], Callable[[], object]]] = {
                "loads": lambda sample=sample: partial(orjson.loads, sample),  # type: ignore[misc]
                "stored": partial(bound, stored),
                "memory": partial(bound, memory),
            }
            wall: dict[str, list[float]] = {case: [] for case in cases}
            cpu: dict[str, list[float]] = {case: [] for case in cases}
            for _ in range(rounds):
                for case, make in cases.items():
                    run = make()  # untimed: the body of a new output
                    start, start_cpu = time.perf_counter(), time.process_time()
                    run()
                    cpu[case].append(time.process_time() - start_cpu)
                    wall[case].append(time.perf_counter() - start)
            rows.append(
                (
                    f"{name} ({len(sample) / 1e6:.1f} MB body)",
                    *(_ms(cpu[case], wall[case]) for case in cases),
                )
            )
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print_table(
        "finalize_body of one request carrying a new 10 MB output (target: adds at most "
        f"100 ms in pure Python); CPU time of the process, then wall time, medians of {rounds} "
        "interleaved rounds",
        rows,
        ("output", "orjson.loads of the body", "with its artifact", "in memory"),
    )


def _ms(cpu: list[float], wall: list[float]) -> str:
    return f"{statistics.median(cpu) * 1e3:.0f} ms / {statistics.median(wall) * 1e3:.0f} ms"


# C functions that release the GIL while they run (writing, hashing): not a stall.
_RELEASING = frozenset({"write", "fsync", "update", "sleep"})


def longest_call(path: str, config: BudgetConfig, serial: int) -> tuple[float, str]:
    """The longest single C call (its CPU time) of one rewrite of the answer at ``path``,
    and its name; calls that run Python inside them are not single calls."""
    sse = path == "/sse"
    body = (DOC_BODY if path == "/doc" else BODY).replace(b"#000000", b"#%06d" % serial, 1)
    if sse:
        body = b"event: message\r\ndata: " + body + b"\r\n\r\n"
    kind = "text/event-stream" if sse else "application/json"
    request = httpx2.Request("POST", "http://mcp.test/mcp", json=CALL, headers=HEADERS)
    response = httpx2.Response(200, headers={"content-type": kind}, content=body, request=request)
    open_calls: list[list[Any]] = []
    longest = (0.0, "")

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal longest
        if event == "c_call":
            open_calls.append([time.thread_time(), arg, False])
        elif event == "call":
            for call in open_calls:
                call[2] = True
        elif event in ("c_return", "c_exception") and open_calls:
            start, function, nested = open_calls.pop()
            name = getattr(function, "__qualname__", str(function))
            spent = time.thread_time() - start
            if not nested and name.rsplit(".", 1)[-1] not in _RELEASING and spent > longest[0]:
                longest = (spent, name)

    sys.setprofile(profile)
    try:
        new = rewrite_response(request, response, config)
    finally:
        sys.setprofile(None)
    assert len(new.content) < len(body)
    return longest


def loop_stall(rounds: int) -> None:
    server = serve()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    directory = Path(tempfile.mkdtemp(prefix="budgetware-bench-targets-"))
    config = BudgetConfig(artifact_dir=directory, max_store_bytes=1 << 36)
    cases = lag_cases(config)
    rows = []
    try:
        answers = (
            ("JSON", "/mcp"),
            ("one server-sent event", "/sse"),
            ("JSON, its text a JSON document", "/doc"),
        )
        for answer, path in answers:
            results = asyncio.run(lags(base_url + path, cases, rounds))
            base = stats(results["without budgetware"])
            for name, values in results.items():
                row = stats(values)
                added = ("", "")
                if name != "without budgetware":
                    added = tuple(f"{(v - b) * 1e3:+.1f} ms" for v, b in zip(row[::2], base[::2]))
                rows.append((answer, name, *(f"{v * 1e3:.1f} ms" for v in row), *added))
            for name, values in FULL_COLLECTIONS.items():  # the process's pause, not ours
                label = f"{name}: {len(values)} request(s) with a full collection, left out above"
                rows.append((answer, label, "", "", f"{max(values) * 1e3:.1f} ms", "", ""))
            calls = [longest_call(path, config, n) for n in range(1, 8)]
            spent, function = max(calls)
            rows.append(
                (
                    answer,
                    f"bounded: its longest C call ({function}, CPU time)",
                    "",
                    "",
                    f"{spent * 1e3:.1f} ms",
                    "",
                    "",
                )
            )
    finally:
        server.shutdown()
        shutil.rmtree(directory, ignore_errors=True)
    print_table(
        f"longest ticker gap on the loop per request, {len(DOC_BODY) / 1e6:.1f} to "
        f"{len(BODY) / 1e6:.1f} MB tools/call answers "
        f"(target: never more than 10 ms); {rounds} rounds interleaved",
        rows,
        ("answer", "case", "median", "p99", "max", "added median", "added max"),
    )


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS
    bounding(rounds)
    loop_stall(max(rounds, 30))


if __name__ == "__main__":
    main()
