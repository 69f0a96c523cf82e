"""The history pass: a request's tool results within ``history_budget`` (docs/history.md).

After the per-batch finalizer, whole results of older batches become one-line stubs that
name their full output; which ones is ``core/history.replay``'s decision, a pure function
of the request, so the requests of a conversation keep byte-identical prefixes between
two steps in any process.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from budgetware.core.artifacts import ArtifactStore
from budgetware.core.config import AUTO, BudgetConfig
from budgetware.core.finalize import WholeOutput, preview_options, tool_priority
from budgetware.core.history import Replay, Result, replay
from budgetware.core.jsonio import loads
from budgetware.core.measure import BYTES_PER_TOKEN, measure
from budgetware.core.models import ToolResult
from budgetware.core.notice import is_masked
from budgetware.core.observe import HistoryReport
from budgetware.store.select import store_for_config
from budgetware.wire.formats.base import Batch, JsonPath

__all__ = [
    "history_budget",
    "input_window",
    "mask_history",
    "model_of",
    "smallest_history_budget",
]

logger = logging.getLogger("budgetware")

Changes = dict[JsonPath, tuple[str, str]]

# Why a request's history was left alone although it has a budget.
CONTEXT_MANAGEMENT = "context_management"
UNKNOWN_MODEL = "unknown_model"


def mask_history(
    url: str,
    body: Mapping[str, Any],
    batches: Sequence[Batch],
    sent: Sequence[Sequence[ToolResult]],
    sizes: Sequence[Sequence[int]],
    config: BudgetConfig,
) -> tuple[HistoryReport, Changes] | None:
    """What the history pass does to a request: its report, and the slots it masks, by path
    (old, new); None when the history has no budget. ``sent`` is each batch's results as the
    per-batch finalizer leaves them, ``sizes`` their sizes in the unit."""
    if config.history_budget is None:
        return None
    total = sum(map(sum, sizes))
    budget = history_budget(config, url, body)
    if budget is None:
        return HistoryReport(0, before=total, after=total, skipped=UNKNOWN_MODEL), {}
    if _provider_clears_tool_results(body):
        # The provider edits this history itself: never fight it over the same results.
        skipped = CONTEXT_MANAGEMENT
        return HistoryReport(budget, before=total, after=total, skipped=skipped), {}
    if total <= budget:  # every shorter request of the conversation was within it too
        return HistoryReport(budget, before=total, after=total), {}
    order = sorted(range(len(batches)), key=lambda b: _position(batches[b]))
    results = [
        [
            Result(size, tool_priority(config, entry.tool_name) == "high", is_masked(entry.slots))
            for entry, size in zip(sent[b], sizes[b])
        ]
        for b in order
    ]
    stubs = _Stubs(batches, sent, results, order, config, store_for_config(config))
    decided = replay(results, budget, config.history_keep_batches, config.history_step, stubs.size)
    return stubs.apply(decided, budget)


def _position(batch: Batch) -> tuple[str | int, ...]:
    """Where a batch starts in the body (presets' batches come after the format's)."""
    return next((found.paths[0][:2] for found in batch if found.paths), ())


@dataclass(slots=True)
class _Stub:
    """What a masked result becomes: its stub with the references expected, counted as the
    longer of that and the stub that names none (if the store then fails)."""

    size: int
    chars: int
    refs: tuple[str, ...]
    whole: WholeOutput | None
    text: str = ""
    counted: int = 0


class _Stubs:
    """The stubs of one request, made as the replay asks for their sizes."""

    def __init__(
        self,
        batches: Sequence[Batch],
        sent: Sequence[Sequence[ToolResult]],
        results: Sequence[Sequence[Result]],
        order: list[int],
        config: BudgetConfig,
        store: ArtifactStore | None,
    ) -> None:
        self.batches = batches
        self.sent = sent
        self.results = results
        self.order = order
        self.config = config
        self.store = store
        self.wording = preview_options(config).wording
        self.made: dict[tuple[int, int], _Stub] = {}

    def text(self, stub: _Stub, refs: tuple[str, ...]) -> str:
        return self.wording.masked(stub.size, self.config.unit, stub.chars, refs)

    def size(self, b: int, i: int) -> int:
        """The size the replay counts for the stub of result ``i`` of batch ``b``."""
        stub = self.made.get((b, i))
        if stub is not None:
            return stub.counted
        unit = self.config.unit
        batch = self.order[b]
        found = self.batches[batch][i]
        entry = self.sent[batch][i]
        refs: tuple[str, ...] = ()
        whole = None
        if entry.persisted_output_files is not None:  # the finalizer cut it and decided
            refs = entry.persisted_output_files
            size = sum(measure(slot, unit) for slot in found.slots)
        else:  # sent whole: its size is known
            size = self.results[b][i].size
            if self.store is not None:
                whole = WholeOutput(entry, self.store)
                refs = whole.expected
        stub = _Stub(size, sum(map(len, found.slots)), refs, whole)  # as the agent sent it
        stub.counted = measure(self.text(stub, ()), unit)
        if refs:
            stub.text = self.text(stub, refs)
            stub.counted = max(stub.counted, measure(stub.text, unit))
        self.made[(b, i)] = stub
        return stub.counted

    def apply(self, decided: Replay, budget: int) -> tuple[HistoryReport, Changes]:
        """The masked results' stubs, by path; the outputs they name persisted."""
        unit = self.config.unit
        after = decided.after
        written: list[str] = []
        changes: Changes = {}
        for b, i in sorted(decided.masked):
            stub = self.made[(b, i)]
            refs, text = stub.refs, stub.text
            if stub.whole is not None:
                refs, wrote = stub.whole.persist()
                written.extend(wrote)
                if refs != stub.refs:
                    text = self.text(stub, refs) if refs else ""
            if not text or measure(text, unit) > stub.counted:
                # Nothing named, or a reference longer than any the store predicted.
                text = self.text(stub, ())
            after += measure(text, unit) - stub.counted
            found = self.batches[self.order[b]][i]
            slots = zip(found.paths, found.kept, found.slots, found.tail)
            for position, (path, kept, old, tail) in enumerate(slots):
                changes[path] = (kept + old + tail, kept + (text if position == 0 else "") + tail)
        report = HistoryReport(
            budget,
            masked=len(decided.masked),
            before=decided.before,
            after=after,
            new_step=decided.new_step,
            steps=decided.steps,
            written=tuple(written),
        )
        return report, changes


