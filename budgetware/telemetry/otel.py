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

The three counters are observable (asynchronous) counters: a request adds to totals kept
here (per attribute set, per meter provider), and the SDK reads them when it collects. Each
synchronous measurement costs the SDK tens of microseconds on the request path (more after
a multi-megabyte body has left the CPU caches cold: about 1% of a bounded 3 MB request);
this way a request pays for the span attributes only. Exported, they are counters
(monotonic sums) like any other. The bounding times are kept the same way and handed to the
histogram by the counters' callback, which the SDK runs before it reads its instruments: a
collection exports every request bounded before it, as a synchronous record would. (The
records carry no request context, so the histogram gets no exemplars; a buffer of
``_DURATIONS_MAX`` times that nothing collects is recorded by the request that fills it.)

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
_instruments: tuple[_Totals, Any] | None = None
_failed_types: set[str] = set()


_DURATIONS_MAX = 1024
"""Bounding times kept for the histogram between two collections; past it, the request
that fills the buffer hands them to the SDK itself (memory stays bounded when nothing ever
collects, as with the API's no-op meter provider)."""


class _Totals:
    """What the observable counters report: per ``(api, entry)``, the requests bounded, the
    tool results cut and the bytes saved so far (for one meter provider); and the bounding
    times not yet handed to the histogram."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[str, str], list[int]] = {}
        self._durations: list[tuple[float, tuple[str, str]]] = []

    def add(self, key: tuple[str, str], cut: int, saved: int) -> None:
        with self._lock:
            values = self._values.get(key)
            if values is None:
                values = self._values[key] = [0, 0, 0]
            values[0] += 1
            values[1] += cut
            values[2] += saved

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


def _create_instruments() -> tuple[_Totals, Any]:
    from opentelemetry import metrics

    provider = _meter_provider or metrics.get_meter_provider()
    meter = provider.get_meter(SCOPE)
    totals = _Totals()
    counters = (
        (METRICS[0], "{request}", "Requests whose tool results were bounded"),
        (METRICS[1], "{tool_result}", "Tool results shortened"),
        (METRICS[2], "By", "Request bytes not sent"),
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
        # The SDK runs every callback before it reads its instruments: the bounding times
        # kept since the last collection are recorded here, in time for this one.
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
    cut = written = 0  # report.results_cut and .artifacts_written, in one pass
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
    except Exception as exc:  # the application's SDK or exporter: never the request's problem
        _failed(exc)  # nor the metrics': they are counted all the same
    global _instruments
    try:
        instruments = _instruments
        if instruments is None:
            instruments = _instruments = _create_instruments()
        read = report.bytes_before > report.batch_budget > 0  # a body it had to read
        bounded = cut > 0  # report.bounded, without summing the batches again
        if not (read or bounded):
            return  # nothing to count: the wire format is not even looked up
        key = (report.api or "unknown", report.entry)
        totals, histogram = instruments
        if bounded:
            totals.add(key, cut, report.bytes_saved)
        if read:
            # Kept for the next collection (see the module doc), not handed to the SDK here.
            full = totals.add_duration(key, report.seconds)
            if full:
                _record_durations(histogram, full)
    except Exception as exc:
        _failed(exc)


def _failed(exc: Exception) -> None:
    name = type(exc).__name__
    if name not in _failed_types:
        _failed_types.add(name)
        logger.warning("budgetware could not report to OpenTelemetry (%s); requests go on", name)
