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
from functools import cached_property

# ``import budgetware`` (every process under ``budgetware run``) loads this module: it
# imports neither ``typing``, ``logging`` nor ``dataclasses``.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any, TypeVar

    from budgetware.core.config import BudgetConfig
    from budgetware.core.measure import Unit
    from budgetware.core.models import ToolResult

    _L = TypeVar("_L")

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
else:
    BatchObserver = Callable
"""``(boundary: finalizer or guard, entries before, entries after, config, written)``."""


_init = object.__setattr__  # sets a cached field of a made report


class _Frozen:
    """Reports are values: their fields cannot be assigned after they are made."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a {type(self).__name__}")

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({shown})"


class _BatchFields:
    """The fields of a BatchReport, assignable until it becomes one."""

    __slots__ = ("__dict__", "after", "before", "boundary", "budget", "unit", "written")

    boundary: str
    """``finalizer`` or ``guard`` (core reports); ``request`` inside a RequestReport."""
    before: Sequence[ToolResult]
    after: Sequence[ToolResult]
    budget: int
    unit: Unit
    written: tuple[str, ...]
    """References of the artifacts this batch wrote (not the ones it reused)."""


class BatchReport(_BatchFields, _Frozen):
    """One batch of tool results (one model turn) before and after bounding."""

    __slots__ = ()
    _fields = ("boundary", "before", "after", "budget", "unit", "written")

    def __new__(
        cls,
        boundary: str,
        before: Sequence[ToolResult],
        after: Sequence[ToolResult],
        budget: int,
        unit: Unit,
        written: tuple[str, ...] = (),
        *,
        cut: int | None = None,
    ) -> BatchReport:
        """``cut``: how many results were shortened, if the producer counted them."""
        fields = object.__new__(_BatchFields)
        fields.boundary = boundary
        fields.before = before
        fields.after = after
        fields.budget = budget
        fields.unit = unit
        fields.written = written
        if cut is not None:
            fields.__dict__["cut"] = cut
        fields.__class__ = cls  # read-only from here on
        return fields  # type: ignore[return-value]  # a BatchReport now

    @property
    def results(self) -> int:
        """How many tool results the batch holds."""
        return len(self.after)

    @property
    def cut(self) -> int:
        """How many tool results were shortened."""
        known = self.__dict__
        cut: int | None = known.get("cut")
        if cut is None:
            cut = known["cut"] = count_cut(self.before, self.after)
        return cut

    @cached_property
    def referenced(self) -> tuple[str, ...]:
        """References of every artifact the previews name, written now or reused."""
        refs: dict[str, None] = {}
        for old, new in zip(self.before, self.after):
            if old is not new and old.slots != new.slots:
                refs.update(dict.fromkeys(new.persisted_output_files or ()))
        return tuple(refs)

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

    def __repr__(self) -> str:
        # Sizes and counts only: printing a report never dumps tool output or paths.
        return (
            f"BatchReport(boundary={self.boundary!r}, results={self.results}, cut={self.cut}, "
            f"size_before={self.size_before}, size_after={self.size_after}, "
            f"budget={self.budget}, unit={self.unit!r}, written={len(self.written)})"
        )


class _HistoryFields:
    __slots__ = ("after", "before", "budget", "masked", "new_step", "skipped", "steps", "written")

    budget: int
    """The request's history budget in the unit (0: none, e.g. ``auto`` on an unknown model)."""
    masked: int
    """How many tool results this request sends masked (all of them, not only new ones)."""
    before: int
    """The history total (every batch as sent by the per-batch finalizer), nothing masked."""
    after: int
    """The history total as sent: masked results count as their stubs."""
    new_step: bool
    """Whether this request took a new step: it masks more than the request before it did,
    so its prompt prefix differs from that request's (one provider cache miss)."""
    steps: int
    """How many steps the conversation took up to this request."""
    written: tuple[str, ...]
    """References of the artifacts written for masked results (not the ones reused)."""
    skipped: str | None
    """Why the history was left alone (``before`` and ``after`` are then its total):
    ``context_management`` (the provider clears old tool results itself) or
    ``unknown_model`` (``auto`` found no input window)."""


class HistoryReport(_HistoryFields, _Frozen):
    """What the history pass (``history_budget``, docs/history.md) did to one request."""

    __slots__ = ()
    _fields = ("budget", "masked", "before", "after", "new_step", "steps", "written", "skipped")

    def __new__(
        cls,
        budget: int,
        *,
        masked: int = 0,
        before: int = 0,
        after: int = 0,
        new_step: bool = False,
        steps: int = 0,
        written: tuple[str, ...] = (),
        skipped: str | None = None,
    ) -> HistoryReport:
        fields = object.__new__(_HistoryFields)
        fields.budget = budget
        fields.masked = masked
        fields.before = before
        fields.after = after
        fields.new_step = new_step
        fields.steps = steps
        fields.written = written
        fields.skipped = skipped
        fields.__class__ = cls  # read-only from here on
        return fields  # type: ignore[return-value]  # a HistoryReport now

    def __repr__(self) -> str:
        # Sizes and counts only: printing a report never dumps paths.
        shown = ", ".join(
            f"{name}={len(self.written) if name == 'written' else getattr(self, name)!r}"
            for name in self._fields
        )
        return f"HistoryReport({shown})"


