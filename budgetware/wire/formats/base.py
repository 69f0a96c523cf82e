"""What every wire format provides: found tool results, their text slots, and their batches."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from budgetware.core.models import ToolResult

__all__ = [
    "Batch",
    "Found",
    "JsonPath",
    "WireFormat",
    "block_batches",
    "collect_text_parts",
    "has_content_block",
    "text_block",
    "text_of",
]

# Where a value lives in the decoded body: object keys and array indexes from the root.
JsonPath = tuple[str | int, ...]


@dataclass
class Found:
    """One tool result found in a body: its text slots (with their paths) and the rest."""

    call_id: str | None
    tool_name: str | None
    paths: list[JsonPath] = field(default_factory=list)
    slots: list[str] = field(default_factory=list)
    parts: list[object] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """Per slot, text before it never cut: the value at the path is ``kept + slot + tail``."""
    tail: list[str] = field(default_factory=list)
    """Per slot, text after it never cut."""

    def entry(self) -> ToolResult:
        """This result as the core's neutral entry (undecided: a body carries no decision)."""
        return ToolResult(self.call_id, self.tool_name, tuple(self.slots), tuple(self.parts))

    def slot(self, path: JsonPath, value: str, *, kept: str = "", tail: str = "") -> None:
        """Record one piece of model-facing text that may be shortened."""
        self.paths.append(path)
        self.slots.append(value)
        self.kept.append(kept)
        self.tail.append(tail)


# The tool results of one model turn, in body order.
Batch = list[Found]


class WireFormat(Protocol):
    """One provider request format: how to recognize it and where its tool results are."""

    name: str
    # A body of this shape contains one of these: an unknown endpoint's without is not parsed.
    sniff_markers: tuple[bytes, ...]

    def match_path(self, path: str) -> bool:
        """Whether a URL path (no query) is this format's endpoint."""
        ...

    def match_body(self, body: Mapping[str, Any]) -> bool:
        """Whether a decoded body of an unknown endpoint looks like this format."""
        ...

    def batches(self, body: Mapping[str, Any]) -> list[Batch]:
        """Every batch of tool results in the body, in order (empty batches left out)."""
        ...


def has_content_block(
    body: Mapping[str, Any],
    is_wanted: Callable[[dict[str, Any]], bool],
    messages_key: str = "messages",
    content_key: str = "content",
) -> bool:
    """Whether any message of ``body["messages"]`` has a content block ``is_wanted`` accepts
    (Gemini's: any content of ``body["contents"]`` a part, in its ``parts``)."""
    messages = body.get(messages_key)
    if not isinstance(messages, list):
        return False
    for message in messages:
        content = message.get(content_key) if isinstance(message, dict) else None
        if isinstance(content, list) and any(
            isinstance(block, dict) and is_wanted(block) for block in content
        ):
            return True
    return False


def text_of(value: object) -> str | None:
    """``value`` when it is a string, else None."""
    return value if isinstance(value, str) else None


def collect_text_parts(
    found: Found,
    content: object,
    path: JsonPath,
    *,
    is_text: Callable[[Mapping[str, Any]], str | None],
) -> None:
    """Add a string ``content`` as one slot, or each text part of a list as a slot (``is_text``
    names a text part's key, else None); every other part is kept untouched."""
    if isinstance(content, str):
        found.slot(path, content)
        return
    if not isinstance(content, list):
        if content is not None:
            found.parts.append(content)
        return
    for index, part in enumerate(content):
        key = is_text(part) if isinstance(part, dict) else None
        value = part.get(key) if key is not None else None
        if key is not None and isinstance(value, str):
            found.slot((*path, index, key), value)
        else:
            found.parts.append(part)


def text_block(part: Mapping[str, Any]) -> str | None:
    """``"text"`` for a ``{"type": "text"}`` part: where its text is."""
    return "text" if part.get("type") == "text" else None


def block_batches(
    messages: object,
    call_of: Callable[[dict[str, Any]], tuple[object, object] | None],
    result_of: Callable[[dict[str, Any]], tuple[object, object, JsonPath] | None],
    is_text: Callable[[Mapping[str, Any]], str | None],
) -> list[Batch]:
    """Batches of messages whose content is a list of blocks: one per message, its tool
    results (``result_of`` a block: the call id, the content and the path to it from the
    block), named by the calls before them (``call_of`` a block: its id and name)."""
    if not isinstance(messages, list):
        return []
    names: dict[str, str] = {}
    batches: list[Batch] = []
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        batch: Batch = []
        for position, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            call = call_of(block)
            if call is not None:
                call_id, name = text_of(call[0]), text_of(call[1])
                if call_id is not None and name is not None:
                    names[call_id] = name
            result = result_of(block)
            if result is None:
                continue
            call_id = text_of(result[0])
            found = Found(call_id=call_id, tool_name=names.get(call_id or ""))
            path = ("messages", index, "content", position, *result[2])
            collect_text_parts(found, result[1], path, is_text=is_text)
            batch.append(found)
        if any(found.slots for found in batch):
            batches.append(batch)
    return batches
