"""Anthropic Messages: ``tool_result`` blocks inside user messages."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from budgetware.wire.formats.base import (
    Batch,
    JsonPath,
    block_batches,
    has_content_block,
    text_block,
)

__all__ = ["FORMAT", "AnthropicMessages"]


# The same body on Vertex AI (``:rawPredict``) and Bedrock InvokeModel for an Anthropic model.
_ELSEWHERE = re.compile(
    r"(?:/publishers/anthropic/models/[^/]+:(?:stream)?[rR]awPredict"
    r"|/model/[^/]*anthropic[^/]*/invoke(?:-with-response-stream)?)\Z"
)


class AnthropicMessages:
    """``POST .../v1/messages`` (and ``/count_tokens``, Vertex AI, Bedrock): a batch is one
    user message's ``tool_result`` blocks; only their text blocks are slots."""

    name = "anthropic_messages"
    sniff_markers: tuple[bytes, ...] = (b'"tool_result"',)

    def match_path(self, path: str) -> bool:
        return path.endswith(("/v1/messages", "/v1/messages/count_tokens")) or bool(
            _ELSEWHERE.search(path)
        )

    def match_body(self, body: Mapping[str, Any]) -> bool:
        return has_content_block(body, lambda block: block.get("type") == "tool_result")

    def batches(self, body: Mapping[str, Any]) -> list[Batch]:
        return block_batches(body.get("messages"), _call, _result, text_block)


def _call(block: dict[str, Any]) -> tuple[object, object] | None:
    return (block.get("id"), block.get("name")) if block.get("type") == "tool_use" else None


def _result(block: dict[str, Any]) -> tuple[object, object, JsonPath] | None:
    if block.get("type") != "tool_result":
        return None
    return block.get("tool_use_id"), block.get("content"), ("content",)


FORMAT = AnthropicMessages()
