"""Answers in the Gemini generateContent and streamGenerateContent wire format, streamed or not."""

from __future__ import annotations

from typing import Any

from budgetware.testing._apis import Reply
from budgetware.testing._renderers.common import Rendered, Usage, json_body, sse, uid

__all__ = ["render"]


def render(model: str, reply: Reply, usage: Usage, method: str, as_sse: bool) -> Rendered:
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
        "responseId": uid("fake-"),
    }
    if method != "streamGenerateContent":
        return json_body(payload)
    if as_sse:
        return sse([(None, payload)])
    # Without alt=sse the real API streams one JSON array of responses.
    return json_body([payload])
