"""The fake model's reply in the wire format of each provider API, streamed or not."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from budgetware.testing._apis import GEMINI_PATH, ApiName, Reply, Usage

__all__ = ["Rendered", "args_json", "error", "model_of", "render"]


@dataclass(frozen=True)
class Rendered:
    """One answer: status, content type and the exact body bytes."""

    status: int
    content_type: str
    body: bytes


def model_of(api: ApiName, path: str, body: Mapping[str, Any]) -> str:
    """The model a request names (Gemini names it in the path)."""
    m = GEMINI_PATH.search(urlsplit(path).path.rstrip("/")) if api == "gemini" else None
    return m.group("model") if m else str(body.get("model") or "fake-model")


def render(
    api: ApiName, operation: str, path: str, body: dict[str, Any], reply: Reply, usage: Usage
) -> Rendered:
    """The answer to a model request (or a token count) in the API's own format."""
    model = model_of(api, path, body)
    stream = body.get("stream") is True
    if api == "openai_chat":
        return _openai_chat(model, reply, usage, stream, body)
    if api == "openai_responses":
        return _openai_responses(model, reply, usage, stream)
    if api == "anthropic":
        if operation == "count_tokens":
            return _json({"input_tokens": usage.input_tokens})
        return _anthropic(model, reply, usage, stream)
    if api == "gemini":
        if operation == "countTokens":
            return _json({"totalTokens": usage.input_tokens})
        query = parse_qs(urlsplit(path).query)
        return _gemini(model, reply, usage, operation, query.get("alt") == ["sse"])
    if api == "ollama":  # streams unless told otherwise
        return _ollama(model, reply, usage, body.get("stream", True) is not False)
    return _cohere(reply, usage, stream)


# --- bodies ---


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _json(value: Any, status: int = 200) -> Rendered:
    return Rendered(status, "application/json", _dumps(value))


def _sse(events: Iterable[tuple[str | None, Any]], *, done_marker: bool = False) -> Rendered:
    parts: list[bytes] = []
    for event, data in events:
        head = f"event: {event}\n".encode() if event else b""
        parts.append(head + b"data: " + _dumps(data) + b"\n\n")
    if done_marker:
        parts.append(b"data: [DONE]\n\n")
    return Rendered(200, "text/event-stream", b"".join(parts))


def error(status: int, message: str, kind: str = "invalid_request_error") -> Rendered:
    """An error answer, in one shape every SDK turns into its own error: OpenAI's ``error``,
    Anthropic's ``type``."""
    return _json(
        {"type": "error", "error": {"type": kind, "message": message, "code": status}},
        status,
    )


def args_json(args: Mapping[str, Any]) -> str:
    return json.dumps(dict(args), ensure_ascii=False, separators=(",", ":"))


def _uid(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


# --- OpenAI Chat Completions (also Mistral, vLLM, most gateways) ---


def _openai_chat(
    model: str, reply: Reply, usage: Usage, stream: bool, body: Mapping[str, Any]
) -> Rendered:
    created = int(time.time())
    cid = _uid("chatcmpl-")
    finish = "tool_calls" if reply.tool_calls else "stop"
    usage_obj = {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens, "audio_tokens": 0},
    }
    calls = [
        {"id": cid_, "type": "function", "function": {"name": name, "arguments": args_json(a)}}
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

    chunks = [chunk({"role": "assistant", "content": ""})]
    if reply.text:
        chunks.append(chunk({"content": reply.text}))
    chunks += [chunk({"tool_calls": [{"index": i, **call}]}) for i, call in enumerate(calls)]
    chunks.append(chunk({}, finish))
    stream_options = body.get("stream_options")
    if isinstance(stream_options, Mapping) and stream_options.get("include_usage"):
        chunks.append({**chunk({}), "choices": [], "usage": usage_obj})
    return _sse(((None, data) for data in chunks), done_marker=True)


# --- OpenAI Responses ---


def _openai_responses(model: str, reply: Reply, usage: Usage, stream: bool) -> Rendered:
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
                "arguments": args_json(args),
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
                "input_tokens": usage.input_tokens,
                "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.input_tokens + usage.output_tokens,
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
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            part = item["content"][0]
            text = part["text"]
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            emit("response.content_part.added", **at, content_index=0, part={**part, "text": ""})
            emit("response.output_text.delta", **at, content_index=0, delta=text, logprobs=[])
            emit("response.output_text.done", **at, content_index=0, text=text, logprobs=[])
            emit("response.content_part.done", **at, content_index=0, part=part)
        else:
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            arguments = item["arguments"]
            emit("response.function_call_arguments.delta", **at, delta=arguments)
            emit(
                "response.function_call_arguments.done",
                **at,
                name=item["name"],
                arguments=arguments,
            )
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=response("completed", output))
    return _sse(events)


