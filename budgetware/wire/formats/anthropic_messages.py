"""Anthropic Messages: ``tool_result`` blocks inside user messages."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from budgetware.wire.formats.base import (
    Batch,
    Found,
    collect_text_parts,
    has_content_block,
    text_block,
    text_of,
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
        messages = body.get("messages")
        if not isinstance(messages, list):
            return []
        names: dict[str, str] = {}
        batches: list[Batch] = []
        for index, message in enumerate(messages):
            if not isinstance(message, dict):
                continue
            content = message.get("content")
            if not isinstance(content, list):
                continue
            if message.get("role") == "assistant":
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        call_id, name = text_of(block.get("id")), text_of(block.get("name"))
                        if call_id is not None and name is not None:
                            names[call_id] = name
                continue
            batch: Batch = []
            for position, block in enumerate(content):
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                call_id = text_of(block.get("tool_use_id"))
                found = Found(call_id=call_id, tool_name=names.get(call_id or ""))
                collect_text_parts(
                    found,
                    block.get("content"),
                    ("messages", index, "content", position, "content"),
                    is_text=text_block,
                )
                batch.append(found)
            if any(found.slots for found in batch):
                batches.append(batch)
        return batches


FORMAT = AnthropicMessages()
