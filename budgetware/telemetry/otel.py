"""OpenTelemetry metrics and span attributes for every request budgetware handles, and the
provider's token counters of their responses (docs/observability.md), with
``opentelemetry-api`` only. The counters are observable and
the bounding times are recorded when the SDK collects, so a request pays for its span
attributes only. An SDK that raises never breaks the request.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from budgetware.core import observe

__all__ = ["METRICS", "disable", "enable", "enable_if_available", "enabled"]

logger = logging.getLogger("budgetware")

SCOPE = "budgetware"
METRICS = (
    "budgetware.requests.bounded",
    "budgetware.tool_results.cut",
    "budgetware.bytes.saved",
    "budgetware.bounding.duration",
    "budgetware.provider.input_tokens",
    "budgetware.provider.cache_read.input_tokens",
    "budgetware.provider.cache_creation.input_tokens",
)
_OFF = frozenset({"0", "false", "off", "no"})

_lock = threading.Lock()
_subscription: observe.Subscription | None = None
_meter_provider: Any = None
_instruments: tuple[_Totals, Any] | None = None
_failed_types: set[str] = set()


_DURATIONS_MAX = 1024
"""Bounding times kept between two collections; the request that fills the buffer hands
them to the SDK itself (nothing may ever collect)."""


class _Totals:
    """Per ``(api, entry)``, the requests bounded, tool results cut, bytes saved and the
    provider's input tokens (all, read from its cache, written to it) so far; and the
    bounding times not yet handed to the histogram."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[str, str], list[int]] = {}
        self._durations: list[tuple[float, tuple[str, str]]] = []

    def add(self, key: tuple[str, str], *counts: int, start: int = 0) -> None:
        """Add ``counts`` to the totals from index ``start`` (that of ``METRICS``)."""
        with self._lock:
            values = self._values.get(key)
            if values is None:
                values = self._values[key] = [0] * 6
            for index, count in enumerate(counts, start):
                values[index] += count

    def add_duration(
        self, key: tuple[str, str], seconds: float
    ) -> list[tuple[float, tuple[str, str]]]:
        """Keep one bounding time; the ones to record now (a full buffer), else none."""
        with self._lock:
            durations = self._durations
            durations.append((seconds, key))
            if len(durations) < _DURATIONS_MAX:
                return []
            self._durations = []
        return durations

    def take_durations(self) -> list[tuple[float, tuple[str, str]]]:
        with self._lock:
            durations, self._durations = self._durations, []
        return durations

    def observations(self, index: int) -> list[Any]:
        from opentelemetry.metrics import Observation

        with self._lock:
            items = [(key, values[index]) for key, values in self._values.items()]
        return [
            Observation(value, {"budgetware.api": api, "budgetware.entry": entry})
            for (api, entry), value in items
        ]


def _record_durations(histogram: Any, durations: list[tuple[float, tuple[str, str]]]) -> None:
    for seconds, (api, entry) in durations:
        histogram.record(seconds, {"budgetware.api": api, "budgetware.entry": entry})


def enabled() -> bool:
    """Whether budgetware reports to OpenTelemetry in this process."""
    return _subscription is not None


def enable_if_available() -> bool:
    """``enable()`` unless ``BUDGETWARE_TELEMETRY`` is off or it is enabled already; the
    first entry point set up in a process calls it."""
    if os.environ.get("BUDGETWARE_TELEMETRY", "").strip().lower() in _OFF:
        return False
    if _subscription is not None:
        return True
    return enable()


def enable(*, meter_provider: Any = None) -> bool:
    """Report every request to OpenTelemetry (``meter_provider``: instead of the global one);
    False, changing nothing, without opentelemetry-api. The API is imported at the first
    report."""
    global _subscription, _meter_provider, _instruments
    if not _api_installed():
        return False
    with _lock:
        if meter_provider is not _meter_provider:
            _meter_provider = meter_provider
            _instruments = None  # made again from the new provider at the next report
        if _subscription is None:
            _subscription = observe.subscribe(request=_on_request, usage=_on_usage)
    return True


def _api_installed() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("opentelemetry.trace") is not None
    except (ImportError, ValueError):
        return False


