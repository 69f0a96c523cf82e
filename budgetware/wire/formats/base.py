"""What every wire format provides: found tool results, their text slots, and their batches."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from budgetware.core.models import ToolResult

__all__ = [
    "Batch",
    "Found",
    "JsonPath",
    "WireFormat",
    "chat_tool_batches",
    "collect_text_parts",
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
    body: Mapping[str, Any], is_wanted: Callable[[dict[str, Any]], bool]
) -> bool:
    """Whether any message of ``body["messages"]`` has a content block ``is_wanted`` accepts."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return False
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
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


def _text_type(part: Mapping[str, Any]) -> str | None:
    return "text" if part.get("type") == "text" else None


def chat_tool_batches(
    messages: object,
    *,
    tool_roles: Iterable[str] = ("tool",),
    is_text: Callable[[Mapping[str, Any]], str | None] = _text_type,
    media_keys: Iterable[str] = (),
) -> list[Batch]:
    """Batches of a chat-style ``messages`` list: runs of consecutive tool messages, named by
    their own ``tool_name`` / ``name`` or the assistant's matching call."""
    if not isinstance(messages, list):
        return []
    roles = frozenset(tool_roles)
    media = tuple(media_keys)
    names: dict[str, str] = {}
    batches: list[Batch] = []
    run: Batch | None = None
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            run = None
            continue
        role = message.get("role")
        if role not in roles:
            run = None
            if role == "assistant":
                _remember_call_names(message.get("tool_calls"), names)
            continue
        call_id = text_of(message.get("tool_call_id"))
        name = text_of(message.get("tool_name")) or text_of(message.get("name"))
        if name is None and call_id is not None:
            name = names.get(call_id)
        found = Found(call_id=call_id, tool_name=name)
        collect_text_parts(
            found, message.get("content"), ("messages", index, "content"), is_text=is_text
        )
        found.parts.extend(message[key] for key in media if key in message)
        if run is None:
            run = []
            batches.append(run)
        run.append(found)
    return [batch for batch in batches if any(found.slots for found in batch)]


def _remember_call_names(calls: object, names: dict[str, str]) -> None:
    if not isinstance(calls, list):
        return
    for call in calls:
        if not isinstance(call, dict):
            continue
        call_id = text_of(call.get("id"))
        spec = call.get("function") or call.get("custom")
        name = text_of(spec.get("name")) if isinstance(spec, dict) else None
        if call_id is not None and name is not None:
            names[call_id] = name
