"""Answers in the Gemini generateContent and streamGenerateContent wire format, streamed or not."""

from __future__ import annotations

from typing import Any

from budgetware.testing._apis import Reply, Usage
from budgetware.testing._renderers.common import Rendered, json_body, sse, uid

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
            "promptTokenCount": usage.input_tokens,
            "candidatesTokenCount": usage.output_tokens,
            "totalTokenCount": usage.input_tokens + usage.output_tokens,
            # Like the real API: the field is there only when something was read from the cache.
            **(
                {"cachedContentTokenCount": usage.cache_read_tokens}
                if usage.cache_read_tokens
                else {}
            ),
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
