"""OpenTelemetry metrics and span attributes for every request budgetware handles, and the
provider's token counters of their responses (docs/observability.md), with
``opentelemetry-api`` only. An SDK that raises never breaks the request.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from typing import Any

from budgetware.core import observe

__all__ = ["METRICS", "disable", "enable", "enable_if_available", "enabled"]

logger = logging.getLogger("budgetware")

SCOPE = "budgetware"
# Name, unit and description of each instrument; the duration is a histogram, the rest counters.
_INSTRUMENTS = (
    ("budgetware.requests.bounded", "{request}", "Requests whose tool results were bounded"),
    ("budgetware.tool_results.cut", "{tool_result}", "Tool results shortened"),
    ("budgetware.bytes.saved", "By", "Request bytes not sent"),
    ("budgetware.bounding.duration", "s", "Time spent bounding a request body"),
    (
        "budgetware.provider.input_tokens",
        "{token}",
        "Input tokens the provider counted, cached ones included",
    ),
    (
        "budgetware.provider.cache_read.input_tokens",
        "{token}",
        "Input tokens the provider read from its prompt cache",
    ),
    (
        "budgetware.provider.cache_creation.input_tokens",
        "{token}",
        "Input tokens the provider wrote to its prompt cache",
    ),
)
METRICS = tuple(name for name, _, _ in _INSTRUMENTS)
_OFF = frozenset({"0", "false", "off", "no"})

_lock = threading.Lock()
_subscription: observe.Subscription | None = None
_meter_provider: Any = None
_instruments: list[Any] | None = None  # in the order of METRICS, made at the first report
_failed_types: set[str] = set()


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
    try:
        if importlib.util.find_spec("opentelemetry.trace") is None:
            return False
    except (ImportError, ValueError):  # no opentelemetry package at all
        return False
    with _lock:
        if meter_provider is not _meter_provider:
            _meter_provider = meter_provider
            _instruments = None  # made again from the new provider at the next report
        if _subscription is None:
            _subscription = observe.subscribe(request=_on_request, usage=_on_usage)
    return True


def disable() -> None:
    """Stop reporting to OpenTelemetry."""
    global _subscription
    with _lock:
        if _subscription is not None:
            _subscription.close()
            _subscription = None


def _metrics() -> list[Any]:
    global _instruments
    if _instruments is None:
        from opentelemetry import metrics

        meter = (_meter_provider or metrics.get_meter_provider()).get_meter(SCOPE)
        _instruments = [
            (meter.create_histogram if name == METRICS[3] else meter.create_counter)(
                name, unit=unit, description=description
            )
            for name, unit, description in _INSTRUMENTS
        ]
    return _instruments


def _on_request(report: observe.RequestReport) -> None:
    if not report.telemetry:
        return
    cut = sum(batch.cut for batch in report.batches)
    written = sum(len(batch.written) for batch in report.batches)
    try:
        from opentelemetry.trace import get_current_span

        span = get_current_span()
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
    read = report.bytes_before > report.batch_budget > 0  # a body it had to read
    if not (read or cut):
        return
    try:
        requests, cut_results, saved, duration = _metrics()[:4]
        labels = {"budgetware.api": report.api or "unknown", "budgetware.entry": report.entry}
        if cut:
            requests.add(1, labels)
            cut_results.add(cut, labels)
            saved.add(report.bytes_saved, labels)
        if read:
            duration.record(report.seconds, labels)
    except Exception as exc:
        _failed(exc)


def _on_usage(report: observe.UsageReport) -> None:
    request = report.request
    if request is not None and not request.telemetry:
        return
    try:
        entry = request.entry if request is not None else "unknown"
        labels = {"budgetware.api": report.api, "budgetware.entry": entry}
        tokens, read, written = _metrics()[4:]
        tokens.add(report.input_tokens, labels)
        read.add(report.cache_read_tokens, labels)
        written.add(report.cache_write_tokens or 0, labels)
    except Exception as exc:
        _failed(exc)


def _failed(exc: Exception) -> None:
    name = type(exc).__name__
    if name not in _failed_types:
        _failed_types.add(name)
        logger.warning("budgetware could not report to OpenTelemetry (%s); requests go on", name)
