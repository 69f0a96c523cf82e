"""Telemetry on does the plain path's work and no more (issue 16): the same wire-format
look-ups, parses, hashes and splices of a body, plus the counting and the reporting.

Each heavy step is wrapped by a counter that calls the real function (nothing is faked);
the plain path runs first once, so both counted runs reuse the same artifacts.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from budgetware.core import observe
from budgetware.core.config import BudgetConfig
from budgetware.core.observe import RequestReport
from budgetware.http.transport import BudgetTransport
from budgetware.wire import body as wire_body
from budgetware.wire import detect
from budgetware.wire.body import finalize_body, observed_finalize_body

from .test_otel import Telemetry, chat_body, telemetry

__all__ = ["telemetry"]  # test_otel's fixture: telemetry on, read by in-memory exporters

BUDGET = 50_000
URL = "https://api.example/v1/chat/completions"


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each heavy step ran: ``detect`` (a wire-format look-up), ``parse``,
    ``hash`` and ``splice``."""
    counted: Counter[str] = Counter()

    def wrap(owner: Any, name: str, step: str) -> None:
        real: Callable[..., Any] = getattr(owner, name)

        def counting(*args: Any, **kwargs: Any) -> Any:
            counted[step] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, counting)

    wrap(detect, "format_for_url", "detect")
    wrap(wire_body, "format_for_url", "detect")
    wrap(detect, "sniff_format", "detect")
    wrap(detect, "loads", "parse")
    wrap(hashlib, "sha256", "hash")
    wrap(wire_body, "replace_values", "splice")
    return counted


def _work(counts: Counter[str], run: Callable[[], bytes]) -> tuple[bytes, Counter[str]]:
    counts.clear()
    out = run()
    return out, Counter(counts)


def _config(tmp_path: Path, **settings: Any) -> BudgetConfig:
    return BudgetConfig(batch_budget=BUDGET, artifact_dir=str(tmp_path), **settings)


@pytest.mark.parametrize(
    ("url", "settings"),
    [
        (URL, {}),
        # an endpoint whose body shape decides: the shape found is the one reported
        ("https://gateway.example/llm", {"sniff_unknown_endpoints": True}),
    ],
    ids=["known-endpoint", "sniffed-endpoint"],
)
def test_a_bounded_body_costs_what_the_plain_path_costs(
    counts: Counter[str], tmp_path: Path, url: str, settings: dict[str, Any]
) -> None:
    config = _config(tmp_path, **settings)
    body = chat_body(3, 80_000)
    finalize_body(url, body, config=config)  # the artifacts exist from now on
    plain, plain_work = _work(counts, lambda: finalize_body(url, body, config=config))
    reports: list[RequestReport] = []

    def observed() -> bytes:
        new_body, report = observed_finalize_body(url, body, config=config)
        reports.append(report)
        return new_body

    new_body, observed_work = _work(counts, observed)
    assert plain != body
    assert new_body == plain
    assert plain_work["parse"] == 1
    assert plain_work["hash"] >= 3
    assert plain_work["splice"] == 1
    assert observed_work == plain_work
    (report,) = reports
    # Counted while bounding had the entries at hand, not later by a subscriber.
    assert [vars(batch).get("cut") for batch in report.batches] == [3]
    counts.clear()
    assert report.api == "openai_chat"  # known where the body was read: no look-up now
    assert report.results_cut == 3
    assert report.bytes_after == len(plain)
    assert not counts


def test_a_body_it_does_not_read_is_not_even_looked_up(
    counts: Counter[str], tmp_path: Path
) -> None:
    config = _config(tmp_path)
    body = chat_body(2, 100)  # under budget: the plain path does nothing at all
    assert finalize_body(URL, body, config=config) is body
    new_body, report = observed_finalize_body(URL, body, config=config)
    assert new_body is body
    assert not counts
    # The wire format is still there for whoever asks (the pytest plugin, a DEBUG line):
    # looked up once, then kept.
    assert report.api == "openai_chat"
    assert report.api == "openai_chat"
    assert counts == Counter(detect=1)
    assert "api='openai_chat'" in repr(report)


def test_a_signed_body_left_whole_reports_its_format_on_demand(
    counts: Counter[str], tmp_path: Path
) -> None:
    headers = {"authorization": "AWS4-HMAC-SHA256 Credential=x", "x-amz-date": "20260101T0Z"}
    url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse"
    body = json.dumps({"messages": [{"role": "user", "content": [{"text": "x" * 60_000}]}]})
    new_body, report = observed_finalize_body(
        url, body.encode(), headers=headers, config=_config(tmp_path)
    )
    assert new_body == body.encode()
    assert not counts
    assert report.api == "bedrock_converse"


