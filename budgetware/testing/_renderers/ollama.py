"""Answers in the Ollama /api/chat wire format, streamed or not."""

from __future__ import annotations

import time
from typing import Any

from budgetware.testing._apis import Reply, Usage
from budgetware.testing._renderers.common import Rendered, json_body, ndjson

__all__ = ["render"]


def render(model: str, reply: Reply, usage: Usage, stream: bool) -> Rendered:
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
        return json_body(final)
    first = {"model": model, "created_at": created_at, "message": message, "done": False}
    last = {**final, "message": {"role": "assistant", "content": ""}}
    return ndjson([first, last])