def _provider_clears_tool_results(body: Mapping[str, Any]) -> bool:
    """Whether the request asks the provider to clear old tool results itself (Anthropic
    ``context_management`` with a ``clear_tool_uses`` edit)."""
    managed = body.get("context_management")
    edits = managed.get("edits") if isinstance(managed, dict) else None
    return isinstance(edits, list) and any(
        isinstance(edit, dict) and str(edit.get("type", "")).startswith("clear_tool_uses")
        for edit in edits
    )


# --- history_budget="auto" ------------------------------------------------------------------


def history_budget(config: BudgetConfig, url: str, body: Mapping[str, Any]) -> int | None:
    """The request's history budget in the unit: the setting, or for ``auto`` half the input
    window of the model it names (None: no budget, or the model's window is unknown)."""
    setting = config.history_budget
    if setting != AUTO:
        return setting if isinstance(setting, int) else None
    model = model_of(url, body)
    window = input_window(model) if model is not None else None
    if window is None:
        _warn_unknown(model)
        return None
    return _in_unit(window // 2, config.unit)


def _in_unit(tokens: int, unit: str) -> int:
    # Characters and bytes: about four per token (the estimate the ``tokens`` unit uses).
    return tokens * BYTES_PER_TOKEN if unit in ("chars", "utf8_bytes") else tokens


def smallest_history_budget(config: BudgetConfig) -> int | None:
    """The least history budget a request may get under this configuration (None: none)."""
    setting = config.history_budget
    if setting != AUTO:
        return setting if isinstance(setting, int) else None
    windows = _windows()
    return _in_unit(min(windows.values()) // 2, config.unit) if windows else None


# The model in the URL: Gemini and Vertex (``/models/{m}:method``), Bedrock (``/model/{id}/...``).
_URL_MODEL = re.compile(
    r"/models/(?P<gemini>[^/:]+):[A-Za-z]+\Z"
    r"|/model/(?P<bedrock>[^/]+)/(?:converse|converse-stream|invoke|invoke-with-response-stream)\Z"
)
# Where litellm's map files a model under another name: a provider's prefix.
_PREFIXES = ("gemini", "vertex_ai", "bedrock", "bedrock_converse", "mistral", "cohere_chat")


def model_of(url: str, body: Mapping[str, Any]) -> str | None:
    """The model a request names: the body's ``model``, else the one in its URL (Gemini,
    Vertex AI, Bedrock)."""
    model = body.get("model")
    if isinstance(model, str) and model:
        return model
    match = _URL_MODEL.search(urlsplit(url).path.rstrip("/"))
    if match is None:
        return None
    return unquote(match.group("gemini") or match.group("bedrock"))


def input_window(model: str) -> int | None:
    """``max_input_tokens`` of ``model`` in litellm's model map (the JSON file the litellm
    package ships, read without importing litellm), None when unknown or not installed."""
    windows = _windows()
    if not windows:
        return None
    names = [model, model.lower()]
    bare = model.rpartition("/")[2]
    names += [f"{prefix}/{name}" for name in (model, bare) for prefix in _PREFIXES]
    names.append(bare)
    for name in names:
        window = windows.get(name)
        if window is not None:
            return window
    return None


_MAP_FILE = "model_prices_and_context_window_backup.json"


@functools.cache
def _windows() -> dict[str, int]:
    """Every chat model's ``max_input_tokens`` from litellm's map, read once per process."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return {}
    places = list(spec.submodule_search_locations or ()) if spec is not None else []
    for place in places:
        try:
            with open(os.path.join(place, _MAP_FILE), "rb") as file:
                table = loads(file.read())
        except (OSError, ValueError):
            continue
        if not isinstance(table, dict):
            continue
        return {
            name: entry["max_input_tokens"]
            for name, entry in table.items()
            if isinstance(entry, dict)
            and entry.get("mode") in ("chat", "responses")
            and type(entry.get("max_input_tokens")) is int
            and entry["max_input_tokens"] > 0
        }
    return {}


@functools.lru_cache(maxsize=1024)  # once per model
def _warn_unknown(model: str | None) -> None:
    where = (
        "litellm's model map" if _windows() else "litellm's model map (litellm is not installed)"
    )
    logger.warning(
        "budgetware: history_budget=auto, but %s has no input window in %s: its history "
        "is not bounded (set history_budget to a number)",
        f"model {model[:80]!r}" if model else "a request that names no model",
        where,
    )
