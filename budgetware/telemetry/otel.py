"""OpenTelemetry metrics and span attributes for every request budgetware handles.

Needs only ``opentelemetry-api`` (``pip install "budgetware[opentelemetry]"``): the
application configures the SDK and its exporters as usual. Without the API nothing is
subscribed and nothing is imported. Turned on, when the API is installed, by the first
entry point a process sets up (``instrument()``, a transport, ``bound_payload``; ``import
budgetware`` alone loads nothing of it); ``BUDGETWARE_TELEMETRY=0`` keeps it off, the
``telemetry`` setting turns it off per request.

Metrics (instrumentation scope ``budgetware``), with the attributes ``budgetware.api`` (the
wire format, e.g. ``openai_chat``) and ``budgetware.entry`` (``http`` or ``payload``):

- ``budgetware.requests.bounded`` (counter, ``{request}``): requests whose body changed;
- ``budgetware.tool_results.cut`` (counter, ``{tool_result}``): tool results shortened;
- ``budgetware.bytes.saved`` (counter, ``By``): request bytes not sent;
- ``budgetware.bounding.duration`` (histogram, ``s``): time spent bounding a request body
  that budgetware had to read (one longer than the budget; a shorter one costs nothing).

Span attributes, on the span current when the request reaches the network (the client span
of the httpx instrumentations, else the caller's own span; see ``http/delivery.py``):
``budgetware.batch_budget``, ``budgetware.body.bytes_before``,
``budgetware.body.bytes_after``, ``budgetware.tool_results.cut``,
``budgetware.artifacts.written``.

An SDK or exporter that raises never breaks the request: the failure is logged (its type
only), once per type.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from budgetware.core import observe

__all__ = ["METRICS", "SPAN_ATTRIBUTES", "disable", "enable", "enable_if_available", "enabled"]

logger = logging.getLogger("budgetware")

SCOPE = "budgetware"
METRICS = (
    "budgetware.requests.bounded",
    "budgetware.tool_results.cut",
    "budgetware.bytes.saved",
    "budgetware.bounding.duration",
)
SPAN_ATTRIBUTES = (
    "budgetware.batch_budget",
    "budgetware.body.bytes_before",
    "budgetware.body.bytes_after",
    "budgetware.tool_results.cut",
    "budgetware.artifacts.written",
)
_OFF = frozenset({"0", "false", "off", "no"})

_lock = threading.Lock()
_subscription: observe.Subscription | None = None
_meter_provider: Any = None
_instruments: tuple[Any, Any, Any, Any] | None = None
_failed_types: set[str] = set()


def enabled() -> bool:
    """Whether budgetware reports to OpenTelemetry in this process."""
    return _subscription is not None


def enable_if_available() -> bool:
    """``enable()`` when opentelemetry-api is installed and ``BUDGETWARE_TELEMETRY`` is not
    off; what the first entry point set up in a process does (``instrument()``, a transport,
    ``bound_payload``). Imports nothing of OpenTelemetry yet, and keeps an ``enable()`` the
    application already made (with its ``meter_provider``)."""
    if os.environ.get("BUDGETWARE_TELEMETRY", "").strip().lower() in _OFF:
        return False
    if _subscription is not None:
        return True
    return enable()


def enable(*, meter_provider: Any = None) -> bool:
    """Report every request to OpenTelemetry (``meter_provider``: instead of the global one).

    Returns False, changing nothing, when opentelemetry-api is not installed. The API is
    imported at the first report, not here: ``import budgetware`` stays cheap.
    """
    global _subscription, _meter_provider, _instruments
    if not _api_installed():
        return False
    with _lock:
        if meter_provider is not _meter_provider:
            _meter_provider = meter_provider
            _instruments = None  # made again from the new provider at the next report
        if _subscription is None:
            _subscription = observe.subscribe(request=_on_request)
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


def _create_instruments() -> tuple[Any, Any, Any, Any]:
    from opentelemetry import metrics

    provider = _meter_provider or metrics.get_meter_provider()
    meter = provider.get_meter(SCOPE)
    return (
        meter.create_counter(
            METRICS[0], unit="{request}", description="Requests whose tool results were bounded"
        ),
        meter.create_counter(
            METRICS[1], unit="{tool_result}", description="Tool results shortened"
        ),
        meter.create_counter(METRICS[2], unit="By", description="Request bytes not sent"),
        meter.create_histogram(
            METRICS[3], unit="s", description="Time spent bounding a request body"
        ),
    )


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
    labels = {"budgetware.api": report.api or "unknown", "budgetware.entry": report.entry}
    span_attributes = dict(
        zip(
            SPAN_ATTRIBUTES,
            (
                report.batch_budget,
                report.bytes_before,
                report.bytes_after,
                report.results_cut,
                report.artifacts_written,
            ),
        )
    )
    bounded = report.bounded
    try:
        span = _current_span()
        if span.is_recording():
            span.set_attributes(span_attributes)
        global _instruments
        instruments = _instruments
        if instruments is None:
            instruments = _instruments = _create_instruments()
        requests, cut, saved, duration = instruments
        if bounded:
            requests.add(1, labels)
            cut.add(report.results_cut, labels)
            saved.add(report.bytes_saved, labels)
        if report.bytes_before > report.batch_budget > 0:  # a body it had to read
            duration.record(report.seconds, labels)
    except Exception as exc:  # the application's SDK or exporter: never the request's problem
        name = type(exc).__name__
        if name not in _failed_types:
            _failed_types.add(name)
            logger.warning(
                "budgetware could not report to OpenTelemetry (%s); requests go on", name
            )
