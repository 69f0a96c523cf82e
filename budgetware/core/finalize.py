"""The shared finalizer and the no-I/O send-boundary guard for one batch of tool results."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from budgetware.core import observe
from budgetware.core.allocate import allocate
from budgetware.core.artifacts import ArtifactStore, text_key
from budgetware.core.config import BudgetConfig
from budgetware.core.fit import fit_text
from budgetware.core.measure import measure
from budgetware.core.models import ToolResult

__all__ = ["finalize_batch", "finalize_batch_written", "guard_batch"]

logger = logging.getLogger("budgetware")

_DEFAULT_CONFIG = BudgetConfig()

# Given an entry that is about to be cut, return its references and its new tri-state.
_Decide = Callable[[ToolResult], tuple[tuple[str, ...], tuple[str, ...] | None]]


def finalize_batch(
    entries: Sequence[ToolResult],
    *,
    config: BudgetConfig | None = None,
    store: ArtifactStore | None = None,
) -> list[ToolResult]:
    """Bound one batch (one model turn) of tool results to ``config.batch_budget``.

    Results that fit keep their identity; each cut one names where its full output is. An
    undecided entry (``persisted_output_files is None``) that is cut is persisted once
    through ``store``, unless a producer already recorded a decision for its text; a store
    failure leaves it decided with no reference (``()``), never with an invented one.
    """
    return finalize_batch_written(entries, config=config, store=store)[0]


def finalize_batch_written(
    entries: Sequence[ToolResult],
    *,
    config: BudgetConfig | None = None,
    store: ArtifactStore | None = None,
) -> tuple[list[ToolResult], tuple[str, ...]]:
    """``finalize_batch``, and the references of the artifacts it wrote (not reused)."""
    config = config or _DEFAULT_CONFIG
    persist = store if config.persist else None
    written: list[str] = []

    def decide(entry: ToolResult) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
        if entry.persisted_output_files is not None:
            return entry.persisted_output_files, entry.persisted_output_files
        if persist is None:
            return (), ()
        refs = _persist(entry, persist, config, written)
        return refs, refs

    result = _bound(entries, config, decide)
    done = tuple(written)
    observer = observe.batch_observer  # off (None): this one read is the whole cost
    if observer is not None:
        observer("finalizer", entries, result, config, done)
    return result, done


def guard_batch(
    entries: Sequence[ToolResult], *, config: BudgetConfig | None = None
) -> list[ToolResult]:
    """Re-check a batch right before it is sent, and bound it again if it is over budget.

    Does no I/O at all: nothing is persisted or read. An entry that already carries
    references keeps naming them; an undecided one is cut with no reference. It normally
    changes nothing; when it does, it logs a warning (a caller skipped finalization, or a
    producer added text after it).
    """
    config = config or _DEFAULT_CONFIG

    def decide(entry: ToolResult) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
        return entry.persisted_output_files or (), entry.persisted_output_files

    result = _bound(entries, config, decide)
    observer = observe.batch_observer
    if observer is not None:
        observer("guard", entries, result, config, ())
    changed = sum(1 for old, new in zip(entries, result) if old is not new)
    if changed:
        logger.warning(
            "budgetware guard bounded %d of %d tool results that were over the batch budget "
            "at the send boundary",
            changed,
            len(result),
        )
    return result


def _bound(
    entries: Sequence[ToolResult], config: BudgetConfig, decide: _Decide
) -> list[ToolResult]:
    out = list(entries)
    if not config.enabled or not out:
        return out
    unit = config.unit
    lengths = [measure(slot, unit) for entry in out for slot in entry.slots]
    if sum(lengths) <= config.batch_budget:
        return out
    allocation = allocate(lengths, config.batch_budget)
    index = 0
    for position, entry in enumerate(out):
        count = len(entry.slots)
        mine = allocation[index : index + count]
        sizes = lengths[index : index + count]
        index += count
        if all(a >= n for a, n in zip(mine, sizes)):
            continue
        refs, state = decide(entry)
        slots = tuple(
            slot if a >= n else fit_text(slot, a, refs=refs, unit=unit)
            for slot, a, n in zip(entry.slots, mine, sizes)
        )
        out[position] = ToolResult(
            call_id=entry.call_id,
            tool_name=entry.tool_name,
            slots=slots,
            parts=entry.parts,
            persisted_output_files=state,
        )
    return out


def _persist(
    entry: ToolResult, store: ArtifactStore, config: BudgetConfig, written: list[str]
) -> tuple[str, ...]:
    """Persist an undecided entry once; any failure means "decided, nothing reusable"."""
    full = entry.full_text
    try:
        key = text_key(full)
        decided = store.lookup_decision(key)
        if decided is None and len(entry.slots) > 1:
            for slot in entry.slots:
                decided = store.lookup_decision(text_key(slot))
                if decided is not None:
                    break
        if decided is not None:
            return decided
        # A store that can tell (the local one does) says whether this put wrote the
        # artifact or found it there already; one that cannot counts as written.
        put_reporting = _reporting_put(store)
        if put_reporting is not None:
            ref, wrote = put_reporting(full, key=key)
        else:
            ref, wrote = store.put(full, key=key), True
        if wrote:
            written.append(ref)
        return (ref,)
    except Exception as exc:  # a store must never fail the request
        logger.warning(
            "budgetware could not persist a tool output (%s); bounded without a reference",
            type(exc).__name__,
        )
        return ()


def _reporting_put(store: ArtifactStore) -> Callable[..., tuple[str, bool]] | None:
    """``store.put_reporting``, unless a subclass overrides ``put`` below where it is defined
    (then ``put`` is what the store means, and it must be the one called)."""
    for klass in type(store).__mro__:
        attributes = vars(klass)
        if "put_reporting" in attributes:
            method: Callable[..., tuple[str, bool]] = store.put_reporting  # type: ignore[attr-defined]
            return method
        if "put" in attributes:
            return None
    return None