def disable() -> None:
    """Stop reporting to OpenTelemetry."""
    global _subscription
    with _lock:
        if _subscription is not None:
            _subscription.close()
            _subscription = None


def _create_instruments() -> tuple[_Totals, Any]:
    from opentelemetry import metrics

    provider = _meter_provider or metrics.get_meter_provider()
    meter = provider.get_meter(SCOPE)
    totals = _Totals()
    counters = (
        (METRICS[0], "{request}", "Requests whose tool results were bounded"),
        (METRICS[1], "{tool_result}", "Tool results shortened"),
        (METRICS[2], "By", "Request bytes not sent"),
        (METRICS[4], "{token}", "Input tokens the provider counted, cached ones included"),
        (METRICS[5], "{token}", "Input tokens the provider read from its prompt cache"),
        (METRICS[6], "{token}", "Input tokens the provider wrote to its prompt cache"),
    )
    histogram = meter.create_histogram(
        METRICS[3], unit="s", description="Time spent bounding a request body"
    )
    for index, (name, unit, description) in enumerate(counters):
        meter.create_observable_counter(
            name,
            callbacks=[_reader(totals, index, histogram)],
            unit=unit,
            description=description,
        )
    return totals, histogram


def _reader(totals: _Totals, index: int, histogram: Any) -> Any:
    def observe_totals(options: Any) -> list[Any]:
        # The SDK runs callbacks before it reads its instruments: record the kept times.
        durations = totals.take_durations()
        if durations:
            try:
                _record_durations(histogram, durations)
            except Exception as exc:  # the SDK's own failure: the counters still report
                _failed(exc)
        return totals.observations(index)

    return observe_totals


def _current_span() -> Any:
    global _get_current_span
    if _get_current_span is None:
        from opentelemetry.trace import get_current_span

        _get_current_span = get_current_span
    return _get_current_span()


_get_current_span: Any = None


def _on_request(report: observe.RequestReport) -> None:
    if not report.telemetry:
        return
    cut = written = 0
    for batch in report.batches:
        cut += batch.cut
        written += len(batch.written)
    try:
        span = _current_span()
        if span.is_recording():
            span.set_attributes(
                {
                    "budgetware.batch_budget": report.batch_budget,
                    "budgetware.body.bytes_before": report.bytes_before,
                    "budgetware.body.bytes_after": report.bytes_after,
                    "budgetware.tool_results.cut": cut,
                    "budgetware.artifacts.written": written,
                }
            )
            history = report.history
            if history is not None:
                span.set_attributes(
                    {
                        "budgetware.history.budget": history.budget,
                        "budgetware.history.masked": history.masked,
                        "budgetware.history.new_step": history.new_step,
                    }
                )
    except Exception as exc:  # the application's SDK: never the request's problem
        _failed(exc)
    global _instruments
    try:
        instruments = _instruments
        if instruments is None:
            instruments = _instruments = _create_instruments()
        read = report.bytes_before > report.batch_budget > 0  # a body it had to read
        bounded = cut > 0
        if not (read or bounded):
            return
        key = (report.api or "unknown", report.entry)
        totals, histogram = instruments
        if bounded:
            totals.add(key, 1, cut, report.bytes_saved)
        if read:
            full = totals.add_duration(key, report.seconds)
            if full:
                _record_durations(histogram, full)
    except Exception as exc:
        _failed(exc)


def _on_usage(report: observe.UsageReport) -> None:
    request = report.request
    if request is not None and not request.telemetry:
        return
    global _instruments
    try:
        instruments = _instruments
        if instruments is None:
            instruments = _instruments = _create_instruments()
        key = (report.api, request.entry if request is not None else "unknown")
        written = report.cache_write_tokens or 0
        instruments[0].add(key, report.input_tokens, report.cache_read_tokens, written, start=3)
    except Exception as exc:
        _failed(exc)


def _failed(exc: Exception) -> None:
    name = type(exc).__name__
    if name not in _failed_types:
        _failed_types.add(name)
        logger.warning("budgetware could not report to OpenTelemetry (%s); requests go on", name)
