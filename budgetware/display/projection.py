"""Display projection: bound the textual tool output that ACP and headless transports carry.

It never mutates its input and returns the same object when nothing changed, so what the
model sees stays lossless. Sizes are compact JSON bytes; the cuts work in "payload bytes"
(without the quotes), which add up over concatenation, so a cut measures only slices.
"""

from __future__ import annotations

import re
from typing import Any, cast

from budgetware.core.allocate import allocate
from budgetware.core.measure import json_string_bytes

__all__ = [
    "ACP_MARKER",
    "BLOCK_SKELETON_BYTES",
    "FIELD_BUDGET",
    "HEADLESS_MARKER",
    "json_prefix_length",
    "json_suffix_length",
    "payload_bytes",
    "project_acp_frame",
    "project_acp_update",
    "project_headless_message",
    "project_string",
]

#: Bytes allowed per eligible field, as compact UTF-8 JSON (quotes and wrappers included).
FIELD_BUDGET = 65_536
#: Inserted where ACP text was cut; 41 payload bytes (each newline is a 2-byte escape).
ACP_MARKER = "\n[... truncated for ACP transport ...]\n"
#: Inserted where headless text was cut; 46 payload bytes.
HEADLESS_MARKER = "\n[... truncated for headless transport ...]\n"
#: JSON bytes of one empty text block: ``{"type":"content","content":{"type":"text","text":""}}``.
BLOCK_SKELETON_BYTES = 54
# The head's share of the kept bytes; the tail, where errors and summaries are, gets the rest.
_HEAD_NUMERATOR, _HEAD_DENOMINATOR = 1, 5

# Machine-parsed UI commands: cutting them would break the UI, so the update stays whole.
_A2UI_TOOL = re.compile(r"(^|__)(present_ui|present_choices|a2ui_action)$")
_TEXT_BLOCK_KEYS = frozenset({"type", "content"})
_TEXT_KEYS = frozenset({"type", "text"})


# -- cutting one string ---


def payload_bytes(s: str, limit: int | None = None) -> int:
    """JSON bytes of ``s`` without the quotes; with ``limit``, any value above it once over."""
    return json_string_bytes(s, None if limit is None else limit + 2) - 2


def _is_pair(high: str, low: str) -> bool:
    return "\ud800" <= high <= "\udbff" and "\udc00" <= low <= "\udfff"


def json_prefix_length(s: str, size: int) -> int:
    """Length of the longest prefix of ``s`` within ``size`` payload bytes, never splitting a
    surrogate pair; reads only ``s[:size]`` (a character costs at least one byte)."""
    if size <= 0:
        return 0
    k = _longest_within(s[:size], size, from_end=False)
    return k - 1 if 0 < k < len(s) and _is_pair(s[k - 1], s[k]) else k


def json_suffix_length(s: str, size: int) -> int:
    """Length of the longest suffix of ``s`` within ``size`` payload bytes (see the prefix)."""
    if size <= 0:
        return 0
    k = _longest_within(s[-size:], size, from_end=True)
    start = len(s) - k
    return k - 1 if k > 0 and start > 0 and _is_pair(s[start - 1], s[start]) else k


def _longest_within(window: str, size: int, *, from_end: bool) -> int:
    """Largest ``k`` with the first (or last) ``k`` characters of ``window`` within ``size``
    payload bytes: a bisection that measures only the slice between ``lo`` and the probe."""
    n = len(window)
    if payload_bytes(window) <= size:
        return n
    lo, lo_cost, hi = 0, 0, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        cost = lo_cost + payload_bytes(window[n - mid : n - lo] if from_end else window[lo:mid])
        if cost <= size:
            lo, lo_cost = mid, cost
        else:
            hi = mid
    return lo


def project_string(s: str, budget: int, marker: str) -> str:
    """Bound ``s`` to ``budget`` JSON bytes (quotes included): ``s`` itself when it fits, else
    a 20% head and an 80% tail joined by ``marker`` (only a head when the marker does not fit)."""
    if json_string_bytes(s, limit=budget) <= budget:
        return s
    room = budget - 2
    marker_bytes = payload_bytes(marker)
    if room < marker_bytes:
        return s[: json_prefix_length(s, room)]
    source = room - marker_bytes
    head = source * _HEAD_NUMERATOR // _HEAD_DENOMINATOR
    tail = source - head
    keep_tail = json_suffix_length(s, tail)
    return s[: json_prefix_length(s, head)] + marker + s[len(s) - keep_tail :]


# -- ACP ---


