"""The provider request formats budgetware understands, and picking one for a request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from budgetware._formats import (
    anthropic_messages,
    bedrock_converse,
    cohere_v2,
    gemini,
    ollama_chat,
    openai_chat,
    openai_responses,
)
from budgetware._formats._base import Batch, Found, JsonPath, WireFormat

__all__ = [
    "FORMATS",
    "PASS_THROUGH_PATHS",
    "Batch",
    "Found",
    "JsonPath",
    "WireFormat",
    "format_for_path",
    "sniff_format",
]

# Path order matters only where suffixes overlap: none of these do.
FORMATS: tuple[WireFormat, ...] = (
    openai_chat.FORMAT,
    openai_responses.FORMAT,
    anthropic_messages.FORMAT,
    gemini.FORMAT,
    ollama_chat.FORMAT,
    cohere_v2.FORMAT,
    bedrock_converse.FORMAT,
)

# Endpoints whose bodies are never tool-result carriers, even if their shape looks like one:
# Ollama's /api/generate concatenates everything into one prompt (not separable).
PASS_THROUGH_PATHS = ("/api/generate", "/embeddings", "/api/embed", "/api/embeddings")

# Body-shape order for unknown endpoints: the most specific shapes first, OpenAI chat last
# because "a message with role tool" is the loosest test.
_SNIFF_ORDER: tuple[WireFormat, ...] = (
    openai_responses.FORMAT,
    anthropic_messages.FORMAT,
    bedrock_converse.FORMAT,
    gemini.FORMAT,
    openai_chat.FORMAT,
)


def format_for_path(path: str) -> WireFormat | None:
    """The format whose endpoint this URL path is, if any."""
    stripped = path.rstrip("/")
    for fmt in FORMATS:
        if fmt.match_path(stripped):
            return fmt
    return None


def sniff_format(body: Mapping[str, Any]) -> WireFormat | None:
    """The format a decoded body of an unknown endpoint looks like, if any."""
    for fmt in _SNIFF_ORDER:
        if fmt.match_body(body):
            return fmt
    return None
