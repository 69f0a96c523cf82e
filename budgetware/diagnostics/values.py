"""What each boundary's tool output values are: extraction per boundary, artifact kinds.

Pure functions over the data a boundary holds (ToolResult batches, MCP results, ACP frames,
headless messages); the event pipeline (``events``) measures and hashes what they return.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from budgetware.core.models import ToolResult

__all__ = [
    "ARTIFACT_KINDS",
    "DISPLAY_VALUES",
    "MCP_SLOT_CHARS",
    "ArtifactInfo",
    "Value",
    "artifact_kind",
    "batch_ids",
    "batch_values",
    "mcp_slot_strings",
    "mcp_text",
    "mcp_texts",
    "mcp_values",
]

ARTIFACT_KINDS = frozenset(
    {"file", "link", "html", "image", "video", "audio", "pdf", "notebook", "document", "other"}
)
# Reference extension -> kind; any other path-like reference is a plain "file".
_EXTENSION_KINDS = {
    **dict.fromkeys(("html", "htm", "xhtml"), "html"),
    **dict.fromkeys(
        ("png", "jpg", "jpeg", "gif", "webp", "svg", "bmp", "tif", "tiff", "ico", "avif"),
        "image",
    ),
    **dict.fromkeys(("mp4", "mov", "webm", "mkv", "avi", "m4v"), "video"),
    **dict.fromkeys(("mp3", "wav", "ogg", "flac", "m4a", "aac", "opus"), "audio"),
    "pdf": "pdf",
    "ipynb": "notebook",
    **dict.fromkeys(("doc", "docx", "odt", "rtf", "pptx", "xlsx", "ods", "epub"), "document"),
}

# Strings of MCP structuredContent this short are identifiers, enums and the like: never cut.
MCP_SLOT_CHARS = 64

# One value: (representation, text) or (representation, text, index of its tool call).
Value = tuple[str, str] | tuple[str, str, int]


@dataclass(frozen=True)
class ArtifactInfo:
    """One tool call's artifacts (``files``: the tri-state, only its state logged) with
    explicit kinds, logged after the kinds of ``files`` themselves."""

    files: Sequence[str] | None
    kinds: Sequence[str] = ()


def artifact_kind(ref: str) -> str:
    """The kind of an artifact reference (a path or a URL), from the closed set."""
    lowered = ref.strip().lower()
    if lowered.startswith(("http://", "https://")):
        return "link"
    name = lowered.replace("\\", "/").rsplit("/", 1)[-1]
    if "." in name:
        return _EXTENSION_KINDS.get(name.rsplit(".", 1)[-1], "file")
    if "/" in lowered:
        return "file"
    return "other"


def mcp_text(block: Any) -> str | None:
    """The text of an MCP text content block, else None."""
    if isinstance(block, dict) and block.get("type") == "text":
        text = block.get("text")
        return text if isinstance(text, str) else None
    return None


def mcp_texts(result: dict[str, Any]) -> list[str]:
    """The texts of an MCP result's text content blocks, in order."""
    content = result.get("content")
    texts = map(mcp_text, content) if isinstance(content, list) else ()
    return [text for text in texts if text is not None]


def mcp_slot_strings(value: Any) -> Iterator[str]:
    """Every string leaf of structured content long enough to be cut (keys never are)."""
    stack = [value] if isinstance(value, (dict, list)) else []
    while stack:
        node = stack.pop()
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, str):
                if len(child) >= MCP_SLOT_CHARS:
                    yield child
            elif isinstance(child, (dict, list)):
                stack.append(child)


def mcp_values(result: Any) -> list[Value]:
    """The text blocks of an MCP result, then the structured strings a producer may cut."""
    if not isinstance(result, dict):
        return []
    strings = mcp_slot_strings(result.get("structuredContent"))
    return [("model_text", text) for text in (*mcp_texts(result), *strings)]


def acp_values(frames: Any) -> tuple[list[Value], dict[str, Any]]:
    """The text values (tagged with their update's index) and ids of the ACP
    ``tool_call_update`` frames in one message or a batch, in wire order."""
    values: list[Value] = []
    calls: list[Any] = []
    names: list[Any] = []
    session: Any = None
    for frame in frames if isinstance(frames, list) else [frames]:
        params = frame.get("params") if isinstance(frame, dict) else None
        update = params.get("update") if isinstance(params, dict) else None
        if not isinstance(update, dict) or update.get("sessionUpdate") != "tool_call_update":
            continue
        session = session or params.get("sessionId")  # type: ignore[union-attr]
        index = len(calls)
        calls.append(update.get("toolCallId"))
        meta = update.get("_meta")
        names.append(meta.get("toolName") if isinstance(meta, dict) else None)
        content = update.get("content")
        for block in content if isinstance(content, list) else ():
            inner = block.get("content") if isinstance(block, dict) else None
            text = inner.get("text") if isinstance(inner, dict) else None
            if isinstance(text, str):
                values.append(("acp_content", text, index))
        raw = update.get("rawOutput")
        if isinstance(raw, str):
            values.append(("acp_raw_output", raw, index))
    return values, {"session": session, "tool_call": calls, "tool_name": names}


def headless_values(messages: Any) -> tuple[list[Value], dict[str, Any]]:
    """The string ``content`` of each headless ``tool_result`` block, in wire order."""
    values: list[Value] = []
    calls: list[Any] = []
    session: Any = None
    for message in messages if isinstance(messages, list) else [messages]:
        if not isinstance(message, dict):
            continue
        session = session or message.get("session_id")
        inner = message.get("message")
        blocks = inner.get("content") if isinstance(inner, dict) else None
        for block in blocks if isinstance(blocks, list) else ():
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            text = block.get("content")
            if isinstance(text, str):
                values.append(("headless_content", text, len(calls)))
                calls.append(block.get("tool_use_id"))
    return values, {"session": session, "tool_call": calls}


def batch_values(entries: Sequence[ToolResult]) -> list[Value]:
    return [
        ("model_text", slot, index) for index, entry in enumerate(entries) for slot in entry.slots
    ]


def batch_ids(entries: Sequence[ToolResult]) -> dict[str, Any]:
    return {
        "tool_call": [e.call_id for e in entries],
        "tool_name": [e.tool_name for e in entries],
    }


# Each display kind's values and ids, from one frame or message or a list of them.
DISPLAY_VALUES = {"acp": acp_values, "headless": headless_values}