def _text_block_text(block: Any) -> str | None:
    """The text of ``{"type":"content","content":{"type":"text","text":str}}``, else None."""
    if not isinstance(block, dict) or block.keys() != _TEXT_BLOCK_KEYS:
        return None
    if block["type"] != "content":
        return None
    inner = block["content"]
    if not isinstance(inner, dict) or inner.keys() != _TEXT_KEYS or inner["type"] != "text":
        return None
    text = inner["text"]
    return text if isinstance(text, str) else None


def _is_a2ui(update: dict[str, Any]) -> bool:
    meta = update.get("_meta")
    if not isinstance(meta, dict):
        return False
    server_id = meta.get("serverId")
    if isinstance(server_id, str) and "a2ui" in server_id.lower():
        return True
    tool_name = meta.get("toolName")
    return isinstance(tool_name, str) and _A2UI_TOOL.search(tool_name) is not None


def _project_text_blocks(
    blocks: list[Any], texts: list[str], budget: int, marker: str
) -> list[Any]:
    """Bound a list of text blocks to ``budget`` bytes as one array; same list if it fits."""
    n = len(blocks)
    skeleton = 2 + BLOCK_SKELETON_BYTES * n + max(n - 1, 0)
    marker_bytes = payload_bytes(marker)
    room = budget - skeleton
    # Measured only up to the budget: a longer block is never kept whole.
    sizes = [min(payload_bytes(t, limit=budget), budget) for t in texts]
    if room >= 0 and sum(sizes) <= room:
        return blocks
    minimums = [min(size, marker_bytes) for size in sizes]
    if room < 0 or sum(minimums) > room:
        return [{"type": "content", "content": {"type": "text", "text": marker}}]
    extra = allocate([size - low for size, low in zip(sizes, minimums)], room - sum(minimums))
    out = list(blocks)
    for i, (size, low, more) in enumerate(zip(sizes, minimums, extra)):
        share = low + more
        if share < size:
            text = project_string(texts[i], share + 2, marker)
            out[i] = {**blocks[i], "content": {**blocks[i]["content"], "text": text}}
    return out


def project_acp_update(update: dict[str, Any], budget: int = FIELD_BUDGET) -> dict[str, Any]:
    """Bound the textual ``content`` and string ``rawOutput`` of an ACP ``tool_call_update``.

    Every other update, A2UI tool output, and non-text content (diff, terminal, media, blocks
    with extra keys) come back as the same object. A changed update is a shallow copy that
    shares ``_meta`` and every untouched block with the input.
    """
    if not isinstance(update, dict) or update.get("sessionUpdate") != "tool_call_update":
        return update
    if _is_a2ui(update):
        return update
    content = update.get("content")
    raw = update.get("rawOutput")
    projected = dict(update)
    texts = [_text_block_text(b) for b in content] if isinstance(content, list) else [None]
    eligible = None not in texts  # every block a plain text block (an empty list too)
    if eligible and isinstance(content, list):
        texts_only = cast("list[str]", texts)
        projected["content"] = _project_text_blocks(content, texts_only, budget, ACP_MARKER)
    if isinstance(raw, str):
        if eligible and texts == [raw]:
            # The same output twice: cut it once so that the editor shows one text.
            if projected["content"] is not content:
                projected["rawOutput"] = _text_block_text(projected["content"][0])
        else:
            projected["rawOutput"] = project_string(raw, budget, ACP_MARKER)
    changed = projected.get("content") is not content or projected.get("rawOutput") is not raw
    return projected if changed else update


def project_acp_frame(frame: dict[str, Any], budget: int = FIELD_BUDGET) -> dict[str, Any]:
    """Project the update of a JSON-RPC ``session/update`` notification; other frames as is."""
    if not isinstance(frame, dict) or frame.get("method") != "session/update":
        return frame
    params = frame.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("update"), dict):
        return frame
    projected = project_acp_update(params["update"], budget)
    if projected is params["update"]:
        return frame
    return {**frame, "params": {**params, "update": projected}}


# -- headless ---


def project_headless_message(
    message: dict[str, Any], budget: int = FIELD_BUDGET
) -> dict[str, Any]:
    """Bound the string ``content`` of each ``tool_result`` block of a headless user message.

    Each block is bounded on its own; ``is_error`` and everything else are kept. Returns the
    same object when nothing changed, otherwise copies along the path to the changed blocks.
    """
    inner = message.get("message")
    if not isinstance(inner, dict):
        return message
    blocks = inner.get("content")
    if not isinstance(blocks, list):
        return message
    new_blocks: list[Any] | None = None
    for i, block in enumerate(blocks):
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        text = block.get("content")
        if not isinstance(text, str):
            continue
        cut = project_string(text, budget, HEADLESS_MARKER)
        if cut is text:
            continue
        if new_blocks is None:
            new_blocks = list(blocks)
        new_blocks[i] = {**block, "content": cut}
    if new_blocks is None:
        return message
    return {**message, "message": {**inner, "content": new_blocks}}
