"""Cohere v2 ``/v2/chat``: role "tool" messages with text or document content items."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from budgetware.wire.formats.base import Batch, chat_tool_batches

__all__ = ["FORMAT", "CohereV2"]


class CohereV2:
    """``POST /v2/chat``: a batch is a run of consecutive tool messages; text items are slots."""

    name = "cohere_v2"
    sniff_markers: tuple[bytes, ...] = (b'"tool"',)

    def match_path(self, path: str) -> bool:
        return path.endswith("/v2/chat")

    def match_body(self, body: Mapping[str, Any]) -> bool:
        return False  # an OpenAI chat body's shape: by path only

    def batches(self, body: Mapping[str, Any]) -> list[Batch]:
        return chat_tool_batches(body.get("messages"))


FORMAT = CohereV2()
