"""The one observation seam: what the finalizer, the guard and each bounded request did.

Diagnostics, the pytest plugin, OpenTelemetry and the log line subscribe here::

    with observe.subscribe(batch=on_batch, request=on_request, usage=on_usage):
        ...  # on_batch(BatchReport) per finalized/guarded batch, on_request(RequestReport),
        # on_usage(UsageReport) when a reported request's response has ended

Producers ask :func:`watching` first and build no report when nothing listens. Observers
that export anything keep to sizes and counts; one that raises is handled by ``fail_open``.
"""

from __future__ import annotations

import _thread
import sys
from collections.abc import Callable, Sequence

# ``import budgetware`` (every process under ``budgetware run``) loads this module: it
# imports neither ``typing``, ``logging`` nor ``dataclasses`` (the reports load with the
# first one built: ``__getattr__`` below).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from budgetware.core.config import BudgetConfig
    from budgetware.core.models import ToolResult
    from budgetware.core.reports import (
        BatchReport,
        HistoryReport,
        RequestReport,
        UsageReport,
        count_cut,
    )

__all__ = [
    "BatchObserver",
    "BatchReport",
    "HistoryReport",
    "RequestReport",
    "Subscription",
    "UsageReport",
    "batch_observer",
    "count_cut",
    "deliver_request",
    "deliver_usage",
    "entry_setup",
    "on_entry_setup",
    "subscribe",
    "usage_watched",
    "watching",
]

_INFO = 20  # logging.INFO
_DEBUG = 10  # logging.DEBUG

if TYPE_CHECKING:
    BatchObserver = Callable[
        [str, Sequence[ToolResult], Sequence[ToolResult], BudgetConfig, tuple[str, ...]], None
    ]
    BatchListener = Callable[[BatchReport], None]
    RequestListener = Callable[[RequestReport], None]
    UsageListener = Callable[[UsageReport], None]
else:
    BatchObserver = Callable
"""``(boundary: finalizer or guard, entries before, entries after, config, written)``."""

_REPORTS = frozenset(("BatchReport", "HistoryReport", "RequestReport", "UsageReport", "count_cut"))

if not TYPE_CHECKING:  # hidden from type checkers, which read the imports above

    def __getattr__(name: str) -> object:
        if name not in _REPORTS:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from budgetware.core import reports

        return getattr(reports, name)


# --- subscribers --------------------------------------------------------------------------

_lock = _thread.allocate_lock()  # threading.Lock, without importing threading
# The listeners of each kind of report: tuples replaced whole, so readers take no lock.
_listeners: dict[str, tuple[Callable[[Any], None], ...]] = {
    "batch": (),
    "request": (),
    "usage": (),
}

batch_observer: BatchObserver | None = None
"""The finalizer's and the guard's hook: None while nothing listens to batches."""
requests_watched = False
"""Whether anything listens to request or usage reports (the INFO log line is checked apart)."""


class Subscription:
    """What :func:`subscribe` returns: ``close()`` (or leaving the ``with``) unsubscribes."""

    def __init__(self, listeners: dict[str, Callable[[Any], None]]) -> None:
        self._listeners = listeners

    def close(self) -> None:
        with _lock:
            for kind, fn in self._listeners.items():
                kept = list(_listeners[kind])
                kept.remove(fn)
                _listeners[kind] = tuple(kept)
            self._listeners = {}
            _publish()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def subscribe(
    *,
    batch: BatchListener | None = None,
    request: RequestListener | None = None,
    usage: UsageListener | None = None,
) -> Subscription:
    """Call ``batch`` for every batch report, ``request`` for every request report and
    ``usage`` for every usage report."""
    chosen = {"batch": batch, "request": request, "usage": usage}
    listeners = {kind: fn for kind, fn in chosen.items() if fn is not None}
    with _lock:
        for kind, fn in listeners.items():
            _listeners[kind] += (fn,)
        _publish()
    return Subscription(listeners)


def _publish() -> None:
    global batch_observer, requests_watched
    batch_observer = _dispatch_batch if _listeners["batch"] else None
    requests_watched = bool(_listeners["request"] or _listeners["usage"])


_logger: Any = None
"""The ``budgetware`` logger, looked up once the program has imported ``logging``."""


def _info_logger() -> Any:
    """The ``budgetware`` logger if it is enabled for INFO, else None (also while
    ``logging`` is not imported: nobody can have turned it on)."""
    global _logger
    if _logger is None:
        logging = sys.modules.get("logging")
        if logging is None:
            return None
        _logger = logging.getLogger("budgetware")
    return _logger if _logger.isEnabledFor(_INFO) else None


