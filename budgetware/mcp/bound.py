"""Bounding one MCP ``tools/call`` result where it enters the agent (the producer boundary)."""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from budgetware.core.allocate import allocate
from budgetware.core.artifacts import ArtifactStore, text_key
from budgetware.core.config import (
    DEFAULT_MCP_MESSAGE_BYTES,
    DEFAULT_MCP_RESULT_BUDGET,
    BudgetConfig,
    McpServerBudget,
    McpToolPolicy,
)
from budgetware.core.finalize import match_name
from budgetware.core.fit import PreviewOptions, fit_text
from budgetware.core.gil import give_way
from budgetware.core.jsonio import dumps_bytes
from budgetware.core.measure import Unit, json_string_bytes, measure
from budgetware.core.notice import may_be_preview
from budgetware.diagnostics import events as diagnostics
from budgetware.diagnostics.values import MCP_SLOT_CHARS, mcp_slot_strings, mcp_text, mcp_texts

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_RESULT_BUDGET",
    "META_ARTIFACTS",
    "BoundResult",
    "McpServerBudget",
    "McpToolPolicy",
    "bound_tool_result",
    "names_server",
    "result_budget_for",
]

logger = logging.getLogger("budgetware")

DEFAULT_RESULT_BUDGET = DEFAULT_MCP_RESULT_BUDGET
DEFAULT_MAX_MESSAGE_BYTES = DEFAULT_MCP_MESSAGE_BYTES
# Room kept under the event limit for the SSE field lines around the JSON.
SSE_FRAMING_RESERVE = 1024
# The _meta entry naming the artifacts that hold the full output of a bounded result.
META_ARTIFACTS = "budgetware/artifacts"


def names_server(config: BudgetConfig, name: str) -> bool:
    """Whether ``mcp_servers`` has overrides for this server name or URL."""
    return match_name(config.mcp_servers, name) is not None


def result_budget_for(
    config: BudgetConfig, server: str | None = None, tool: str | None = None
) -> int:
    """The result budget for one tool of one server: the most specific override wins
    (server and tool, server, tool, ``mcp_result_budget``). An ``McpToolPolicy`` gives its
    ``result_budget``, else 0 for ``high`` priority, else the base raised to ``min_room``.
    """
    overrides = match_name(config.mcp_servers, server) if server else None
    base = config.mcp_result_budget
    entry: int | McpToolPolicy | None = None
    if overrides is not None:
        if tool is not None:
            entry = match_name(overrides.tools, tool)
        if overrides.result_budget is not None:
            if entry is None:
                return overrides.result_budget  # server beats a global tool entry
            base = overrides.result_budget
    if entry is None and tool is not None:
        entry = match_name(config.mcp_tools, tool)
    if entry is None:
        return base
    if isinstance(entry, int):
        return entry
    if entry.result_budget is not None:
        budget = entry.result_budget
    elif entry.priority == "high":
        return 0
    else:
        budget = base
    return max(budget, entry.min_room) if budget > 0 else budget


@dataclass(frozen=True)
class BoundResult:
    """The result to deliver and the references it names (None: unchanged, the same object)."""

    result: Any
    refs: tuple[str, ...] | None


@diagnostics.observes_mcp_results
def bound_tool_result(
    result: Any,
    *,
    budget: int,
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    reserve_bytes: int = 0,
    store: ArtifactStore | None = None,
    persist: bool = True,
    unit: Unit = "chars",
    options: PreviewOptions | None = None,
) -> BoundResult:
    """Bound one ``tools/call`` result dict; the input is never modified.

    Text blocks and long strings of ``structuredContent`` are cut (equal strings alike);
    everything else is kept, and ``_meta`` gains ``budgetware/artifacts``. The full output
    is persisted once and recorded as decided in ``store`` for the finalizer downstream.
    The serialized result plus ``reserve_bytes`` stays within ``max_bytes``; ``options``
    is how previews are made (``core/finalize.preview_options``).
    """
    if not isinstance(result, dict):
        return BoundResult(result, None)
    text_blocks = mcp_texts(result)
    structured = result.get("structuredContent")
    strings = list(mcp_slot_strings(structured))
    structured_values = set(strings)
    pause = give_way if sum(map(len, text_blocks + strings)) >= 1 << 16 else lambda: None
    pause()  # between passes over a large result: an event loop waits for one, not 5 ms
    places = Counter(text_blocks + strings)  # each slot value: how often it appears
    values = list(places)
    lengths = [measure(v, unit) for v in values]
    pause()
    total = sum(lengths)
    limit = max_bytes - reserve_bytes if max_bytes > 0 else None
    size = len(dumps_bytes(result)) if limit is not None else 0
    pause()
    over_budget = budget > 0 and total > budget
    if not over_budget and (limit is None or size <= limit):
        return BoundResult(result, None)

    artifacts = _Artifacts(store if persist else None, text_blocks, structured)
    counts = list(places.values())
    effective = budget if over_budget else total
    # Bytes of the result that are not slot text: what is left is the room for the slots.
    fixed = size - sum(n * (json_string_bytes(v) - 2) for v, n in zip(values, counts))
    room = None if limit is None else limit - fixed - 512  # 512: the _meta entry we add
    bounded: dict[str, str] = {}
    for _ in range(32):
        allocation = allocate(lengths, max(effective, 0))
        cut = [v for v, a, n in zip(values, allocation, lengths) if a < n]
        refs = artifacts.refs_for(cut, structured_values)
        bounded = {
            v: (fit_text(v, a, refs=refs, unit=unit, options=options) if a < n else v)
            for v, a, n in zip(values, allocation, lengths)
        }
        if room is None:
            break
        used = sum(n * (json_string_bytes(bounded[v]) - 2) for v, n in zip(values, counts))
        if used <= room:
            break
        if effective <= 0 or room <= 0:
            return _fallback(result, artifacts, limit, store)
        # Shrink in proportion to the overshoot (escapes, multi-byte text).
        effective = min(effective - 1, int(effective * room / used * 0.97))
    else:  # pragma: no cover - the proportional shrink settles long before
        return _fallback(result, artifacts, limit, store)

    new = dict(result)
    if isinstance(result.get("content"), list):
        new["content"] = [
            block
            if (text := mcp_text(block)) is None or bounded[text] == text
            else {**block, "text": bounded[text]}
            for block in result["content"]
        ]
    if any(bounded[v] != v for v in structured_values):
        new["structuredContent"] = _copy_replacing(structured, bounded)
    refs = artifacts.refs_for([v for v in values if bounded[v] != v], structured_values)
    meta = dict(new["_meta"]) if isinstance(new.get("_meta"), dict) else {}
    meta[META_ARTIFACTS] = list(refs)
    new["_meta"] = meta
    _record(store, refs, [bounded[v] for v in values if bounded[v] != v], new)
    return BoundResult(new, refs)


