"""The shared finalizer and the no-I/O send-boundary guard for one batch of tool results."""

from __future__ import annotations

import contextvars
import fnmatch
import hashlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from budgetware.core import observe
from budgetware.core.allocate import allocate, allocate_by_priority
from budgetware.core.artifacts import ArtifactStore, text_key
from budgetware.core.config import BudgetConfig, ToolPolicy
from budgetware.core.fit import Fitted, PreviewOptions, SlotPreview
from budgetware.core.measure import measure
from budgetware.core.models import ToolResult
from budgetware.core.notice import DEFAULT_WORDING, TOOL_HINT_WORDING, may_be_preview
from budgetware.core.salient import compile_salient

__all__ = [
    "WholeOutput",
    "finalize_batch",
    "finalize_batch_written",
    "guard_batch",
    "match_name",
    "preview_options",
    "rooms",
    "tool_priority",
]

logger = logging.getLogger("budgetware")

_DEFAULT_CONFIG = BudgetConfig()
_V = TypeVar("_V")


def finalize_batch(
    entries: Sequence[ToolResult],
    *,
    config: BudgetConfig | None = None,
    store: ArtifactStore | None = None,
) -> list[ToolResult]:
    """Bound one batch (one model turn) of tool results to ``config.batch_budget``.

    Results that fit are returned as they are. A cut undecided entry is persisted once
    through ``store`` when a preview can name the artifact, unless a producer already
    decided; a store failure leaves it with no reference (``()``).
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

    def resolve(entry: ToolResult, cut: list[_Cut]) -> tuple[str, ...] | None:
        if entry.persisted_output_files is not None:
            _fit_all(cut, entry.persisted_output_files)
            return entry.persisted_output_files
        if persist is None:
            _fit_all(cut, ())
            return ()
        return _persist(entry, cut, persist, written)

    result = _bound(entries, config, resolve)
    if persist is not None:
        _note_named(persist, entries, result)
    done = tuple(written)
    observer = observe.batch_observer
    if observer is not None:
        observer("finalizer", entries, result, config, done)
    return result, done


def _note_named(
    store: ArtifactStore, entries: Sequence[ToolResult], result: list[ToolResult]
) -> None:
    """Tell a store that keeps artifacts young on reuse (``note_named``, no I/O here) of
    undecided results that pass whole and may be a producer's previews."""
    note = getattr(store, "note_named", None)
    if note is None:
        return
    for old, new in zip(entries, result):
        if new is old and old.persisted_output_files is None:
            for slot in old.slots:
                if slot.startswith("["):
                    try:
                        note(slot)
                    except Exception as exc:  # a store must never fail the request
                        logger.warning(
                            "budgetware could not keep a preview's artifacts young (%s)",
                            type(exc).__name__,
                        )


def guard_batch(
    entries: Sequence[ToolResult], *, config: BudgetConfig | None = None
) -> list[ToolResult]:
    """Re-check a batch right before it is sent and bound it again if over budget, with no
    I/O: undecided entries are cut with no reference, and a change is logged as a warning.
    """
    config = config or _DEFAULT_CONFIG

    def resolve(entry: ToolResult, cut: list[_Cut]) -> tuple[str, ...] | None:
        _fit_all(cut, entry.persisted_output_files or ())
        return entry.persisted_output_files

    result = _bound(entries, config, resolve)
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


class _Cut:
    """One slot of an entry that must be cut: its preview, allocation and fitted text; the
    preview's ``key`` (its content address, when known) lets a preview re-sent every turn
    be reused."""

    __slots__ = ("allocation", "preview", "text")

    def __init__(self, preview: SlotPreview, allocation: int) -> None:
        self.preview = preview
        self.allocation = allocation
        self.text = ""

    def fit(self, refs: tuple[str, ...]) -> bool:
        preview = self.preview
        memo = (preview.key, self.allocation, refs, preview.unit, preview.options)
        fitted = _FITTED.get(memo) if preview.key is not None else None
        if fitted is None:
            fitted = preview.fit(self.allocation, refs)
            if preview.key is not None:
                _remember(memo, fitted)
        self.text = fitted.text
        return fitted.named


