"""Bedrock Converse: ``toolResult`` blocks inside user messages."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from budgetware.wire.formats.base import (
    Batch,
    Found,
    collect_text_parts,
    has_content_block,
    text_of,
)

__all__ = ["FORMAT", "BedrockConverse"]

_PATH = re.compile(r"/model/[^/]+/(?:converse|converse-stream)\Z")


def _text_item(item: Mapping[str, Any]) -> str | None:
    return "text" if "text" in item else None


class BedrockConverse:
    """``POST /model/{id}/converse`` and ``/converse-stream``: one user message, one batch;
    ``{"text"}`` items are slots. A signed body is never rewritten."""

    name = "bedrock_converse"
    sniff_markers: tuple[bytes, ...] = (b'"toolResult"',)

    def match_path(self, path: str) -> bool:
        return _PATH.search(path) is not None

    def match_body(self, body: Mapping[str, Any]) -> bool:
        return has_content_block(body, lambda block: isinstance(block.get("toolResult"), dict))

    def batches(self, body: Mapping[str, Any]) -> list[Batch]:
        messages = body.get("messages")
        if not isinstance(messages, list):
            return []
        names: dict[str, str] = {}
        batches: list[Batch] = []
        for index, message in enumerate(messages):
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(content, list):
                continue
            batch: Batch = []
            for position, block in enumerate(content):
                if not isinstance(block, dict):
                    continue
                use = block.get("toolUse")
                if isinstance(use, dict):
                    call_id, name = text_of(use.get("toolUseId")), text_of(use.get("name"))
                    if call_id is not None and name is not None:
                        names[call_id] = name
                result = block.get("toolResult")
                if not isinstance(result, dict):
                    continue
                call_id = text_of(result.get("toolUseId"))
                found = Found(call_id=call_id, tool_name=names.get(call_id or ""))
                collect_text_parts(
                    found,
                    result.get("content"),
                    ("messages", index, "content", position, "toolResult", "content"),
                    is_text=_text_item,
                )
                batch.append(found)
            if any(found.slots for found in batch):
                batches.append(batch)
        return batches


FORMAT = BedrockConverse()
