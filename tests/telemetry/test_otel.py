"""OpenTelemetry: metrics and span attributes with the real SDK, the real httpx
instrumentation, and an exporter that fails."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from budgetware.core.config import BudgetConfig
from budgetware.http.instrument import instrument
from budgetware.http.transport import BudgetTransport
from budgetware.telemetry import otel
from budgetware.testing import FakeProvider

BUDGET = 50_000


def chat_body(count: int = 10, size: int = 300_000) -> bytes:
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


class Telemetry:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def metrics(self) -> dict[str, list[Any]]:
        data = self.reader.get_metrics_data()
        found: dict[str, list[Any]] = {}
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    found[metric.name] = list(metric.data.data_points)
        return found

    def total(self, name: str) -> int:
        return int(sum(point.value for point in self.metrics().get(name, [])))


@pytest.fixture
def telemetry(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[Telemetry]:
    monkeypatch.setenv("BUDGETWARE_TELEMETRY", "1")
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", str(tmp_path))
    t = Telemetry()
    assert otel.enable(meter_provider=t.meter_provider)
    try:
        yield t
    finally:
        otel.disable()
        t.meter_provider.shutdown()


@pytest.fixture
def httpx_spans(telemetry: Telemetry) -> Iterator[Telemetry]:
    instrumentor = HTTPXClientInstrumentor()
    instrumentor.instrument(tracer_provider=telemetry.tracer_provider)
    try:
        yield telemetry
    finally:
        instrumentor.uninstrument()


def _post(client: httpx.Client, url: str, body: bytes) -> httpx.Response:
    return client.post(
        url + "/v1/chat/completions", content=body, headers={"content-type": "application/json"}
    )


def test_the_httpx_client_span_carries_sizes_and_counts(
    httpx_spans: Telemetry, fake_provider: FakeProvider
) -> None:
    body = chat_body()
    with instrument(config=BudgetConfig(batch_budget=BUDGET)), httpx.Client() as client:
        assert _post(client, fake_provider.url, body).status_code == 200
    (span,) = httpx_spans.spans.get_finished_spans()
    attributes = dict(span.attributes or {})
    sent = len(fake_provider.last.body)
    assert {k: v for k, v in attributes.items() if k.startswith("budgetware.")} == {
        "budgetware.batch_budget": BUDGET,
        "budgetware.body.bytes_before": len(body),
        "budgetware.body.bytes_after": sent,
        "budgetware.tool_results.cut": 10,
        "budgetware.artifacts.written": 10,
    }
    assert attributes.get("http.request.method", attributes.get("http.method")) == "POST"
    metrics = httpx_spans.metrics()
    assert httpx_spans.total("budgetware.requests.bounded") == 1
    assert httpx_spans.total("budgetware.tool_results.cut") == 10
    assert httpx_spans.total("budgetware.bytes.saved") == len(body) - sent
    (duration,) = metrics["budgetware.bounding.duration"]
    assert duration.count == 1
    assert duration.sum > 0
    point = metrics["budgetware.requests.bounded"][0]
    assert dict(point.attributes) == {"budgetware.api": "openai_chat", "budgetware.entry": "http"}


def test_the_span_says_what_the_history_budget_masked(
    httpx_spans: Telemetry, fake_provider: FakeProvider
) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for turn in range(6):
        call = {
            "id": f"c{turn}",
            "type": "function",
            "function": {"name": "sh", "arguments": "{}"},
        }
        messages.append({"role": "assistant", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{turn}", "content": "y" * 20_000})
    body = json.dumps({"model": "m", "messages": messages}).encode()
    config = BudgetConfig(batch_budget=BUDGET, history_budget=60_000)
    with instrument(config=config), httpx.Client() as client:
        assert _post(client, fake_provider.url, body).status_code == 200
    (span,) = httpx_spans.spans.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert attributes["budgetware.history.budget"] == 60_000
    assert attributes["budgetware.history.masked"] == 4  # all but the newest two
    assert attributes["budgetware.history.new_step"] is True


async def test_the_async_httpx_client_span(
    httpx_spans: Telemetry, fake_provider: FakeProvider
) -> None:
    with instrument(config=BudgetConfig(batch_budget=BUDGET)):
        async with httpx.AsyncClient() as client:
            response = await client.post(
                fake_provider.url + "/v1/chat/completions",
                content=chat_body(3),
                headers={"content-type": "application/json"},
            )
    assert response.status_code == 200
    (span,) = httpx_spans.spans.get_finished_spans()
    assert (span.attributes or {})["budgetware.tool_results.cut"] == 3


def test_the_users_own_span_when_no_http_instrumentation(
    telemetry: Telemetry, fake_provider: FakeProvider
) -> None:
    tracer = telemetry.tracer_provider.get_tracer("my-agent")
    transport = BudgetTransport(httpx.HTTPTransport(), config=BudgetConfig(batch_budget=BUDGET))
    with tracer.start_as_current_span("agent turn"), httpx.Client(transport=transport) as client:
        _post(client, fake_provider.url, chat_body(2))
    (span,) = telemetry.spans.get_finished_spans()
    assert span.name == "agent turn"
    assert (span.attributes or {})["budgetware.tool_results.cut"] == 2


def test_a_request_within_budget_is_seen_but_not_counted_as_bounded(
    httpx_spans: Telemetry, fake_provider: FakeProvider
) -> None:
    body = chat_body(2, 100)
    with instrument(config=BudgetConfig(batch_budget=BUDGET)), httpx.Client() as client:
        _post(client, fake_provider.url, body)
    (span,) = httpx_spans.spans.get_finished_spans()
    attributes = span.attributes or {}
    assert attributes["budgetware.body.bytes_after"] == attributes["budgetware.body.bytes_before"]
    assert attributes["budgetware.tool_results.cut"] == 0
    assert httpx_spans.total("budgetware.requests.bounded") == 0


def test_no_content_no_paths_no_identifiers(
    httpx_spans: Telemetry, fake_provider: FakeProvider, tmp_path: Any
) -> None:
    with instrument(config=BudgetConfig(batch_budget=BUDGET)), httpx.Client() as client:
        _post(client, fake_provider.url, chat_body(3))
    (span,) = httpx_spans.spans.get_finished_spans()
    ours = {k: v for k, v in (span.attributes or {}).items() if k.startswith("budgetware.")}
    assert all(isinstance(v, int) for v in ours.values())
    exported = json.dumps(
        [dict(p.attributes) for points in httpx_spans.metrics().values() for p in points]
    )
    assert str(tmp_path) not in exported
    assert "xxxx" not in exported
    assert "c0" not in exported


def test_the_telemetry_setting_turns_it_off_per_request(
    httpx_spans: Telemetry, fake_provider: FakeProvider
) -> None:
    config = BudgetConfig(batch_budget=BUDGET, telemetry=False)
    with instrument(config=config), httpx.Client() as client:
        _post(client, fake_provider.url, chat_body(2))
    (span,) = httpx_spans.spans.get_finished_spans()
    assert not any(k.startswith("budgetware.") for k in span.attributes or {})
    assert httpx_spans.total("budgetware.requests.bounded") == 0


class _Broken(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        raise RuntimeError("collector down")

    def shutdown(self) -> None:
        pass


def test_an_exporter_that_raises_never_breaks_the_request(
    telemetry: Telemetry, fake_provider: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Broken()))
    instrumentor = HTTPXClientInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    caplog.set_level(logging.CRITICAL, logger="opentelemetry")
    try:
        with instrument(config=BudgetConfig(batch_budget=BUDGET)), httpx.Client() as client:
            assert _post(client, fake_provider.url, chat_body(3)).status_code == 200
    finally:
        instrumentor.uninstrument()
    assert telemetry.total("budgetware.tool_results.cut") == 3


def test_an_sdk_that_raises_in_budgetwares_own_calls_never_breaks_the_request(
    telemetry: Telemetry,
    fake_provider: FakeProvider,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(self: Any, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("exporter queue full")

    # The span attributes and the histogram's record both raise; the counters still count.
    from opentelemetry.sdk.metrics._internal.instrument import _Histogram
    from opentelemetry.sdk.trace import Span

    monkeypatch.setattr(Span, "set_attributes", broken)
    monkeypatch.setattr(_Histogram, "record", broken)
    monkeypatch.setattr(otel, "_failed_types", set())
    caplog.set_level(logging.WARNING, logger="budgetware")
    tracer = telemetry.tracer_provider.get_tracer("agent")
    transport = BudgetTransport(httpx.HTTPTransport(), config=BudgetConfig(batch_budget=BUDGET))
    with httpx.Client(transport=transport) as client, tracer.start_as_current_span("turn"):
        for _ in range(2):
            assert _post(client, fake_provider.url, chat_body(2)).status_code == 200
    assert len(json.loads(fake_provider.last.body)["messages"]) == 4
    # The counters report, the histogram's failure is logged once.
    assert telemetry.total("budgetware.tool_results.cut") == 4
    assert "budgetware.bounding.duration" not in telemetry.metrics()
    warnings = [r.getMessage() for r in caplog.records if r.name == "budgetware"]
    assert warnings == [
        "budgetware could not report to OpenTelemetry (RuntimeError); requests go on"
    ]


@pytest.fixture
def histogram_records(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, dict[str, Any]]]:
    """Every record the SDK's histograms get (each also recorded for real)."""
    from opentelemetry.sdk.metrics._internal.instrument import _Histogram

    records: list[tuple[float, dict[str, Any]]] = []
    real = _Histogram.record

    def record(self: Any, amount: float, attributes: Any = None, *args: Any) -> None:
        records.append((amount, dict(attributes or {})))
        real(self, amount, attributes, *args)

    monkeypatch.setattr(_Histogram, "record", record)
    return records