class _RequestFields:
    """The fields of a RequestReport, assignable: ``RequestReport(...)`` fills one in, then
    makes it a RequestReport (the same layout), whose fields are read-only."""

    __slots__ = (
        "_api",
        "_usage",
        "batch_budget",
        "batches",
        "bytes_after",
        "bytes_before",
        "config",
        "entry",
        "error",
        "history",
        "seconds",
        "telemetry",
        "unit",
    )

    _api: str | Callable[[], str | None] | None
    _usage: UsageReport | None
    bytes_before: int
    bytes_after: int
    batch_budget: int
    unit: Unit
    seconds: float
    """Time spent bounding the body (reading, finalizing, splicing)."""
    batches: tuple[BatchReport, ...]
    """Every batch of tool results found, bounded or not (none for a body under budget)."""
    error: str | None
    """The type of an internal error that left the body unchanged, if any."""
    telemetry: bool
    """The ``telemetry`` setting in effect for this request."""
    entry: str
    """``http`` (transports, ``instrument()``) or ``payload`` (``bound_payload``)."""
    config: BudgetConfig | None
    """The settings the request was bounded with (the session log reads its policies)."""
    history: HistoryReport | None
    """What the history pass did; None when the request has no ``history_budget``, or its
    body was within every budget (not read)."""


class RequestReport(_RequestFields, _Frozen):
    """One request body an entry point handled: sizes, counts, the budget, the batches."""

    __slots__ = ()
    _fields = (
        "api",
        "bytes_before",
        "bytes_after",
        "batch_budget",
        "unit",
        "seconds",
        "batches",
        "error",
        "telemetry",
        "entry",
        "history",
    )

    def __new__(
        cls,
        api: str | Callable[[], str | None] | None,
        bytes_before: int,
        bytes_after: int,
        batch_budget: int,
        unit: Unit,
        seconds: float,
        batches: tuple[BatchReport, ...] = (),
        error: str | None = None,
        telemetry: bool = True,
        entry: str = "http",
        config: BudgetConfig | None = None,
        history: HistoryReport | None = None,
    ) -> RequestReport:
        fields = object.__new__(_RequestFields)
        fields._api = api
        fields._usage = None
        fields.bytes_before = bytes_before
        fields.bytes_after = bytes_after
        fields.batch_budget = batch_budget
        fields.unit = unit
        fields.seconds = seconds
        fields.batches = batches
        fields.error = error
        fields.telemetry = telemetry
        fields.entry = entry
        fields.config = config
        fields.history = history
        fields.__class__ = cls  # read-only from here on
        return fields  # type: ignore[return-value]  # a RequestReport now

    @property
    def api(self) -> str | None:
        """The wire format (``openai_chat``, ...), None if not known; a producer that did not
        look it up gives a function, called when first asked."""
        api = self._api
        if callable(api):
            api = api()
            _init(self, "_api", api)
        return api

    @property
    def usage(self) -> UsageReport | None:
        """The provider's token counters, read from the response once it ended (None before,
        or when it carried none)."""
        return self._usage

    @property
    def bounded(self) -> bool:
        """Whether the body that was sent differs from the one that was given."""
        return self.results_masked > 0 or any(batch.cut for batch in self.batches)

    @property
    def results_masked(self) -> int:
        """How many tool results the history pass masked."""
        history = self.history
        return history.masked if history is not None else 0

    @property
    def results(self) -> int:
        return sum(batch.results for batch in self.batches)

    @property
    def results_cut(self) -> int:
        return sum(batch.cut for batch in self.batches)

    @property
    def artifacts_written(self) -> int:
        history = len(self.history.written) if self.history is not None else 0
        return history + sum(len(batch.written) for batch in self.batches)

    @property
    def bytes_saved(self) -> int:
        return max(self.bytes_before - self.bytes_after, 0)


class UsageReport(_Frozen):
    """The provider's token counters for one model request, read from its response."""

    __slots__ = (
        "api",
        "cache_read_tokens",
        "cache_write_tokens",
        "input_tokens",
        "output_tokens",
        "request",
    )
    _fields = ("api", "input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")

    api: str
    input_tokens: int
    """Every input token, the ones read from or written to the cache included."""
    cache_read_tokens: int
    cache_write_tokens: int | None
    """Written to the cache (Anthropic's cache creation); None where the API has no such count."""
    output_tokens: int | None
    request: RequestReport | None
    """The report of the request this answers (whose ``usage`` is this report), if known."""

    def __init__(
        self,
        api: str,
        input_tokens: int,
        cache_read_tokens: int = 0,
        cache_write_tokens: int | None = None,
        output_tokens: int | None = None,
        request: RequestReport | None = None,
    ) -> None:
        _init(self, "api", api)
        _init(self, "input_tokens", input_tokens)
        _init(self, "cache_read_tokens", cache_read_tokens)
        _init(self, "cache_write_tokens", cache_write_tokens)
        _init(self, "output_tokens", output_tokens)
        _init(self, "request", request)


