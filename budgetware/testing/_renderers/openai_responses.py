"""Answers in the OpenAI Responses wire format, streamed or not."""

from __future__ import annotations

import time
from typing import Any

from budgetware.testing._apis import Reply, Usage
from budgetware.testing._renderers.common import (
    Rendered,
    args_json,
    json_body,
    sse,
    uid,
)

__all__ = ["render"]


def render(model: str, reply: Reply, usage: Usage, stream: bool) -> Rendered:
    rid = uid("resp_")
    created = int(time.time())
    output: list[dict[str, Any]] = []
    if reply.text:
        output.append(
            {
                "type": "message",
                "id": uid("msg_"),
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
        return json_body(response("completed", output))

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
    return sse(events)
