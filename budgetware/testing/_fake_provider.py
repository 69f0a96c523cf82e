"""A local fake of the LLM provider APIs, so real SDKs can be driven and their requests inspected.

Standard library only (it ships with the demo). One ``ThreadingHTTPServer`` on 127.0.0.1
answers just enough of OpenAI Chat Completions and Responses, Anthropic Messages, Gemini,
Ollama and Cohere v2 for the real client libraries to complete a call, streaming or not,
and records every request it receives, byte for byte.
"""

from __future__ import annotations

import json
import re
import socket
import socketserver
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final, Literal
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "API_NAMES",
    "ApiName",
    "FakeProvider",
    "RecordedRequest",
    "Reply",
    "ReplyPolicy",
    "ToolCall",
    "count_tool_call_turns",
    "detect_api",
    "scripted_tool_calls",
]

ApiName = Literal["openai_chat", "openai_responses", "anthropic", "gemini", "ollama", "cohere"]
API_NAMES: Final[tuple[ApiName, ...]] = (
    "openai_chat",
    "openai_responses",
    "anthropic",
    "gemini",
    "ollama",
    "cohere",
)

ToolCall = tuple[str, str, Mapping[str, Any]]
"""One requested call: ``(call_id, tool_name, arguments)``."""


@dataclass(frozen=True)
class Reply:
    """What the fake model answers: plain text, tool calls (with optional text), or an error.

    The server renders it in the wire format of the API that was called.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    status: int = 200
    """Anything but 200 renders an error body with ``text`` as its message."""

    def __post_init__(self) -> None:
        # Accept any sequence of tuples (a list is the natural literal) but store a tuple,
        # so a Reply stays hashable-ish and immutable in practice.
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


def _default_policy(api: ApiName, body: dict[str, Any] | None) -> Reply:
    return Reply("ok")


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
    received_at: float = field(default=0.0, compare=False)

    def json(self) -> Any:
        """The body parsed as JSON (raises ``ValueError`` when it is not JSON)."""
        return json.loads(self.body)

    @property
    def route(self) -> str:
        """The path without its query string."""
        return urlsplit(self.path).path


# --- routing -------------------------------------------------------------------------------

_GEMINI_RE: Final = re.compile(
    r"/v1(?:alpha|beta\d*)?/(?:.*/)?models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$"
)


def detect_api(path: str) -> tuple[ApiName, str] | None:
    """Which API a request path belongs to, and the operation: None for an unknown path.

    The operation is ``"chat"`` for the chat endpoints, ``"count_tokens"`` for Anthropic's
    token counting, and the Gemini method name (``generateContent``,
    ``streamGenerateContent``, ``countTokens``) for Gemini.
    """
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
    m = _GEMINI_RE.search(route)
    if m and m.group("method") in ("generateContent", "streamGenerateContent", "countTokens"):
        return "gemini", m.group("method")
    return None


# --- conversation inspection ---------------------------------------------------------------

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


def _has_items(value: Any) -> bool:
    return isinstance(value, list) and len(value) > 0


def count_tool_call_turns(api: ApiName, body: Mapping[str, Any] | None) -> int:
    """How many assistant turns in the request's conversation asked for tools.

    openai_chat, ollama, cohere: assistant messages with ``tool_calls``; anthropic:
    assistant messages with a ``tool_use`` block; gemini: ``model`` contents with a
    ``functionCall`` (or ``function_call``) part; openai_responses: runs of call items
    (``function_call`` and kin), a new run starting at a call item whose predecessor is
    not a call item.
    """
    if not isinstance(body, Mapping):
        return 0
    turns = 0
    if api in ("openai_chat", "ollama", "cohere"):
        for msg in _dicts(body.get("messages")):
            if msg.get("role") == "assistant" and _has_items(msg.get("tool_calls")):
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


# --- rendering -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rendered:
    status: int
    content_type: str
    body: bytes


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _json(value: Any, status: int = 200) -> _Rendered:
    return _Rendered(status, "application/json", _dumps(value))


def _sse(events: Iterable[tuple[str | None, Any]], *, done_marker: bool = False) -> _Rendered:
    parts: list[bytes] = []
    for event, data in events:
        head = f"event: {event}\n".encode() if event else b""
        parts.append(head + b"data: " + _dumps(data) + b"\n\n")
    if done_marker:
        parts.append(b"data: [DONE]\n\n")
    return _Rendered(200, "text/event-stream", b"".join(parts))


def _ndjson(lines: Iterable[Any]) -> _Rendered:
    return _Rendered(200, "application/x-ndjson", b"".join(_dumps(x) + b"\n" for x in lines))


def _error(status: int, message: str, kind: str = "invalid_request_error") -> _Rendered:
    # One shape that every SDK here turns into its own APIError/HTTP error: OpenAI-style
    # "error" object, plus the "type" Anthropic expects at the top level.
    return _json(
        {"type": "error", "error": {"type": kind, "message": message, "code": status}},
        status,
    )


def _args_json(args: Mapping[str, Any]) -> str:
    return json.dumps(dict(args), ensure_ascii=False, separators=(",", ":"))


def _uid(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


class _Usage:
    def __init__(self, raw_body: bytes, reply: Reply) -> None:
        # Roughly 4 bytes a token: the numbers only have to be plausible and monotonic.
        self.input = max(1, len(raw_body) // 4)
        size = len(reply.text) + sum(len(_args_json(c[2])) + len(c[1]) for c in reply.tool_calls)
        self.output = max(1, size // 4)
        self.total = self.input + self.output


def _render_openai_chat(
    model: str, reply: Reply, usage: _Usage, stream: bool, body: Mapping[str, Any]
) -> _Rendered:
    created = int(time.time())
    cid = _uid("chatcmpl-")
    finish = "tool_calls" if reply.tool_calls else "stop"
    usage_obj = {
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.total,
    }
    calls = [
        {"id": cid_, "type": "function", "function": {"name": name, "arguments": _args_json(a)}}
        for cid_, name, a in reply.tool_calls
    ]
    if not stream:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.text if reply.text or not calls else None,
        }
        if calls:
            message["tool_calls"] = calls
        return _json(
            {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
                ],
                "usage": usage_obj,
            }
        )

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}))]
    if reply.text:
        events.append((None, chunk({"content": reply.text})))
    for i, call in enumerate(calls):
        events.append((None, chunk({"tool_calls": [{"index": i, **call}]})))
    events.append((None, chunk({}, finish)))
    stream_options = body.get("stream_options")
    if isinstance(stream_options, Mapping) and stream_options.get("include_usage"):
        events.append(
            (
                None,
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": usage_obj,
                },
            )
        )
    return _sse(events, done_marker=True)


def _render_openai_responses(model: str, reply: Reply, usage: _Usage, stream: bool) -> _Rendered:
    rid = _uid("resp_")
    created = int(time.time())
    output: list[dict[str, Any]] = []
    if reply.text:
        output.append(
            {
                "type": "message",
                "id": _uid("msg_"),
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
                ],
            }
        )
    for call_id, name, args in reply.tool_calls:
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{call_id}",
                "call_id": call_id,
                "name": name,
                "arguments": _args_json(args),
                "status": "completed",
            }
        )

    def response(status: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": rid,
            "object": "response",
            "created_at": created,
            "status": status,
            "model": model,
            "output": items,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "metadata": {},
            "temperature": 1.0,
            "top_p": 1.0,
            "text": {"format": {"type": "text"}},
            "usage": {
                "input_tokens": usage.input,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": usage.output,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.total,
            }
            if status == "completed"
            else None,
        }

    if not stream:
        return _json(response("completed", output))

    events: list[tuple[str | None, Any]] = []

    def emit(kind: str, **data: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": len(events), **data}))

    emit("response.created", response=response("in_progress", []))
    emit("response.in_progress", response=response("in_progress", []))
    for index, item in enumerate(output):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            empty_part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            emit(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=empty_part,
            )
            emit(
                "response.output_text.delta",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                delta=text,
                logprobs=[],
            )
            emit(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
            emit(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=item["content"][0],
            )
        else:
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            emit(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=index,
                delta=item["arguments"],
            )
            emit(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                name=item["name"],
                arguments=item["arguments"],
            )
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=response("completed", output))
    return _sse(events)


def _render_anthropic(model: str, reply: Reply, usage: _Usage, stream: bool) -> _Rendered:
    mid = _uid("msg_")
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call_id, name, args in reply.tool_calls:
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": dict(args)})
    stop_reason = "tool_use" if reply.tool_calls else "end_turn"
    message: dict[str, Any] = {
        "id": mid,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.input,
            "output_tokens": usage.output,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }
    if not stream:
        return _json(message)
    events: list[tuple[str | None, Any]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    **message,
                    "content": [],
                    "stop_reason": None,
                    "usage": {**message["usage"], "output_tokens": 1},
                },
            },
        )
    ]
    for index, block in enumerate(content):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": _args_json(block["input"])}
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        events.append(
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": usage.output},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return _sse(events)


def _render_gemini(model: str, reply: Reply, usage: _Usage, method: str, sse: bool) -> _Rendered:
    parts: list[dict[str, Any]] = []
    if reply.text:
        parts.append({"text": reply.text})
    for call_id, name, args in reply.tool_calls:
        parts.append({"functionCall": {"id": call_id, "name": name, "args": dict(args)}})
    payload = {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": usage.input,
            "candidatesTokenCount": usage.output,
            "totalTokenCount": usage.total,
        },
        "modelVersion": model,
        "responseId": _uid("fake-"),
    }
    if method != "streamGenerateContent":
        return _json(payload)
    if sse:
        return _sse([(None, payload)])
    # Without alt=sse the real API streams one JSON array of responses.
    return _json([payload])


def _render_ollama(model: str, reply: Reply, usage: _Usage, stream: bool) -> _Rendered:
    created_at = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": cid, "function": {"index": i, "name": name, "arguments": dict(args)}}
            for i, (cid, name, args) in enumerate(reply.tool_calls)
        ]
    final: dict[str, Any] = {
        "model": model,
        "created_at": created_at,
        "message": message,
        "done": True,
        "done_reason": "stop",
        "total_duration": 1000,
        "load_duration": 10,
        "prompt_eval_count": usage.input,
        "prompt_eval_duration": 100,
        "eval_count": usage.output,
        "eval_duration": 100,
    }
    if not stream:
        return _json(final)
    first = {"model": model, "created_at": created_at, "message": message, "done": False}
    last = {**final, "message": {"role": "assistant", "content": ""}}
    return _ndjson([first, last])


def _render_cohere(reply: Reply, usage: _Usage, stream: bool) -> _Rendered:
    mid = _uid("")
    message: dict[str, Any] = {"role": "assistant"}
    if reply.text and not reply.tool_calls:
        message["content"] = [{"type": "text", "text": reply.text}]
    if reply.tool_calls:
        if reply.text:
            message["tool_plan"] = reply.text
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": _args_json(a)}}
            for cid, name, a in reply.tool_calls
        ]
    finish = "TOOL_CALL" if reply.tool_calls else "COMPLETE"
    usage_obj = {
        "billed_units": {"input_tokens": usage.input, "output_tokens": usage.output},
        "tokens": {"input_tokens": usage.input, "output_tokens": usage.output},
    }
    if not stream:
        return _json({"id": mid, "finish_reason": finish, "message": message, "usage": usage_obj})
    events: list[tuple[str | None, Any]] = []

    def emit(kind: str, **data: Any) -> None:
        events.append((kind, {"type": kind, **data}))

    emit("message-start", id=mid, delta={"message": {"role": "assistant"}})
    if "content" in message:
        emit(
            "content-start",
            index=0,
            delta={"message": {"content": {"type": "text", "text": ""}}},
        )
        emit("content-delta", index=0, delta={"message": {"content": {"text": reply.text}}})
        emit("content-end", index=0)
    if "tool_plan" in message:
        emit("tool-plan-delta", delta={"message": {"tool_plan": reply.text}})
    for index, call in enumerate(message.get("tool_calls", [])):
        emit("tool-call-start", index=index, delta={"message": {"tool_calls": call}})
        emit("tool-call-end", index=index)
    emit("message-end", delta={"finish_reason": finish, "usage": usage_obj})
    return _sse(events)


def _render(
    api: ApiName, operation: str, path: str, body: dict[str, Any], raw: bytes, reply: Reply
) -> _Rendered:
    if reply.status != 200:
        return _error(reply.status, reply.text or "fake provider error", "api_error")
    usage = _Usage(raw, reply)
    model = str(body.get("model") or "fake-model")
    stream = body.get("stream") is True
    if api == "openai_chat":
        return _render_openai_chat(model, reply, usage, stream, body)
    if api == "openai_responses":
        return _render_openai_responses(model, reply, usage, stream)
    if api == "anthropic":
        if operation == "count_tokens":
            return _json({"input_tokens": usage.input})
        return _render_anthropic(model, reply, usage, stream)
    if api == "gemini":
        m = _GEMINI_RE.search(urlsplit(path).path.rstrip("/"))
        model = m.group("model") if m else model
        if operation == "countTokens":
            return _json({"totalTokens": usage.input})
        query = parse_qs(urlsplit(path).query)
        return _render_gemini(model, reply, usage, operation, query.get("alt") == ["sse"])
    if api == "ollama":
        # The raw Ollama API streams unless told otherwise.
        return _render_ollama(model, reply, usage, body.get("stream", True) is not False)
    return _render_cohere(reply, usage, stream)


# --- server --------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Clients keep connections alive in their pools; stop() closes them itself instead of
    # waiting for handler threads that may sit on an idle keep-alive connection.
    block_on_close = False
    allow_reuse_address = False

    def __init__(self, provider: FakeProvider) -> None:
        self.provider = provider
        self.connections: set[socket.socket] = set()
        self.handler_threads: set[threading.Thread] = set()
        self.conn_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host name with socket.getfqdn, a reverse DNS
        # lookup that can stall for seconds on a machine without a resolver.
        socketserver.TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = int(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    # HTTP/1.1 so the SDKs' keep-alive pools work as against a real API; every answer
    # carries a Content-Length, so no chunked encoding is needed.
    protocol_version = "HTTP/1.1"
    server_version = "budgetware-fake-provider/1"
    sys_version = ""
    # An idle keep-alive connection gives up after this long, so no thread waits forever.
    timeout = 30

    def setup(self) -> None:
        super().setup()
        with self.server.conn_lock:
            self.server.connections.add(self.connection)
            self.server.handler_threads.add(threading.current_thread())

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.conn_lock:
                self.server.connections.discard(self.connection)
                self.server.handler_threads.discard(threading.current_thread())

    def log_message(self, format: str, *args: Any) -> None:
        # Quiet: the default handler writes a line to stderr for every request.
        return

    def do_POST(self) -> None:
        self._serve()

    do_GET = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_POST

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks: list[bytes] = []
            while True:
                size_line = self.rfile.readline(65537)
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    # Trailers end with an empty line.
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline(65537)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self) -> None:
        try:
            raw = self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            self._send(_error(400, "unreadable request body"))
            return
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        detected = detect_api(self.path)
        api = detected[0] if detected else None
        self.server.provider._record(
            RecordedRequest(self.command, self.path, headers, raw, api, time.time())
        )
        self._send(self.server.provider._answer(self.command, self.path, raw, detected))

    def _send(self, rendered: _Rendered) -> None:
        try:
            self.send_response(rendered.status)
            self.send_header("Content-Type", rendered.content_type)
            self.send_header("Content-Length", str(len(rendered.body)))
            if rendered.content_type == "text/event-stream":
                self.send_header("Cache-Control", "no-cache")
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(rendered.body)
            self.wfile.flush()
        except OSError:
            # The client went away mid-answer: nothing to tell it.
            self.close_connection = True


class FakeProvider:
    """A local fake of the LLM provider APIs that records every request.

    Use it as a context manager (``with FakeProvider() as fp:``) or call ``start()`` and
    ``stop()``. Point an SDK at ``fp.url``; read what it sent from ``fp.requests``.
    ``reply`` decides each answer from ``(api, request_json)`` and may be swapped at any
    time through the attribute of the same name.
    """

    def __init__(self, reply: ReplyPolicy | None = None) -> None:
        self.reply: ReplyPolicy = reply or _default_policy
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # lifecycle

    def start(self) -> FakeProvider:
        """Listen on an ephemeral port of 127.0.0.1 and serve from a daemon thread."""
        if self._server is not None:
            return self
        server = _Server(self)
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"FakeProvider:{server.server_address[1]}",
            daemon=True,
        )
        thread.start()
        self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        """Stop serving, drop open keep-alive connections and close the listening socket."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._server = self._thread = None
        server.shutdown()
        with server.conn_lock:
            connections = list(server.connections)
            handlers = list(server.handler_threads)
        for conn in connections:
            # Wakes handler threads blocked on an idle keep-alive connection; they close
            # the socket themselves on the way out.
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for handler in handlers:
            handler.join(timeout=5)
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeProvider is not running: call start() or use `with`")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, without a trailing slash."""
        return f"http://127.0.0.1:{self.port}"

    # recordings

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def last(self) -> RecordedRequest:
        """The most recent request (raises ``LookupError`` when there is none)."""
        with self._lock:
            if not self._requests:
                raise LookupError("the fake provider has received no request")
            return self._requests[-1]

    def clear(self) -> None:
        """Forget the recorded requests."""
        with self._lock:
            self._requests.clear()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _answer(
        self, method: str, path: str, raw: bytes, detected: tuple[ApiName, str] | None
    ) -> _Rendered:
        if detected is None:
            return _error(404, f"no fake endpoint for {method} {urlsplit(path).path}", "not_found")
        if method != "POST":
            return _error(405, f"{method} is not supported on {urlsplit(path).path}")
        api, operation = detected
        try:
            body = json.loads(raw) if raw.strip() else None
        except (ValueError, UnicodeDecodeError):
            return _error(400, "the request body is not valid JSON")
        if not isinstance(body, dict):
            return _error(400, "the request body must be a JSON object")
        try:
            reply = self.reply(api, body)
        except Exception as exc:  # a broken test policy must not hang the SDK call
            return _error(500, f"reply policy failed: {exc!r}", "api_error")
        if isinstance(reply, str):
            reply = Reply(reply)
        return _render(api, operation, path, body, raw, reply)
