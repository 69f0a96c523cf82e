"""The provider request formats budgetware understands, and picking one for a request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from budgetware.core.jsonio import loads
from budgetware.wire.formats import (
    anthropic_messages,
    bedrock_converse,
    cohere_v2,
    gemini,
    ollama_chat,
    openai_chat,
    openai_responses,
)
from budgetware.wire.formats.base import Batch, Found, JsonPath, WireFormat

__all__ = [
    "FORMATS",
    "PASS_THROUGH_PATHS",
    "Batch",
    "Found",
    "JsonPath",
    "WireFormat",
    "format_for_path",
    "read_body",
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


def read_body(url: str, body: bytes) -> tuple[dict[str, Any], list[Batch]] | None:
    """The decoded body and its tool-result batches, or None when it carries none we handle.

    Pass-through endpoints are refused before decoding. A body that is not a JSON object,
    not UTF-8, too deep or otherwise undecodable is robust input, not an error: None.
    """
    path = urlsplit(str(url)).path.rstrip("/")
    if path.endswith(PASS_THROUGH_PATHS):
        return None
    # A raw NUL never occurs in UTF-8 JSON text; it does in UTF-16/32, which the standard
    # library would decode, but whose byte offsets the splicer cannot use.
    if b"\x00" in body:
        return None
    fmt = format_for_path(path)
    if fmt is None and not any(m in body for f in _SNIFF_ORDER for m in f.sniff_markers):
        # An unknown endpoint whose bytes hold no tool-result marker: not a model request
        # we can bound. instrument() sees every JSON request of the process; this keeps
        # the cost for the others at a few memory scans instead of a parse.
        return None
    try:
        decoded = loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(decoded, dict):
        return None
    fmt = fmt or sniff_format(decoded)
    if fmt is None:
        return None
    return decoded, fmt.batches(decoded)


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