# Previews by content address, allocation, references, unit and options (all a preview
# depends on): an output re-sent every turn is fitted once. Emptied when its previews
# reach _FITTED_MAX_CHARS.
_FITTED: dict[tuple[object, ...], Fitted] = {}
_FITTED_MAX_CHARS = 8 * 1024 * 1024
_fitted_chars = 0


def _remember(memo: tuple[object, ...], fitted: Fitted) -> None:
    global _fitted_chars
    if _fitted_chars + len(fitted.text) > _FITTED_MAX_CHARS:
        _FITTED.clear()
        _fitted_chars = 0
    _FITTED[memo] = fitted
    _fitted_chars += len(fitted.text)


# Fits an entry's slots to cut (setting each ``_Cut.text``); returns its new tri-state.
_Resolve = Callable[[ToolResult, list[_Cut]], tuple[str, ...] | None]


def _fit_all(cut: list[_Cut], refs: tuple[str, ...]) -> bool:
    named = False
    for slot in cut:
        named = slot.fit(refs) or named
    return named


def _bound(
    entries: Sequence[ToolResult], config: BudgetConfig, resolve: _Resolve
) -> list[ToolResult]:
    out = list(entries)
    if config.batch_budget <= 0 or not out:
        return out
    unit = config.unit
    lengths = [measure(slot, unit) for entry in out for slot in entry.slots]
    if sum(lengths) <= config.batch_budget:
        return out
    allocation = rooms(out, lengths, config)
    options = preview_options(config)
    index = 0
    for position, entry in enumerate(out):
        count = len(entry.slots)
        mine = allocation[index : index + count]
        sizes = lengths[index : index + count]
        index += count
        if all(a >= n for a, n in zip(mine, sizes)):
            continue
        cut: list[_Cut] = []
        plan: list[str | _Cut] = []
        for slot, a, n in zip(entry.slots, mine, sizes):
            if a >= n:
                plan.append(slot)
            else:
                cut.append(_Cut(SlotPreview(slot, unit, options, total=n), a))
                plan.append(cut[-1])
        state = resolve(entry, cut)
        out[position] = ToolResult(
            call_id=entry.call_id,
            tool_name=entry.tool_name,
            slots=tuple(p if isinstance(p, str) else p.text for p in plan),
            parts=entry.parts,
            persisted_output_files=state,
        )
    return out


def rooms(entries: Sequence[ToolResult], lengths: list[int], config: BudgetConfig) -> list[int]:
    """Each slot's room (allocation) in a batch of slots ``lengths`` long over the budget."""
    if config.tool_policies:
        return _allocate_by_policy(entries, lengths, config)
    return allocate(lengths, config.batch_budget)


# The room every result keeps first when priorities or ``min_room`` apply: a compact
# preview, so a low-priority result is not cut to nothing.
_PRIORITY_FLOOR = {"chars": 100, "utf8_bytes": 100}
_PRIORITY_FLOOR_TOKENS = 25
# A ``min_room`` counts up to this share of the batch budget: never the whole batch.
MIN_ROOM_PERCENT = 50
_RANK = {"high": 0, "normal": 1, "low": 2}


def _allocate_by_policy(
    entries: Sequence[ToolResult], lengths: list[int], config: BudgetConfig
) -> list[int]:
    """The batch split with each tool's priority and minimum room (``tool_policies``)."""
    cap = config.batch_budget * MIN_ROOM_PERCENT // 100
    ranks: list[int] = []
    floors: list[int] = []
    index = 0
    for entry in entries:
        count = len(entry.slots)
        policy = _policy_for(config, entry.tool_name)
        ranks += [_RANK[policy.priority]] * count
        mine = lengths[index : index + count]
        room = min(policy.min_room, cap)
        floors += allocate(mine, room) if room else [0] * count
        index += count
    least: list[int] = []
    if len(set(ranks)) > 1 or any(floors):
        least = [_PRIORITY_FLOOR.get(config.unit, _PRIORITY_FLOOR_TOKENS)] * len(lengths)
    return allocate_by_priority(lengths, config.batch_budget, ranks, floors, least)