def test_the_bounding_time_is_recorded_per_request_with_its_labels(
    telemetry: Telemetry,
    fake_provider: FakeProvider,
    histogram_records: list[tuple[float, dict[str, Any]]],
) -> None:
    transport = BudgetTransport(httpx.HTTPTransport(), config=BudgetConfig(batch_budget=BUDGET))
    with httpx.Client(transport=transport) as client:
        for _ in range(2):
            assert _post(client, fake_provider.url, chat_body(2)).status_code == 200
    (duration,) = telemetry.metrics()["budgetware.bounding.duration"]
    assert duration.count == 2
    assert dict(duration.attributes) == {
        "budgetware.api": "openai_chat",
        "budgetware.entry": "http",
    }
    assert [attributes for _, attributes in histogram_records] == [dict(duration.attributes)] * 2
    assert duration.sum == pytest.approx(sum(amount for amount, _ in histogram_records))
    assert all(amount > 0 for amount, _ in histogram_records)


ENTRY_POINTS = {
    "instrument": "budgetware.instrument()",
    "transport": "budgetware.BudgetTransport(httpx.MockTransport(lambda r: None))",
    "bound_payload": (
        "import budgetware.finalizer\n"
        "budgetware.finalizer.bound_payload('https://api.openai.com/v1/chat/completions', {})"
    ),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_the_first_entry_point_turns_it_on_when_the_api_is_installed(entry: str) -> None:
    # import budgetware alone loads nothing of it (the CLI and `budgetware run` stay cheap).
    code = (
        "import os, sys; os.environ.pop('BUDGETWARE_TELEMETRY', None)\n"
        "import httpx, budgetware\n"
        "from budgetware.core import observe\n"
        "print('budgetware.telemetry.otel' in sys.modules, observe.requests_watched)\n"
        f"{ENTRY_POINTS[entry]}\n"
        "from budgetware.telemetry import otel\n"
        "print(otel.enabled(), observe.requests_watched)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["False False", "True True"]


def test_nothing_when_opentelemetry_is_absent() -> None:
    code = """
import importlib.abc, os, sys
os.environ.pop("BUDGETWARE_TELEMETRY", None)

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ModuleNotFoundError(name)
        return None

sys.meta_path.insert(0, NotInstalled())
import budgetware
budgetware.instrument()
from budgetware.telemetry import otel
from budgetware.core import observe
print(otel.enabled(), otel.enable(), observe.requests_watched)
print([m for m in sys.modules if m.startswith("opentelemetry")])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["False False False", "[]"]


def test_no_subscriber_when_telemetry_is_off_by_environment() -> None:
    code = (
        "import os; os.environ['BUDGETWARE_TELEMETRY'] = 'off'\n"
        "import budgetware\n"
        "budgetware.instrument()\n"
        "from budgetware.core import observe\n"
        "print(observe.requests_watched)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.sdk
def test_the_providers_input_tokens_and_cache_counters_are_counted(
    telemetry: Telemetry, fake_provider: FakeProvider
) -> None:
    import anthropic

    system = [{"type": "text", "text": "x " * 3000, "cache_control": {"type": "ephemeral"}}]
    with (
        instrument(config=BudgetConfig(batch_budget=BUDGET)),
        anthropic.Anthropic(base_url=fake_provider.url, api_key="k", max_retries=0) as client,
    ):
        for _ in range(2):
            client.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=9,
                system=system,  # type: ignore[arg-type]
                messages=[{"role": "user", "content": "hi"}],
            )
    first, second = (request.usage for request in fake_provider.requests)
    assert first is not None
    assert second is not None
    assert telemetry.total("budgetware.provider.input_tokens") == 2 * first.input_tokens
    assert (
        telemetry.total("budgetware.provider.cache_read.input_tokens") == second.cache_read_tokens
    )
    written = telemetry.total("budgetware.provider.cache_creation.input_tokens")
    assert written == first.cache_write_tokens > 0
    (point,) = telemetry.metrics()["budgetware.provider.input_tokens"]
    assert dict(point.attributes) == {
        "budgetware.api": "anthropic_messages",
        "budgetware.entry": "http",
    }