# --- Anthropic Messages ---


def _anthropic(model: str, reply: Reply, usage: Usage, stream: bool) -> Rendered:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call_id, name, args in reply.tool_calls:
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": dict(args)})
    stop_reason = "tool_use" if reply.tool_calls else "end_turn"
    message: dict[str, Any] = {
        "id": _uid("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.uncached_tokens,
            "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens,
            "cache_read_input_tokens": usage.cache_read_tokens,
        },
    }
    if not stream:
        return _json(message)
    events: list[tuple[str | None, Any]] = []

    def emit(kind: str, **data: Any) -> None:
        events.append((kind, {"type": kind, **data}))

    started = {**message, "content": [], "stop_reason": None}
    emit("message_start", message={**started, "usage": {**message["usage"], "output_tokens": 1}})
    for index, block in enumerate(content):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": args_json(block["input"])}
        emit("content_block_start", index=index, content_block=start)
        emit("content_block_delta", index=index, delta=delta)
        emit("content_block_stop", index=index)
    emit(
        "message_delta",
        delta={"stop_reason": stop_reason, "stop_sequence": None},
        usage={"output_tokens": usage.output_tokens},
    )
    emit("message_stop")
    return _sse(events)


# --- Gemini generateContent and streamGenerateContent ---


def _gemini(model: str, reply: Reply, usage: Usage, method: str, as_sse: bool) -> Rendered:
    parts: list[dict[str, Any]] = []
    if reply.text:
        parts.append({"text": reply.text})
    for call_id, name, args in reply.tool_calls:
        parts.append({"functionCall": {"id": call_id, "name": name, "args": dict(args)}})
    counts = {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": usage.input_tokens + usage.output_tokens,
    }
    if usage.cache_read_tokens:  # like the real API: only when something was read
        counts["cachedContentTokenCount"] = usage.cache_read_tokens
    payload = {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": counts,
        "modelVersion": model,
        "responseId": _uid("fake-"),
    }
    if method != "streamGenerateContent":
        return _json(payload)
    if as_sse:
        return _sse([(None, payload)])
    # Without alt=sse the real API streams one JSON array of responses.
    return _json([payload])


# --- Ollama /api/chat ---


def _ollama(model: str, reply: Reply, usage: Usage, stream: bool) -> Rendered:
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
        "prompt_eval_count": usage.input_tokens,
        "prompt_eval_duration": 100,
        "eval_count": usage.output_tokens,
        "eval_duration": 100,
    }
    if not stream:
        return _json(final)
    first = {"model": model, "created_at": created_at, "message": message, "done": False}
    last = {**final, "message": {"role": "assistant", "content": ""}}
    return Rendered(200, "application/x-ndjson", _dumps(first) + b"\n" + _dumps(last) + b"\n")


# --- Cohere v2 chat ---


def _cohere(reply: Reply, usage: Usage, stream: bool) -> Rendered:
    mid = _uid("")
    message: dict[str, Any] = {"role": "assistant"}
    if reply.text and not reply.tool_calls:
        message["content"] = [{"type": "text", "text": reply.text}]
    if reply.tool_calls:
        if reply.text:
            message["tool_plan"] = reply.text
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args_json(a)}}
            for cid, name, a in reply.tool_calls
        ]
    finish = "TOOL_CALL" if reply.tool_calls else "COMPLETE"
    tokens = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    usage_obj = {"billed_units": tokens, "tokens": tokens}
    if not stream:
        return _json({"id": mid, "finish_reason": finish, "message": message, "usage": usage_obj})
    events: list[tuple[str | None, Any]] = []

    def emit(kind: str, **data: Any) -> None:
        events.append((kind, {"type": kind, **data}))

    emit("message-start", id=mid, delta={"message": {"role": "assistant"}})
    if "content" in message:
        text_start = {"message": {"content": {"type": "text", "text": ""}}}
        emit("content-start", index=0, delta=text_start)
        emit("content-delta", index=0, delta={"message": {"content": {"text": reply.text}}})
        emit("content-end", index=0)
    if "tool_plan" in message:
        emit("tool-plan-delta", delta={"message": {"tool_plan": reply.text}})
    for index, call in enumerate(message.get("tool_calls", [])):
        emit("tool-call-start", index=index, delta={"message": {"tool_calls": call}})
        emit("tool-call-end", index=index)
    emit("message-end", delta={"finish_reason": finish, "usage": usage_obj})
    return _sse(events)