def match_name(table: Mapping[str, _V], name: str | None) -> _V | None:
    """The entry of ``table`` (tool policies, MCP overrides) for ``name``: its exact name
    first, then the first pattern (fnmatch) it matches; None when none does."""
    if name is None:
        return None
    if name in table:
        return table[name]
    return next((v for pattern, v in table.items() if fnmatch.fnmatchcase(name, pattern)), None)


def _policy_for(config: BudgetConfig, name: str | None) -> ToolPolicy:
    """A tool's policy (``tool_policies``; ``normal`` when none matches)."""
    policy = match_name(config.tool_policies, name)
    return _NORMAL if policy is None else policy


_NORMAL = ToolPolicy()


def tool_priority(config: BudgetConfig, name: str | None) -> str:
    """The priority ``tool_policies`` gives a tool's results (``normal`` when none)."""
    return _policy_for(config, name).priority


def preview_options(config: BudgetConfig) -> PreviewOptions:
    """How the previews of a configuration are made."""
    percent = config.preview_salient_percent
    return PreviewOptions(
        wording=TOOL_HINT_WORDING if config.preview_tool_hint else DEFAULT_WORDING,
        salient_percent=percent,
        salient=compile_salient(config.preview_salient_patterns) if percent > 0 else None,
    )


def _persist(
    entry: ToolResult, cut: list[_Cut], store: ArtifactStore, written: list[str]
) -> tuple[str, ...]:
    """Decide an undecided entry: reuse a producer's decision, or persist once if a preview
    can name the artifact. Any failure means previews with no reference and ``()``."""
    full = entry.full_text
    try:
        # Encoded once: hashed here (the GIL let go), written by the store as it is.
        data = full.encode("utf-8", "surrogatepass")
        key = hashlib.sha256(data).hexdigest()
        if len(entry.slots) == 1:  # the one slot is the full text: its key is known
            cut[0].preview.key = key
        decided, decidable = _decision(entry, full, key, store)
        if decided is not None:
            _fit_all(cut, decided)
            return decided
        predicted = _predict(store, key)
        # Else a placeholder as long as the longest reference: where it fits, the real one does.
        probe = predicted if predicted is not None else _PLACEHOLDER
        # A text that may be a preview had its decision looked up: no second look.
        early = _write_early(cut, probe, store, full, key, not decidable, data)
        if not _fit_all(cut, (probe,)):
            if early:  # never where it is written early: joined, named nowhere
                early()
            return ()  # no preview could name it: write nothing (the fit is done)
        ref, wrote = early() if early else _write(store, full, key, look=not decidable, data=data)
        if wrote:
            written.append(ref)
        if ref != predicted:
            _fit_all(cut, (ref,))
        return (ref,)
    except Exception as exc:  # a store must never fail the request
        _persist_failed(exc)
        _fit_all(cut, ())
        return ()


# A room in which a preview always fits the notice, a reference as long as the placeholder
# and half of its room in content (tests/core/test_early_write.py).
_NAMING_ROOM = 4096
_EARLY_BYTES = 3 << 20


def _write_early(
    cut: list[_Cut], probe: str, store: ArtifactStore, full: str, key: str, look: bool, data: bytes
) -> Callable[[], tuple[str, bool]] | None:
    """``_write`` on its own thread (the caller's context kept), a moment ahead of the fit's
    parse, which holds the GIL: for a large output not yet stored, whose previews will all
    name ``probe``, to budgetware's own stores (a caller's own stays on its thread)."""
    if not (
        len(data) >= _EARLY_BYTES
        and len(probe) <= len(_PLACEHOLDER)
        and all(slot.allocation >= _NAMING_ROOM for slot in cut)
        and hasattr(store, "put_reporting")
        and not store.reused(probe)  # type: ignore[attr-defined]
    ):
        return None
    from concurrent.futures import Future

    future: Future[tuple[str, bool]] = Future()

    def run() -> None:
        try:
            future.set_result(_write(store, full, key, look=look, data=data))
        except Exception as exc:  # raised in the caller's thread, by future.result
            future.set_exception(exc)

    try:
        thread = threading.Thread(target=contextvars.copy_context().run, args=(run,), daemon=True)
        thread.start()
        thread.join(0.001)
    except RuntimeError:  # no new thread at interpreter shutdown: written here
        run()
    return future.result


