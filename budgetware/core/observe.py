"""The one observation seam: what the finalizer, the guard and each bounded request did.

The core imports nothing above it, so everything that watches budgetware (boundary
diagnostics, the pytest plugin, OpenTelemetry, the log line) subscribes here::

    from budgetware.core import observe

    with observe.subscribe(batch=on_batch, request=on_request):
        ...  # on_batch(BatchReport) per finalized/guarded batch, on_request(RequestReport)

Two kinds of report:

- a :class:`BatchReport` for every batch the finalizer or the guard handles
  (``core/finalize.py`` calls ``batch_observer``; off, that is one attribute read);
- a :class:`RequestReport` for every request body an entry point bounds (the transports,
  ``instrument()``, ``bound_payload``): ``wire/body.py`` builds it, the HTTP layer delivers
  it when the request reaches the network (inside the HTTP client span, if one is open).
  Producers ask :func:`watching` first (one attribute read, and a cached logger level
  check for the INFO line) and build nothing when it is False.

Every report carries sizes, counts, the budget and artifact references; observers that
export anything (logs, telemetry) must keep to sizes and counts. An observer must never
change a value; one that raises is handled like any internal error (``fail_open``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from budgetware.core.models import ToolResult

if TYPE_CHECKING:
    from budgetware.core.config import BudgetConfig
    from budgetware.core.measure import Unit

__all__ = [
    "BatchObserver",
    "BatchReport",
    "RequestReport",
    "Subscription",
    "batch_observer",
    "deliver_request",
    "subscribe",
    "watching",
]

logger = logging.getLogger("budgetware")

BatchObserver = Callable[
    [str, Sequence[ToolResult], Sequence[ToolResult], "BudgetConfig", tuple[str, ...]], None
]
"""``(boundary, entries before, entries after, config, artifacts written)``.

``boundary`` is ``finalizer`` or ``guard``. Set while anything listens to batches."""


@dataclass(frozen=True, eq=False)
class BatchReport:
    """One batch of tool results (one model turn) before and after bounding."""

    boundary: str
    """``finalizer`` or ``guard`` (core reports); ``request`` inside a RequestReport."""
    before: Sequence[ToolResult]
    after: Sequence[ToolResult]
    budget: int
    unit: Unit
    written: tuple[str, ...] = ()
    """References of the artifacts this batch wrote (not the ones it reused)."""

    @property
    def results(self) -> int:
        """How many tool results the batch holds."""
        return len(self.after)

    @cached_property
    def cut(self) -> int:
        """How many tool results were shortened."""
        return sum(
            1
            for old, new in zip(self.before, self.after)
            if old is not new and old.slots != new.slots
        )

    @cached_property
    def size_before(self) -> int:
        """The batch's tool-result text before bounding, in ``unit``."""
        return _size(self.before, self.unit)

    @cached_property
    def size_after(self) -> int:
        """The batch's tool-result text as sent, in ``unit``."""
        return _size(self.after, self.unit)

    @property
    def within_budget(self) -> bool:
        """Whether what was sent fits the budget (always, unless bounding is off)."""
        return self.budget <= 0 or self.size_after <= self.budget


@dataclass(frozen=True, eq=False)
class RequestReport:
    """One request body an entry point handled: sizes, counts, the budget, the batches."""

    api: str | None
    """The wire format (``openai_chat``, ``anthropic_messages``, ...), None if not known."""
    bytes_before: int
    bytes_after: int
    batch_budget: int
    unit: Unit
    seconds: float
    """Time spent bounding the body (reading, finalizing, splicing)."""
    batches: tuple[BatchReport, ...] = ()
    """Every batch of tool results found, bounded or not (none for a body under budget)."""
    error: str | None = None
    """The type of an internal error that left the body unchanged, if any."""
    telemetry: bool = True
    """The ``telemetry`` setting in effect for this request."""
    entry: str = "http"
    """``http`` (transports, ``instrument()``) or ``payload`` (``bound_payload``)."""

    @property
    def bounded(self) -> bool:
        """Whether the body that was sent differs from the one that was given."""
        return any(batch.cut for batch in self.batches)

    @property
    def results(self) -> int:
        return sum(batch.results for batch in self.batches)

    @property
    def results_cut(self) -> int:
        return sum(batch.cut for batch in self.batches)

    @property
    def artifacts_written(self) -> int:
        return sum(len(batch.written) for batch in self.batches)

    @property
    def bytes_saved(self) -> int:
        return max(self.bytes_before - self.bytes_after, 0)


def _size(entries: Sequence[ToolResult], unit: Unit) -> int:
    from budgetware.core.measure import measure

    return sum(measure(slot, unit) for entry in entries for slot in entry.slots)


# --- subscribers --------------------------------------------------------------------------

BatchListener = Callable[[BatchReport], None]
RequestListener = Callable[[RequestReport], None]

