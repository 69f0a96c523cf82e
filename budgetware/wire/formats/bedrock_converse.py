"""Bedrock Converse: ``toolResult`` blocks inside user messages."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from budgetware.wire.formats.base import Batch, JsonPath, block_batches, has_content_block

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
        return block_batches(body.get("messages"), _call, _result, _text_item)


def _call(block: dict[str, Any]) -> tuple[object, object] | None:
    use = block.get("toolUse")
    return (use.get("toolUseId"), use.get("name")) if isinstance(use, dict) else None


def _result(block: dict[str, Any]) -> tuple[object, object, JsonPath] | None:
    result = block.get("toolResult")
    if not isinstance(result, dict):
        return None
    return result.get("toolUseId"), result.get("content"), ("toolResult", "content")


FORMAT = BedrockConverse()