def count_cut(before: Sequence[ToolResult], after: Sequence[ToolResult]) -> int:
    """How many of ``after`` are shortened ``before`` entries (``BatchReport.cut``)."""
    return sum(1 for old, new in zip(before, after) if old is not new and old.slots != new.slots)


def _size(entries: Sequence[ToolResult], unit: Unit) -> int:
    from budgetware.core.measure import measure

    return sum(measure(slot, unit) for entry in entries for slot in entry.slots)


# --- subscribers --------------------------------------------------------------------------

BatchListener = Callable[[BatchReport], None]
RequestListener = Callable[[RequestReport], None]
UsageListener = Callable[[UsageReport], None]

_lock = _thread.allocate_lock()  # threading.Lock, without importing threading
_batch_listeners: tuple[BatchListener, ...] = ()
_request_listeners: tuple[RequestListener, ...] = ()
_usage_listeners: tuple[UsageListener, ...] = ()

batch_observer: BatchObserver | None = None
"""The finalizer's and the guard's hook: None while nothing listens to batches."""
requests_watched = False
"""Whether anything listens to request or usage reports (the INFO log line is checked apart)."""


class Subscription:
    """What :func:`subscribe` returns: ``close()`` (or leaving the ``with``) unsubscribes."""

    def __init__(
        self,
        batch: BatchListener | None,
        request: RequestListener | None,
        usage: UsageListener | None = None,
    ) -> None:
        self._batch = batch
        self._request = request
        self._usage = usage

    def close(self) -> None:
        global _batch_listeners, _request_listeners, _usage_listeners
        with _lock:
            if self._batch is not None:
                _batch_listeners = _without(_batch_listeners, self._batch)
            if self._request is not None:
                _request_listeners = _without(_request_listeners, self._request)
            if self._usage is not None:
                _usage_listeners = _without(_usage_listeners, self._usage)
            self._batch = self._request = self._usage = None
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


def _without(listeners: tuple[_L, ...], fn: _L) -> tuple[_L, ...]:
    out = list(listeners)
    out.remove(fn)
    return tuple(out)


def subscribe(
    *,
    batch: BatchListener | None = None,
    request: RequestListener | None = None,
    usage: UsageListener | None = None,
) -> Subscription:
    """Call ``batch`` for every batch report, ``request`` for every request report and
    ``usage`` for every usage report."""
    global _batch_listeners, _request_listeners, _usage_listeners
    with _lock:
        if batch is not None:
            _batch_listeners = (*_batch_listeners, batch)
        if request is not None:
            _request_listeners = (*_request_listeners, request)
        if usage is not None:
            _usage_listeners = (*_usage_listeners, usage)
        _publish()
    return Subscription(batch, request, usage)


def _publish() -> None:
    global batch_observer, requests_watched
    batch_observer = _dispatch_batch if _batch_listeners else None
    requests_watched = bool(_request_listeners or _usage_listeners)


_logger: Any = None
"""The ``budgetware`` logger, looked up once the program has imported ``logging``."""


def _log() -> Any:
    """The ``budgetware`` logger, or None while ``logging`` is not imported (nobody can
    have turned it on)."""
    global _logger
    if _logger is None:
        logging = sys.modules.get("logging")
        if logging is None:
            return None
        _logger = logging.getLogger("budgetware")
    return _logger


def watching() -> bool:
    """Whether a producer should build a RequestReport: a listener, or the INFO log line."""
    if requests_watched:
        return True
    logger = _logger or _log()
    return logger is not None and bool(logger.isEnabledFor(_INFO))


def usage_watched() -> bool:
    """Whether a response's usage is worth reading: a listener, or the INFO log line."""
    if _usage_listeners:
        return True
    logger = _logger or _log()
    return logger is not None and bool(logger.isEnabledFor(_INFO))


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


def deliver_usage(report: UsageReport) -> None:
    """Link the counters to their request's report, log them (INFO), tell every listener."""
    if report.request is not None:
        _init(report.request, "_usage", report)
    try:
        _log_usage(report)
    except Exception:
        _failed("log a usage report")
    for listener in _usage_listeners:
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
    logger = _logger or _log()
    if logger is None or not logger.isEnabledFor(_INFO):
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
    step = "a new step" if history.new_step else "no new step"
    return (
        f"; history {history.before:,} -> {history.after:,} {unit} (budget "
        f"{history.budget:,}): {history.masked} result(s) masked, {step}"
    )


def _log_usage(report: UsageReport) -> None:
    logger = _logger or _log()
    if logger is None or not logger.isEnabledFor(_INFO):
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
        ""
        if history is None
        else f"; history: {history.masked} masked, "
        + ("a new step" if history.new_step else "no new step"),
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