def watching() -> bool:
    """Whether a producer should build a RequestReport: a listener, or the INFO log line."""
    return requests_watched or _info_logger() is not None


def usage_watched() -> bool:
    """Whether a response's usage is worth reading: a listener, or the INFO log line."""
    return bool(_listeners["usage"]) or _info_logger() is not None


# --- what entry points run where they are set up --------------------------------------------

_setup_hooks: list[Callable[[BudgetConfig | None], object]] = []
entry_points_set_up = False
"""Whether any entry point was set up in this process (an unused ``budget()`` warns)."""


def on_entry_setup(hook: Callable[[BudgetConfig | None], object]) -> None:
    """Run ``hook(config)`` once, where the first entry point is set up, with its config
    (OpenTelemetry and the session log are turned on so, not at ``import budgetware``)."""
    with _lock:
        _setup_hooks.append(hook)


def entry_setup(config: BudgetConfig | None = None) -> None:
    """What every entry point calls where it is set up: the pending hooks run, once."""
    global entry_points_set_up
    entry_points_set_up = True
    if not _setup_hooks:
        return
    with _lock:
        hooks = list(_setup_hooks)
        _setup_hooks.clear()
    for hook in hooks:
        try:
            hook(config)
        except Exception:
            _failed("set up an observer")


def _dispatch_batch(
    boundary: str,
    before: Sequence[ToolResult],
    after: Sequence[ToolResult],
    config: BudgetConfig,
    written: tuple[str, ...],
) -> None:
    from budgetware.core.reports import BatchReport

    report = BatchReport(boundary, before, after, config.batch_budget, config.unit, written)
    for listener in _listeners["batch"]:
        _call(listener, report)


def deliver_request(report: RequestReport) -> None:
    """Log the request (INFO when bounded, DEBUG per batch), then tell every listener."""
    _deliver("request", _log_request, report)


def deliver_usage(report: UsageReport) -> None:
    """Link the counters to their request's report, log them (INFO), tell every listener."""
    if report.request is not None:
        object.__setattr__(report.request, "usage", report)  # the two reports are linked
    _deliver("usage", _log_usage, report)


def _deliver(kind: str, log: Callable[[Any], None], report: object) -> None:
    try:
        log(report)
    except Exception:
        _failed(f"log a {kind} report")
    for listener in _listeners[kind]:
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
    logger = _info_logger()
    if logger is None:
        return
    unit = report.unit
    if report.bounded:
        logger.info(
            "budgetware bounded a request (%s): %s -> %s bytes; %d of %d tool results cut "
            "in %d batch(es) over %s %s; %d artifact(s) written; %.1f ms%s",
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
            _history_clause(report.history, unit),
            extra={"budgetware": _summary(report)},
        )
    if not logger.isEnabledFor(_DEBUG):
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


def _history_clause(history: HistoryReport | None, unit: str) -> str:
    """The log line's words for the history pass, when it masked anything."""
    if history is None or not history.masked:
        return ""
    return (
        f"; history {history.before:,} -> {history.after:,} {unit} (budget "
        f"{history.budget:,}): {history.masked} result(s) masked, {_step(history)}"
    )


def _step(history: HistoryReport) -> str:
    return "a new step" if history.new_step else "no new step"


def _log_usage(report: UsageReport) -> None:
    logger = _info_logger()
    if logger is None:
        return
    written = report.cache_write_tokens
    share = report.cache_read_tokens / report.input_tokens if report.input_tokens else 0.0
    # Beside the counters, what the history budget did to this request: a new masking
    # step is the one cache miss budgetware causes.
    history = report.request.history if report.request is not None else None
    logger.info(
        "budgetware: the provider's usage (%s): %s input tokens, %s read from its cache "
        "(%.0f%%)%s%s",
        report.api,
        f"{report.input_tokens:,}",
        f"{report.cache_read_tokens:,}",
        share * 100,
        "" if written is None else f", {written:,} written to it",
        "" if history is None else f"; history: {history.masked} masked, {_step(history)}",
        extra={
            "budgetware": {
                "api": report.api,
                "input_tokens": report.input_tokens,
                "cache_read_tokens": report.cache_read_tokens,
                "cache_write_tokens": written,
                "output_tokens": report.output_tokens,
            }
        },
    )


def _summary(report: RequestReport) -> dict[str, object]:
    """The request's sizes and counts, for structured log handlers (``record.budgetware``)."""
    summary: dict[str, object] = {
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
    history = report.history
    if history is not None:
        summary.update(
            history_budget=history.budget,
            history_before=history.before,
            history_after=history.after,
            history_masked=history.masked,
            history_new_step=history.new_step,
        )
    return summary