def _copy_replacing(node: Any, bounded: dict[str, str]) -> Any:
    """A copy of every container with each slot string replaced by its bounded text."""
    if isinstance(node, dict):
        return {key: _copy_replacing(value, bounded) for key, value in node.items()}
    if isinstance(node, list):
        return [_copy_replacing(value, bounded) for value in node]
    if isinstance(node, str) and len(node) >= MCP_SLOT_CHARS:
        return bounded.get(node, node)
    return node


class _Artifacts:
    """Persists the full output lazily and at most once per kind, never raising."""

    def __init__(self, store: ArtifactStore | None, texts: list[str], structured: Any) -> None:
        self._store = store
        self._full_text = "\n\n".join(texts)
        self._text_blocks = set(texts)
        self._structured = structured
        self._refs: dict[str, tuple[str, ...]] = {}

    def refs_for(self, cut: list[str], structured_values: set[str]) -> tuple[str, ...]:
        """The references of the full output, given which slot values are cut."""
        refs: list[str] = []
        if self._text_blocks and any(self._in_text(v) for v in cut):
            refs += self.put("text", lambda: self._full_text)
        # A cut structured string the text does not hold needs the structured content.
        if any(v in structured_values and not self._in_text(v) for v in cut):
            refs += self.put("structured", lambda: dumps_bytes(self._structured).decode())
        return tuple(refs)

    def _in_text(self, value: str) -> bool:
        # A whole text block is in the joined text: skip the substring search.
        return value in self._text_blocks or value in self._full_text

    def put(self, kind: str, text: Callable[[], str]) -> tuple[str, ...]:
        """The references of one full text (``kind``: which one), persisted at most once."""
        if kind in self._refs:
            return self._refs[kind]
        refs: tuple[str, ...] = ()
        if self._store is not None:
            try:
                full = text()
                refs = (self._store.put(full, key=text_key(full)),)
            except Exception as exc:  # a store must never fail the call
                logger.warning(
                    "budgetware could not persist an MCP tool result (%s); bounded without "
                    "a reference",
                    type(exc).__name__,
                )
        self._refs[kind] = refs
        return refs


def _fallback(
    result: dict[str, Any],
    artifacts: _Artifacts,
    limit: int | None,
    store: ArtifactStore | None,
) -> BoundResult:
    """For a result whose fixed parts (media, numbers) alone exceed the message limit, which
    the client would refuse: an error result naming the artifact of the whole result."""
    full = dumps_bytes(result).decode()
    refs = artifacts.put("result", lambda: full)
    meta = dict(result["_meta"]) if isinstance(result.get("_meta"), dict) else {}
    meta[META_ARTIFACTS] = list(refs)
    # The preview is JSON text inside JSON: its quotes double on the wire; halve until fits.
    room = max((limit or 0) - len(dumps_bytes(meta)) - 256, 0)
    allocation = room // 2
    while True:
        text = fit_text(full, allocation, refs=refs, unit="utf8_bytes")
        if json_string_bytes(text) <= room or allocation == 0:
            break
        allocation //= 2
    new = {"content": [{"type": "text", "text": text}], "isError": True, "_meta": meta}
    _record(store, refs, [text], new)
    return BoundResult(new, refs)


def _record(
    store: ArtifactStore | None,
    refs: tuple[str, ...],
    bounded_values: list[str],
    new: dict[str, Any],
) -> None:
    """Record the decision for each shape an agent may hand the model (each text block, the
    blocks joined, the structured content as JSON): the finalizer finds whichever comes."""
    if store is None:
        return
    texts = mcp_texts(new)
    shapes = list(bounded_values)
    if len(texts) > 1:
        shapes += ["\n\n".join(texts), "\n".join(texts), "".join(texts)]
    structured = new.get("structuredContent")
    if structured is not None:
        shapes.append(dumps_bytes(structured).decode())
        shapes.append(json.dumps(structured, ensure_ascii=False))
        shapes.append(json.dumps(structured))
    # Only a shape that may be a preview is looked up downstream; one without bounded text
    # is not the boundary's to decide.
    shapes = [s for s in shapes if may_be_preview(s)]
    for key in dict.fromkeys(text_key(s) for s in shapes):
        try:
            store.record_decision(key, refs)
        except Exception as exc:  # a store must never fail the call
            logger.warning("budgetware could not record an MCP decision (%s)", type(exc).__name__)
            return
