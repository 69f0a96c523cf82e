"""Good neighbours: nesting restores the state before, and uninstrument() takes off only
budgetware's own layer, whatever tracing or mocking wrapped around it."""

from __future__ import annotations

import functools
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import httpx2
import pytest
import wrapt
from http_helpers import big_results, tool_result_texts
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from testing import drivers

from budgetware.core.config import BudgetConfig
from budgetware.http import instrument as _instrument
from budgetware.http.instrument import instrument, is_instrumented, uninstrument
from budgetware.testing import FakeProvider

BIG = big_results(3, 50_000)


@pytest.fixture(params=["httpx", "httpx2"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


def _config(tmp_path: Path, budget: int) -> BudgetConfig:
    return BudgetConfig(batch_budget=budget, artifact_dir=tmp_path / "artifacts")


def _sent_total(provider: FakeProvider) -> int:
    return sum(len(t) for t in tool_result_texts("openai_chat", provider.last.json()))


def _send(lib: ModuleType, provider: FakeProvider) -> None:
    body = {"model": "m", "messages": drivers.openai_chat_messages(BIG)}
    with lib.Client() as client:
        client.post(provider.url + "/v1/chat/completions", json=body)


# -- nesting ---------------------------------------------------------------------------------


def test_a_nested_instrument_block_restores_the_outer_config(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    instrument(config=_config(tmp_path, 20_000))
    with instrument(config=_config(tmp_path, 60_000)):
        _send(httpx2, fake_provider)
        assert 20_000 < _sent_total(fake_provider) <= 60_000
    assert is_instrumented()
    _send(httpx2, fake_provider)
    assert _sent_total(fake_provider) <= 20_000


def test_nested_blocks_unwind_to_uninstrumented(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    original = vars(httpx2.Client)["send"]
    with instrument(config=_config(tmp_path, 20_000)):
        with instrument():
            pass
        assert is_instrumented()
        _send(httpx2, fake_provider)
        assert _sent_total(fake_provider) <= 20_000
    assert not is_instrumented()
    assert vars(httpx2.Client)["send"] is original


# -- other wrappers on send ------------------------------------------------------------------


class Tracer:
    """What a tracing library does to ``Client.send``: a wrapt wrapper that records calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        self.calls += 1
        return wrapped(*args, **kwargs)


def test_uninstrument_keeps_a_wrapper_added_after_instrument(
    lib: ModuleType, fake_provider: FakeProvider, tmp_path: Path
) -> None:
    original = vars(lib.Client)["send"]
    instrument(config=_config(tmp_path, 20_000))
    tracer = Tracer()
    wrapt.wrap_function_wrapper(lib.Client, "send", tracer)
    try:
        uninstrument()
        traced = vars(lib.Client)["send"]
        assert isinstance(traced, wrapt.FunctionWrapper)
        assert traced.__wrapped__ is original  # budgetware's layer is gone from the chain
        _send(lib, fake_provider)
        assert tracer.calls == 1
        assert _sent_total(fake_provider) == sum(len(b) for b in BIG)  # not bounded
    finally:
        lib.Client.send = original


def test_a_plain_function_wrapper_keeps_working_and_instrument_comes_back_once(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    # Like Sentry's httpx integration: Client.send replaced by a function closing over it.
    original = vars(httpx2.Client)["send"]
    instrument(config=_config(tmp_path, 20_000))
    real_send = vars(httpx2.Client)["send"]
    calls: list[int] = []

    @functools.wraps(real_send)
    def send(self: Any, request: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real_send.__get__(self, type(self))(request, **kwargs)

    httpx2.Client.send = send  # type: ignore[method-assign]
    try:
        uninstrument()
        assert vars(httpx2.Client)["send"] is send
        _send(httpx2, fake_provider)
        assert _sent_total(fake_provider) == sum(len(b) for b in BIG)
        instrument(config=_config(tmp_path, 20_000))
        assert vars(httpx2.Client)["send"] is send  # no second layer on top
        _send(httpx2, fake_provider)
        assert _sent_total(fake_provider) <= 20_000
        assert len(calls) == 2
    finally:
        uninstrument()
        httpx2.Client.send = original  # type: ignore[method-assign]


# -- the real OpenTelemetry httpx instrumentation ---------------------------------------------


@pytest.fixture
def spans(lib: ModuleType) -> Iterator[InMemorySpanExporter]:
    from opentelemetry.instrumentation.httpx import (
        HTTPX2ClientInstrumentor,
        HTTPXClientInstrumentor,
    )

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = HTTPXClientInstrumentor() if lib is httpx else HTTPX2ClientInstrumentor()
    exporter.instrumentor = instrumentor  # type: ignore[attr-defined]
    exporter.provider = provider  # type: ignore[attr-defined]
    yield exporter
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()


def _otel_on(spans: InMemorySpanExporter) -> None:
    spans.instrumentor.instrument(tracer_provider=spans.provider)  # type: ignore[attr-defined]


# Coexistence proof: opentelemetry-instrumentation-httpx wraps the transports'
# handle_request, not Client.send, so these pass whatever uninstrument() does to send (the
# sentry-sdk tests below are the proof of where it unwraps).
@pytest.mark.parametrize("otel_first", [True, False])
def test_opentelemetry_spans_and_bounding_coexist_and_outlive_uninstrument(
    lib: ModuleType,
    spans: InMemorySpanExporter,
    fake_provider: FakeProvider,
    tmp_path: Path,
    otel_first: bool,
) -> None:
    if otel_first:
        _otel_on(spans)
        instrument(config=_config(tmp_path, 20_000))
    else:
        instrument(config=_config(tmp_path, 20_000))
        _otel_on(spans)
    _send(lib, fake_provider)
    assert _sent_total(fake_provider) <= 20_000  # bounded
    assert len(spans.get_finished_spans()) == 1  # and traced
    uninstrument()
    _send(lib, fake_provider)
    assert _sent_total(fake_provider) == sum(len(b) for b in BIG)  # no longer bounded
    assert len(spans.get_finished_spans()) == 2  # still traced


def test_uninstrument_is_safe_with_nothing_to_unwrap() -> None:
    uninstrument()
    uninstrument()
    assert not _instrument._STATE.patched


# -- a real library that replaces Client.send: sentry-sdk --------------------------------------
#
# opentelemetry-instrumentation-httpx wraps the transports' handle_request, not send, so the
# tests above prove coexistence but not where uninstrument() unwraps. sentry-sdk's httpx
# integration replaces httpx.Client.send with a function closing over the send it found,
# once per process: each order runs in a process of its own.

SENTRY_SCRIPT = Path(__file__).with_name("sentry_neighbour.py")


@pytest.mark.parametrize("order", ["sentry_first", "budgetware_first"])
def test_sentry_spans_and_bounding_coexist_and_uninstrument_leaves_sentry_in_place(
    fake_provider: FakeProvider, tmp_path: Path, order: str
) -> None:
    pytest.importorskip("sentry_sdk")
    run = subprocess.run(
        [sys.executable, str(SENTRY_SCRIPT), order, fake_provider.url, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3_000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    instrumented, after = fake_provider.requests[-2:]
    assert _sent_total_of(instrumented) <= 20_000  # bounded
    assert seen["spans_instrumented"] == 1  # and traced by sentry
    assert "sentry-trace" in instrumented.headers
    # uninstrument(): budgetware's layer is gone (unlinked, or inert under sentry's
    # function), sentry's stays: still traced, no longer bounded.
    assert _sent_total_of(after) == 150_000
    assert seen["spans_after"] == 1
    assert "sentry-trace" in after.headers
    assert seen["send_is_sentrys"]
    assert not seen["send_is_original"]


def _sent_total_of(request: Any) -> int:
    return sum(len(t) for t in tool_result_texts("openai_chat", request.json()))
