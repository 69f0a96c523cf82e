"""Answers in the Anthropic Messages wire format, streamed or not."""

from __future__ import annotations

from typing import Any

from budgetware.testing._apis import Reply, Usage
from budgetware.testing._renderers.common import Rendered, args_json, json_body, sse, uid

__all__ = ["render"]


def render(model: str, reply: Reply, usage: Usage, stream: bool) -> Rendered:
    mid = uid("msg_")
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
            "input_tokens": usage.uncached_tokens,
            "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens,
            "cache_read_input_tokens": usage.cache_read_tokens,
        },
    }
    if not stream:
        return json_body(message)
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
            delta = {"type": "input_json_delta", "partial_json": args_json(block["input"])}
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
                "usage": {"output_tokens": usage.output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return sse(events)
