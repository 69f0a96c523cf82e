"""Chat-style formats: runs of tool messages (OpenAI Chat Completions and every
OpenAI-compatible endpoint, Ollama ``/api/chat``, Cohere v2 ``/v2/chat``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from budgetware.wire.formats.base import Batch, Found, collect_text_parts, text_block, text_of

__all__ = ["COHERE_V2", "OLLAMA_CHAT", "OPENAI_CHAT", "ChatFormat"]


class ChatFormat:
    """``POST`` to a path ending in ``suffix``: a batch is a run of consecutive messages of a
    tool role, named by their own ``tool_name`` / ``name`` or the assistant's matching call;
    text parts are slots, the ``media_keys`` of a message are kept with it."""

    def __init__(
        self,
        name: str,
        suffix: str,
        tool_roles: tuple[str, ...] = ("tool",),
        media_keys: tuple[str, ...] = (),
        *,
        sniffed: bool = False,
    ) -> None:
        self.name = name
        self.suffix = suffix
        self.tool_roles = tool_roles
        self.sniff_markers = tuple(f'"{role}"'.encode() for role in tool_roles)
        self.media_keys = media_keys
        self.sniffed = sniffed

    def match_path(self, path: str) -> bool:
        return path.endswith(self.suffix)

    def match_body(self, body: Mapping[str, Any]) -> bool:
        # Ollama's and Cohere's bodies have OpenAI chat's shape: those go by path only.
        messages = body.get("messages")
        return (
            self.sniffed
            and isinstance(messages, list)
            and any(isinstance(m, dict) and m.get("role") in self.tool_roles for m in messages)
        )

    def batches(self, body: Mapping[str, Any]) -> list[Batch]:
        messages = body.get("messages")
        if not isinstance(messages, list):
            return []
        names: dict[str, str] = {}
        batches: list[Batch] = []
        run: Batch | None = None
        for index, message in enumerate(messages):
            if not isinstance(message, dict):
                run = None
                continue
            role = message.get("role")
            if role not in self.tool_roles:
                run = None
                if role == "assistant":
                    _remember_call_names(message.get("tool_calls"), names)
                continue
            call_id = text_of(message.get("tool_call_id"))
            name = text_of(message.get("tool_name")) or text_of(message.get("name"))
            if name is None and call_id is not None:
                name = names.get(call_id)
            found = Found(call_id=call_id, tool_name=name)
            path = ("messages", index, "content")
            collect_text_parts(found, message.get("content"), path, is_text=text_block)
            found.parts.extend(message[key] for key in self.media_keys if key in message)
            if run is None:
                run = []
                batches.append(run)
            run.append(found)
        return [batch for batch in batches if any(found.slots for found in batch)]


def _remember_call_names(calls: object, names: dict[str, str]) -> None:
    if not isinstance(calls, list):
        return
    for call in calls:
        if not isinstance(call, dict):
            continue
        call_id = text_of(call.get("id"))
        spec = call.get("function") or call.get("custom")
        name = text_of(spec.get("name")) if isinstance(spec, dict) else None
        if call_id is not None and name is not None:
            names[call_id] = name


# Legacy "function" messages too.
OPENAI_CHAT = ChatFormat("openai_chat", "/chat/completions", ("tool", "function"), sniffed=True)
OLLAMA_CHAT = ChatFormat("ollama_chat", "/api/chat", media_keys=("images",))
COHERE_V2 = ChatFormat("cohere_v2", "/v2/chat")
