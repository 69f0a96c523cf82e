"""OpenTelemetry on against off: the cost of reporting a request, end to end.

No target of its own: what reporting adds to a request, in microseconds, beside the request.

Method: the same request through ``BudgetTransport`` over an in-memory transport (no
network), with telemetry off (nothing subscribed: the request builds no report) and on
(budgetware's OpenTelemetry subscriber with the real SDK: a MeterProvider with an
in-memory reader, inside a recording span of an SDK TracerProvider, so every metric and
span attribute is really recorded). The two are interleaved round by round in alternating
order; the figure is the median over rounds of the paired ratio (on / off), with an A/A
row (off against itself) for the noise floor.

The end-to-end ratio sits inside that noise on this machine, so a steadier figure comes
with it: the reporting alone (one real report of the 3 MB request handed to budgetware's
subscriber, the OpenTelemetry SDK recording it, repeated many times) divided by the
median time of the same request with telemetry off, measured in the same run.

Run: ``.venv/bin/python benchmarks/bench_telemetry.py``.
"""

from __future__ import annotations

import gc
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from _harness import print_table
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from budgetware.core import observe
from budgetware.core.config import BudgetConfig
from budgetware.http.transport import BudgetTransport
from budgetware.telemetry import otel

URL = "https://api.example/v1/chat/completions"


def chat_body(count: int, size: int) -> bytes:
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        for i in range(count)
    ]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": calls},
    ]
    messages += [
        {"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} " + "x" * size}
        for i in range(count)
    ]
    return json.dumps({"model": "m", "messages": messages}).encode()


def sender(body: bytes, config: BudgetConfig) -> Callable[[], object]:
    transport = BudgetTransport(
        httpx.MockTransport(lambda request: httpx.Response(200, json={"ok": True})),
        config=config,
    )
    client = httpx.Client(transport=transport)

    def send() -> object:
        return client.post(URL, content=body, headers={"content-type": "application/json"})

    return send


def compare(
    a: Callable[[], object],
    b: Callable[[], object],
    *,
    a_on: bool,
    b_on: bool,
    rounds: int,
    number: int,
    span: Any,
) -> tuple[float, float]:
    """(best seconds of a, median paired ratio a / b)."""
    a_times: list[float] = []
    b_times: list[float] = []
    gc.collect()
    gc.disable()
    try:
        for round_ in range(rounds):
            pair = [(a, a_on, a_times), (b, b_on, b_times)]
            for fn, on, times in pair if round_ % 2 == 0 else reversed(pair):
                if on:
                    otel.enable(meter_provider=METERS)
                else:
                    otel.disable()
                with span():
                    start = time.perf_counter()
                    for _ in range(number):
                        fn()
                    times.append((time.perf_counter() - start) / number)
    finally:
        gc.enable()
        otel.disable()
    ratios = [x / y for x, y in zip(a_times, b_times)]
    return min(a_times), statistics.median(ratios)


def reporting_share(send: Callable[[], object], span: Callable[[], Any]) -> tuple[float, float]:
    """Seconds to report one request, and that / seconds of the request with telemetry off."""
    captured: list[observe.RequestReport] = []
    otel.enable(meter_provider=METERS)
    try:
        with observe.subscribe(request=captured.append), span():
            send()
        report = captured[-1]
        assert report.bounded, "the 3 MB request must be bounded for this figure"
        with span():
            reporting = statistics.median(_per_call(lambda: observe.deliver_request(report)))
    finally:
        otel.disable()
    request = statistics.median(_per_call(send, number=2, rounds=51))
    return reporting, reporting / request


def _per_call(fn: Callable[[], object], number: int = 2_000, rounds: int = 21) -> list[float]:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return times


READER = InMemoryMetricReader()
METERS = MeterProvider(metric_readers=[READER])


def main(argv: list[str]) -> int:
    logging.getLogger("budgetware").setLevel(logging.WARNING)  # no INFO line: off is off
    otel.disable()
    assert not observe.watching(), "something already listens: this would not measure off"
    tracer = TracerProvider().get_tracer("bench")

    def span() -> Any:
        return tracer.start_as_current_span("agent turn")

    artifacts = tempfile.mkdtemp(prefix="budgetware-bench-telemetry-")
    config = BudgetConfig(batch_budget=200_000, artifact_dir=artifacts)
    big = sender(chat_body(10, 300_000), config)  # 3 MB, every batch over budget
    small = sender(chat_body(3, 200), config)  # 1 KB, under budget
    big()  # the artifacts exist from now on: every round reuses them
    cases = [
        ("bounded 3 MB request (10 x 300 KB)", big, 201, 2),
        ("small request (3 tool results, 1 KB)", small, 201, 200),
    ]
    rows: list[tuple[str, ...]] = []
    _, aa = compare(big, big, a_on=False, b_on=False, rounds=201, number=2, span=span)
    rows.append(("noise floor: off vs off, 3 MB", "", f"{aa:.4f}"))
    for name, fn, rounds, number in cases:
        best, ratio = compare(
            fn, fn, a_on=True, b_on=False, rounds=rounds, number=number, span=span
        )
        rows.append((name, f"{best * 1e6:,.1f} us", f"{ratio:.4f}"))
    seconds, share = reporting_share(big, span)
    rows.append(
        ("reporting alone / 3 MB request off", f"{seconds * 1e6:,.1f} us", f"{1 + share:.4f}")
    )
    assert READER.get_metrics_data() is not None  # the on rounds really recorded
    print_table(
        "telemetry on vs off (BudgetTransport, in-memory transport, real OpenTelemetry SDK)",
        rows,
        ("case", "on, best", "on / off (median)"),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
