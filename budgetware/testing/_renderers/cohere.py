"""Answers in the Cohere v2 chat wire format, streamed or not."""

from __future__ import annotations

from typing import Any

from budgetware.testing._apis import Reply, Usage
from budgetware.testing._renderers.common import Rendered, args_json, json_body, sse, uid

__all__ = ["render"]


def render(reply: Reply, usage: Usage, stream: bool) -> Rendered:
    mid = uid("")
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
        return json_body(
            {"id": mid, "finish_reason": finish, "message": message, "usage": usage_obj}
        )
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
    return sse(events)
