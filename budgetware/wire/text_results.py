"""Tool results sent as plain user text (``text_results`` presets, ``core/presets.py``):
one batch per user message a preset recognizes, its markers kept."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from budgetware.core.presets import TEXT_RESULT_PRESETS, TextResultPreset
from budgetware.wire.formats.base import Batch, Found, JsonPath

__all__ = ["text_result_batches"]

# format -> (messages key, content key)
_MESSAGES = {
    "openai_chat": ("messages", "content"),
    "anthropic_messages": ("messages", "content"),
    "ollama_chat": ("messages", "content"),
    "cohere_v2": ("messages", "content"),
    "openai_responses": ("input", "content"),
    "gemini": ("contents", "parts"),
}
_TEXT_TYPES = frozenset({"text", "input_text"})
_ASSISTANT = frozenset({"assistant", "model"})  # "model": Gemini's role for the assistant


def _texts(content: object, path: JsonPath) -> Iterator[tuple[JsonPath, str]]:
    if isinstance(content, str):
        yield path, content
    elif isinstance(content, list):
        for index, part in enumerate(content):
            # Gemini's text parts have no type.
            if isinstance(part, dict) and part.get("type", "text") in _TEXT_TYPES:
                text = part.get("text")
                if isinstance(text, str):
                    yield (*path, index, "text"), text


def _user_texts(
    fmt: str, body: Mapping[str, Any]
) -> Iterator[tuple[bool, Iterator[tuple[JsonPath, str]]]]:
    """For each user message: whether it follows the assistant's, and its texts by path."""
    spec = _MESSAGES.get(fmt)
    if spec is None:
        return
    key, content_key = spec
    messages = body.get(key)
    default_role = "user" if fmt == "gemini" else None  # a Gemini content without a role
    previous = None
    for index, message in enumerate(messages if isinstance(messages, list) else []):
        role = message.get("role", default_role) if isinstance(message, dict) else None
        if role == "user":
            texts = _texts(message.get(content_key), (key, index, content_key))
            yield previous in _ASSISTANT, texts
        previous = role


def text_result_batches(fmt: str, body: Mapping[str, Any], presets: Sequence[str]) -> list[Batch]:
    """One batch per user message that a preset recognizes as a tool result."""
    chosen: list[TextResultPreset] = [TEXT_RESULT_PRESETS[name] for name in presets]
    batches: list[Batch] = []
    for after_assistant, texts in _user_texts(fmt, body):
        found: Found | None = None
        for path, text in texts:
            for preset in chosen:
                if preset.after_assistant and not after_assistant:
                    continue
                split = preset.split(text)
                if split is None:
                    continue
                kept, result, tail = split
                if found is None:
                    found = Found(call_id=None, tool_name=preset.tool_name)
                found.slot(path, result, kept=kept, tail=tail)
                break
        if found is not None and found.slots:
            batches.append([found])
    return batches
