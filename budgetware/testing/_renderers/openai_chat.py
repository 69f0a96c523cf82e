"""Answers in the OpenAI Chat Completions wire format (also Mistral, vLLM, most gateways)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from budgetware.testing._apis import Reply, Usage
from budgetware.testing._renderers.common import Rendered, args_json, json_body, sse, uid

__all__ = ["render"]


def render(
    model: str, reply: Reply, usage: Usage, stream: bool, body: Mapping[str, Any]
) -> Rendered:
    created = int(time.time())
    cid = uid("chatcmpl-")
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
        return json_body(
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
    return sse(events, done_marker=True)
