"""The reports the observation seam delivers (``core/observe.py``): values, frozen once made.

Loaded with the first report, not at ``import budgetware``: ``dataclasses`` is not cheap
to import, and a process that bounds nothing builds no report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import TYPE_CHECKING

from budgetware.core.measure import Unit, measure
from budgetware.core.models import ToolResult

if TYPE_CHECKING:
    from budgetware.core.config import BudgetConfig

__all__ = ["BatchReport", "HistoryReport", "RequestReport", "UsageReport", "count_cut"]


def count_cut(before: Sequence[ToolResult], after: Sequence[ToolResult]) -> int:
    """How many of ``after`` are shortened ``before`` entries (``BatchReport.cut``)."""
    return sum(1 for old, new in zip(before, after) if old is not new and old.slots != new.slots)


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
    cut: int = -1
    """How many tool results were shortened (counted here unless the producer did)."""

    def __post_init__(self) -> None:
        if self.cut < 0:
            object.__setattr__(self, "cut", count_cut(self.before, self.after))

    @property
    def results(self) -> int:
        """How many tool results the batch holds."""
        return len(self.after)

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

    def __repr__(self) -> str:
        # Sizes and counts only: printing a report never dumps tool output or paths.
        return (
            f"BatchReport(boundary={self.boundary!r}, results={self.results}, cut={self.cut}, "
            f"size_before={self.size_before}, size_after={self.size_after}, "
            f"budget={self.budget}, unit={self.unit!r}, written={len(self.written)})"
        )


def _size(entries: Sequence[ToolResult], unit: Unit) -> int:
    return sum(measure(slot, unit) for entry in entries for slot in entry.slots)


@dataclass(frozen=True, eq=False)
class HistoryReport:
    """What the history pass (``history_budget``, docs/history.md) did to one request.
    Its repr counts ``written``, never shows the paths."""

    budget: int
    """The request's history budget in the unit (0: none, e.g. ``auto`` on an unknown model)."""
    masked: int = 0
    """How many tool results this request sends masked (all of them, not only new ones)."""
    before: int = 0
    """The history total (every batch as sent by the per-batch finalizer), nothing masked."""
    after: int = 0
    """The history total as sent: masked results count as their stubs."""
    new_step: bool = False
    """Whether this request took a new step: it masks more than the request before it did,
    so its prompt prefix differs from that request's (one provider cache miss)."""
    steps: int = 0
    """How many steps the conversation took up to this request."""
    written: tuple[str, ...] = field(default=(), repr=False)
    """References of the artifacts written for masked results (not the ones reused)."""
    skipped: str | None = None
    """Why the history was left alone (``before`` and ``after`` are then its total):
    ``context_management`` (the provider clears old tool results itself) or
    ``unknown_model`` (``auto`` found no input window)."""


@dataclass(frozen=True, eq=False)
class RequestReport:
    """One request body an entry point handled: sizes, counts, the budget, the batches."""

    _api: str | Callable[[], str | None] | None = field(repr=False)
    """The wire format, or a function that looks it up (``api`` calls it when first read)."""
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
    config: BudgetConfig | None = field(default=None, repr=False)
    """The settings the request was bounded with (the session log reads its policies)."""
    history: HistoryReport | None = None
    """What the history pass did; None when the request has no ``history_budget``, or its
    body was within every budget (not read)."""
    usage: UsageReport | None = field(default=None, init=False, repr=False)
    """The provider's token counters, read from the response once it ended (None before,
    or when it carried none)."""

    @cached_property
    def api(self) -> str | None:
        """The wire format (``openai_chat``, ...), None if not known."""
        api = self._api
        return api() if callable(api) else api

    def __repr__(self) -> str:
        # Sizes and counts: never the settings (paths) or the usage (its own report).
        shown = (f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        return f"RequestReport(api={self.api!r}, {', '.join(shown)})"

    @property
    def bounded(self) -> bool:
        """Whether the body that was sent differs from the one that was given."""
        return self.results_masked > 0 or any(batch.cut for batch in self.batches)

    @property
    def results_masked(self) -> int:
        """How many tool results the history pass masked."""
        return self.history.masked if self.history is not None else 0

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


@dataclass(frozen=True, eq=False)
class UsageReport:
    """The provider's token counters for one model request, read from its response."""

    api: str
    input_tokens: int
    """Every input token, the ones read from or written to the cache included."""
    cache_read_tokens: int = 0
    cache_write_tokens: int | None = None
    """Written to the cache (Anthropic's cache creation); None where the API has no such count."""
    output_tokens: int | None = None
    request: RequestReport | None = field(default=None, repr=False)
    """The report of the request this answers (whose ``usage`` is this report), if known."""
