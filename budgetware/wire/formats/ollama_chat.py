"""Ollama ``/api/chat``: role "tool" messages named by ``tool_name`` (SDK) or call id."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from budgetware.wire.formats.base import Batch, chat_tool_batches

__all__ = ["FORMAT", "OllamaChat"]


class OllamaChat:
    """``POST /api/chat``: a batch is a run of consecutive tool messages."""

    name = "ollama_chat"
    sniff_markers: tuple[bytes, ...] = (b'"tool"',)

    def match_path(self, path: str) -> bool:
        return path.endswith("/api/chat")

    def match_body(self, body: Mapping[str, Any]) -> bool:
        return False  # an OpenAI chat body's shape: by path only

    def batches(self, body: Mapping[str, Any]) -> list[Batch]:
        return chat_tool_batches(body.get("messages"), media_keys=("images",))


FORMAT = OllamaChat()