_lock = threading.Lock()
_batch_listeners: tuple[BatchListener, ...] = ()
_request_listeners: tuple[RequestListener, ...] = ()

batch_observer: BatchObserver | None = None
"""The finalizer's and the guard's hook: None while nothing listens to batches."""
requests_watched = False
"""Whether anything listens to request reports (the INFO log line is checked apart)."""


class Subscription:
    """What :func:`subscribe` returns: ``close()`` (or leaving the ``with``) unsubscribes."""

    def __init__(self, batch: BatchListener | None, request: RequestListener | None) -> None:
        self._batch = batch
        self._request = request

    def close(self) -> None:
        global _batch_listeners, _request_listeners
        with _lock:
            if self._batch is not None:
                _batch_listeners = _without(_batch_listeners, self._batch)
            if self._request is not None:
                _request_listeners = _without(_request_listeners, self._request)
            self._batch = self._request = None
            _publish()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


_L = TypeVar("_L")


def _without(listeners: tuple[_L, ...], fn: _L) -> tuple[_L, ...]:
    out = list(listeners)
    out.remove(fn)
    return tuple(out)


def subscribe(
    *, batch: BatchListener | None = None, request: RequestListener | None = None
) -> Subscription:
    """Call ``batch`` for every batch report and ``request`` for every request report."""
    global _batch_listeners, _request_listeners
    with _lock:
        if batch is not None:
            _batch_listeners = (*_batch_listeners, batch)
        if request is not None:
            _request_listeners = (*_request_listeners, request)
        _publish()
    return Subscription(batch, request)


def _publish() -> None:
    global batch_observer, requests_watched
    batch_observer = _dispatch_batch if _batch_listeners else None
    requests_watched = bool(_request_listeners)


def watching() -> bool:
    """Whether a producer should build a RequestReport: a listener, or the INFO log line."""
    return requests_watched or logger.isEnabledFor(logging.INFO)


def _dispatch_batch(
    boundary: str,
    before: Sequence[ToolResult],
    after: Sequence[ToolResult],
    config: BudgetConfig,
    written: tuple[str, ...],
) -> None:
    report = BatchReport(boundary, before, after, config.batch_budget, config.unit, written)
    for listener in _batch_listeners:
        _call(listener, report)


def deliver_request(report: RequestReport) -> None:
    """Log the request (INFO when bounded, DEBUG per batch), then tell every listener."""
    try:
        _log_request(report)
    except Exception:
        _failed("log a request report")
    for listener in _request_listeners:
        _call(listener, report)


def _call(listener: Callable[..., None], report: object) -> None:
    try:
        listener(report)
    except Exception:
        _failed("report to an observer")


def _failed(what: str) -> None:
    from budgetware.core.errors import fail_open

    fail_open(what)


def _log_request(report: RequestReport) -> None:
    if not logger.isEnabledFor(logging.INFO):
        return
    unit = report.unit
    if report.bounded:
        logger.info(
            "budgetware bounded a request (%s): %s -> %s bytes; %d of %d tool results cut "
            "in %d batch(es) over %s %s; %d artifact(s) written; %.1f ms",
            report.api or "unknown format",
            f"{report.bytes_before:,}",
            f"{report.bytes_after:,}",
            report.results_cut,
            report.results,
            sum(1 for batch in report.batches if batch.cut),
            f"{report.batch_budget:,}",
            unit,
            report.artifacts_written,
            report.seconds * 1000,
            extra={"budgetware": _summary(report)},
        )
    if not logger.isEnabledFor(logging.DEBUG):
        return
    if not report.bounded:
        logger.debug(
            "budgetware left a request whole (%s): %s bytes, %d tool result(s), budget %s %s%s",
            report.api or "unknown format",
            f"{report.bytes_before:,}",
            report.results,
            f"{report.batch_budget:,}",
            unit,
            f" (error: {report.error})" if report.error else "",
        )
    for index, batch in enumerate(report.batches, 1):
        logger.debug(
            "budgetware batch %d of %d: %d tool result(s), %s -> %s %s (budget %s), "
            "%d cut, %d artifact(s) written",
            index,
            len(report.batches),
            batch.results,
            f"{batch.size_before:,}",
            f"{batch.size_after:,}",
            unit,
            f"{batch.budget:,}",
            batch.cut,
            len(batch.written),
        )


def _summary(report: RequestReport) -> dict[str, object]:
    """The request's sizes and counts, for structured log handlers (``record.budgetware``)."""
    return {
        "api": report.api,
        "bytes_before": report.bytes_before,
        "bytes_after": report.bytes_after,
        "batch_budget": report.batch_budget,
        "unit": report.unit,
        "tool_results": report.results,
        "tool_results_cut": report.results_cut,
        "artifacts_written": report.artifacts_written,
        "seconds": report.seconds,
    }