def _write(
    store: ArtifactStore, full: str, key: str, *, look: bool = True, data: bytes | None = None
) -> tuple[str, bool]:
    """(the reference of ``full``'s artifact, whether this call wrote it). With ``look``, an
    artifact another process wrote is found with one look (``stored_reference``), no upload."""
    find = getattr(store, "stored_reference", None) if look else None
    found = find(key) if find is not None else None
    if found is not None:
        return found, False
    # A store that can tell says whether this put wrote the artifact (unless a subclass
    # overrides put below where it defines put_reporting); else it did.
    for klass in type(store).__mro__:
        if "put_reporting" in vars(klass):
            reported: tuple[str, bool] = store.put_reporting(full, key=key, data=data)  # type: ignore[attr-defined]
            return reported
        if "put" in vars(klass):
            break
    return store.put(full, key=key), True


def _decision(
    entry: ToolResult, full: str, key: str, store: ArtifactStore
) -> tuple[tuple[str, ...] | None, bool]:
    """A producer's decision for the entry's text, if any, and whether it could have one:
    only a text that may be a producer's preview can, so others skip the lookup (a round
    trip on S3), unless it costs less than searching a large text (a local file's open)."""
    decidable = (len(full) > 1 << 16 and getattr(store, "local", False)) or may_be_preview(full)
    decided = store.lookup_decision(key) if decidable else None
    if decided is None and len(entry.slots) > 1:
        for slot in entry.slots:
            if not may_be_preview(slot):
                continue
            decidable = True
            decided = store.lookup_decision(text_key(slot))
            if decided is not None:
                break
    return decided, decidable


class WholeOutput:
    """A result the finalizer left whole, which the history pass may mask: the references
    its stub would name, known without writing anything, and persisting it once if masked.
    """

    __slots__ = ("decided", "expected", "full", "key", "store")

    def __init__(self, entry: ToolResult, store: ArtifactStore) -> None:
        self.full = entry.full_text
        self.store = store
        self.key = text_key(self.full)
        decided: tuple[str, ...] | None = None
        predicted: str | None = None
        try:
            decided = _decision(entry, self.full, self.key, store)[0]
            if decided is None:
                predicted = _predict(store, self.key)
        except Exception as exc:  # a store must never fail the request
            _persist_failed(exc)
        self.decided = decided
        # Else a placeholder as long as the longest reference: the real one is no longer.
        self.expected: tuple[str, ...] = (
            decided if decided is not None else (predicted or _PLACEHOLDER,)
        )

    def persist(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the references to name, those written now); nothing named if the store fails."""
        if self.decided is not None:
            return self.decided, ()
        try:
            ref, wrote = _write(self.store, self.full, self.key)
        except Exception as exc:  # a store must never fail the request
            _persist_failed(exc)
            return (), ()
        return (ref,), ((ref,) if wrote else ())


def _persist_failed(exc: Exception) -> None:
    logger.warning(
        "budgetware could not persist a tool output (%s); bounded without a reference",
        type(exc).__name__,
    )


# What a store that cannot predict its reference is probed with: 256 characters, as long
# as the longest reference assumed, of hex digits and slashes (measured like one in every unit).
_PLACEHOLDER = ("/" + "0123456789abcdef" * 16)[:256]


def _predict(store: ArtifactStore, key: str) -> str | None:
    """What ``store.put`` will return for ``key``, where the store can say without I/O."""
    ref_for = getattr(store, "ref_for", None)
    return ref_for(key) if ref_for is not None else None
