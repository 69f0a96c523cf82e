"""OpenAI Chat Completions (and every OpenAI-compatible endpoint): role "tool" messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from budgetware.wire.formats.base import Batch, chat_tool_batches

__all__ = ["FORMAT", "OpenAIChat"]


class OpenAIChat:
    """``POST .../chat/completions``: a batch is a run of consecutive tool (or legacy
    function) messages."""

    name = "openai_chat"
    sniff_markers: tuple[bytes, ...] = (b'"tool"', b'"function"')

    def match_path(self, path: str) -> bool:
        return path.endswith("/chat/completions")

    def match_body(self, body: Mapping[str, Any]) -> bool:
        messages = body.get("messages")
        return isinstance(messages, list) and any(
            isinstance(m, dict) and m.get("role") in ("tool", "function") for m in messages
        )

    def batches(self, body: Mapping[str, Any]) -> list[Batch]:
        return chat_tool_batches(body.get("messages"), tool_roles=("tool", "function"))


FORMAT = OpenAIChat()
