"""The provider APIs the fake knows: recognizing a request, the reply model, scripted agents."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal
from urllib.parse import urlsplit

__all__ = [
    "GEMINI_PATH",
    "ApiName",
    "RecordedRequest",
    "Reply",
    "ReplyPolicy",
    "ToolCall",
    "Usage",
    "count_tool_call_turns",
    "default_policy",
    "detect_api",
    "scripted_tool_calls",
]

ApiName = Literal["openai_chat", "openai_responses", "anthropic", "gemini", "ollama", "cohere"]
"""The provider API a request was recognized as, by its path."""
ToolCall = tuple[str, str, Mapping[str, Any]]
"""One requested call: ``(call_id, tool_name, arguments)``."""


@dataclass(frozen=True)
class Reply:
    """What the fake model answers, in the wire format of the API called: text, tool calls
    (with optional text), or an error."""

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    """Stored as a tuple; a list is the natural literal."""
    status: int = 200
    """Anything but 200 renders an error body with ``text`` as its message."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", tuple(tuple(c) for c in self.tool_calls))

    @classmethod
    def tools(cls, calls: Iterable[ToolCall], text: str = "") -> Reply:
        """A reply that asks for ``calls``; ``text`` goes along where the API allows it."""
        return cls(text=text, tool_calls=tuple(calls))

    @classmethod
    def error(cls, status: int, message: str = "fake provider error") -> Reply:
        """An HTTP error answer (for retry and failure paths)."""
        return cls(text=message, status=status)


ReplyPolicy = Callable[[ApiName, "dict[str, Any] | None"], "Reply | str"]
"""Decides the answer from the API name and the parsed request body (None if unparsable)."""


def default_policy(api: ApiName, body: dict[str, Any] | None) -> Reply:
    """A ``FakeProvider``'s answer unless told otherwise: the text "ok"."""
    return Reply("ok")


@dataclass(frozen=True)
class Usage:
    """The token counts the fake answered a request with, in the API's own usage fields
    (4 bytes of the prompt a token; docs/pytest.md, "Prompt caching")."""

    input_tokens: int
    """Every token of the prompt, the ones read from or written to the cache included."""
    output_tokens: int
    cache_read_tokens: int = 0
    """The prompt's prefix read from the cache."""
    cache_write_tokens: int = 0
    """Written to the cache by this request (Anthropic's ``cache_creation_input_tokens``)."""

    @property
    def uncached_tokens(self) -> int:
        """The prompt's tokens neither read from nor written to the cache."""
        return self.input_tokens - self.cache_read_tokens - self.cache_write_tokens


@dataclass(frozen=True)
class RecordedRequest:
    """One request exactly as the fake provider received it."""

    method: str
    path: str
    """Path with the query string, as sent on the request line."""
    headers: dict[str, str]
    """Header names lower-cased; a repeated header keeps its values joined by ", "."""
    body: bytes
    api: ApiName | None = None
    """The API the path was recognized as, or None (answered 404)."""
    usage: Usage | None = None
    """The usage it was answered with; None for an error answer."""

    def json(self) -> Any:
        """The body parsed as JSON (raises ``ValueError`` when it is not JSON)."""
        return json.loads(self.body)

    @property
    def route(self) -> str:
        """The path without its query string."""
        return urlsplit(self.path).path


# --- routing ---

GEMINI_PATH: Final = re.compile(
    r"/v1(?:alpha|beta\d*)?/(?:.*/)?models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$"
)


def detect_api(path: str) -> tuple[ApiName, str] | None:
    """The API of a request path and its operation (``chat``, ``count_tokens`` or a Gemini
    method name), or None for an unknown path."""
    route = urlsplit(path).path.rstrip("/")
    if route.endswith("/chat/completions"):
        return "openai_chat", "chat"
    if route.endswith("/responses"):
        return "openai_responses", "chat"
    if route.endswith("/v1/messages"):
        return "anthropic", "chat"
    if route.endswith("/v1/messages/count_tokens"):
        return "anthropic", "count_tokens"
    if route.endswith("/api/chat"):
        return "ollama", "chat"
    if route.endswith("/v2/chat"):
        return "cohere", "chat"
    m = GEMINI_PATH.search(route)
    if m and m.group("method") in ("generateContent", "streamGenerateContent", "countTokens"):
        return "gemini", m.group("method")
    return None


# --- conversation inspection ---

_RESPONSES_CALL_TYPES: Final = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "shell_call",
        "computer_call",
        "mcp_call",
    }
)


def count_tool_call_turns(api: ApiName, body: Mapping[str, Any] | None) -> int:
    """How many assistant turns in the request's conversation asked for tools (in the
    Responses API: runs of call items)."""
    if not isinstance(body, Mapping):
        return 0
    turns = 0
    if api in ("openai_chat", "ollama", "cohere"):
        for msg in _dicts(body.get("messages")):
            calls = msg.get("tool_calls")
            if msg.get("role") == "assistant" and isinstance(calls, list) and calls:
                turns += 1
    elif api == "anthropic":
        for msg in _dicts(body.get("messages")):
            if msg.get("role") == "assistant" and any(
                b.get("type") == "tool_use" for b in _dicts(msg.get("content"))
            ):
                turns += 1
    elif api == "gemini":
        for content in _dicts(body.get("contents")):
            if content.get("role") == "model" and any(
                "functionCall" in p or "function_call" in p for p in _dicts(content.get("parts"))
            ):
                turns += 1
    elif api == "openai_responses":
        items = body.get("input")
        previous_was_call = False
        for item in items if isinstance(items, list) else ():
            is_call = isinstance(item, dict) and item.get("type") in _RESPONSES_CALL_TYPES
            if is_call and not previous_was_call:
                turns += 1
            # Reasoning items sit right before the calls of the same turn: not a boundary.
            if not (isinstance(item, dict) and item.get("type") == "reasoning"):
                previous_was_call = is_call
    return turns


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                yield item


def scripted_tool_calls(
    turns: Sequence[Sequence[tuple[str, Mapping[str, Any]]]],
    final_text: str = "done",
) -> ReplyPolicy:
    """A reply policy for a scripted agent: tool calls turn after turn, then ``final_text``.

    ``turns[n]`` lists the ``(tool_name, arguments)`` calls of the model's n-th tool turn.
    The policy counts the tool-call turns already in the request's conversation (see
    :func:`count_tool_call_turns`), so the same policy serves any number of concurrent,
    stateless conversations. Call ids are ``call_<turn>_<index>``.
    """
    frozen = [list(t) for t in turns]

    def policy(api: ApiName, body: dict[str, Any] | None) -> Reply:
        done = count_tool_call_turns(api, body)
        if done < len(frozen) and frozen[done]:
            return Reply.tools(
                (f"call_{done}_{i}", name, dict(args))
                for i, (name, args) in enumerate(frozen[done])
            )
        return Reply(final_text)

    return policy