def test_telemetry_on_a_small_request_adds_no_look_up(
    telemetry: Telemetry, counts: Counter[str], tmp_path: Path
) -> None:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    transport = BudgetTransport(
        httpx.MockTransport(lambda request: httpx.Response(200, json={"ok": True})),
        config=_config(tmp_path),
    )
    assert observe.watching()
    body = chat_body(2, 100)
    with (
        httpx.Client(transport=transport) as client,
        tracer_provider.get_tracer("agent").start_as_current_span("turn"),
    ):
        response = client.post(URL, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200
    # The span got its sizes with nothing looked up; the response's API is, once: only a
    # model call's usage is read.
    assert counts == Counter(detect=1)
    (span,) = spans.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert attributes["budgetware.body.bytes_before"] == len(body)
    assert attributes["budgetware.body.bytes_after"] == len(body)
    assert attributes["budgetware.tool_results.cut"] == 0
    assert telemetry.total("budgetware.requests.bounded") == 0
    assert "budgetware.bounding.duration" not in telemetry.metrics()


def test_a_report_takes_its_format_as_a_function_called_once() -> None:
    calls: list[int] = []

    def look_up() -> str:
        calls.append(1)
        return "gemini"

    report = RequestReport(look_up, 10, 10, 5, "utf8_bytes", 0.0)
    assert not calls
    assert (report.api, report.api) == ("gemini", "gemini")
    assert calls == [1]
    with pytest.raises(AttributeError, match="cannot assign"):
        report.bytes_after = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        report._api = "x"  # type: ignore[misc]
    assert type(report) is RequestReport
    assert isinstance(report, RequestReport)


@pytest.fixture
def payload_counts(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """``bound_payload``'s heavy steps: ``encode`` (the payload written as JSON to measure
    it), ``detect`` and ``hash``."""
    from budgetware.wire import body as wire_body
    from budgetware.wire import payload as wire_payload

    counted: Counter[str] = Counter()
    for owner, name, step in (
        (wire_payload, "dumps_bytes", "encode"),
        (wire_payload, "format_for_url", "detect"),
        (wire_body, "format_for_url", "detect"),  # the report's format, looked up late
        (wire_payload, "sniff_format", "detect"),
        (hashlib, "sha256", "hash"),
    ):
        real: Callable[..., Any] = getattr(owner, name)

        def counting(*args: Any, _real: Any = real, _step: str = step, **kwargs: Any) -> Any:
            counted[_step] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(owner, name, counting)
    return counted


@pytest.mark.parametrize("size", [80_000, 100], ids=["bounded", "within-budget"])
def test_bound_payload_observed_measures_the_payload_once(
    payload_counts: Counter[str], tmp_path: Path, size: int
) -> None:
    from budgetware.wire.payload import bound_payload

    config = _config(tmp_path)
    payload = json.loads(chat_body(3, size))
    bound_payload(URL, payload, config=config)  # the artifacts exist from now on
    payload_counts.clear()
    plain = bound_payload(URL, payload, config=config)
    plain_work = Counter(payload_counts)
    reports: list[RequestReport] = []
    payload_counts.clear()
    with observe.subscribe(request=reports.append):
        observed = bound_payload(URL, payload, config=config)
    assert observed == plain
    assert plain_work["encode"] == 1
    bounded = plain is not payload
    assert bounded is (size > 1_000)
    # The same work, plus measuring the new payload when there is one (never the old again).
    assert payload_counts == plain_work + Counter(encode=1 if bounded else 0)
    (report,) = reports
    payload_counts.clear()
    assert report.api == "openai_chat"
    assert report.bytes_before == len(json.dumps(payload, separators=(",", ":")))
    assert report.bytes_after == len(json.dumps(plain, separators=(",", ":")))
    assert report.results_cut == (3 if bounded else 0)
    assert payload_counts == Counter(detect=0 if bounded else 1)


def test_a_format_looked_up_later_keeps_no_query_of_the_url(tmp_path: Path) -> None:
    url = "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?key=SECRET"
    _, report = observed_finalize_body(url, b'{"contents": []}', config=_config(tmp_path))
    pending = report._api  # what the report holds until someone asks for the format
    assert callable(pending)
    assert "SECRET" not in repr(pending)
    assert report.api == "gemini"
