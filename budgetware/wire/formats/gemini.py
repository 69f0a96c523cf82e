"""Gemini generateContent: ``functionResponse`` parts, in camelCase or snake_case."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from budgetware.wire.formats.base import Batch, Found, has_content_block, text_of

__all__ = ["FORMAT", "Gemini"]

_SPELLINGS = ("functionResponse", "function_response")
# The documented text slots of a function response, and litellm's wrapper for a string.
_TEXT_KEYS = ("output", "error", "content")
_ENDPOINTS = (":generateContent", ":streamGenerateContent", ":countTokens")


class Gemini:
    """``POST .../models/{m}:generateContent`` (and stream, countTokens): a batch is the
    function responses of one content; string ``output``, ``error``, ``content`` are slots."""

    name = "gemini"
    sniff_markers: tuple[bytes, ...] = (b"functionResponse", b"function_response")

    def match_path(self, path: str) -> bool:
        return path.endswith(_ENDPOINTS)

    def match_body(self, body: Mapping[str, Any]) -> bool:
        return has_content_block(
            body, lambda part: any(k in part for k in _SPELLINGS), "contents", "parts"
        )

    def batches(self, body: Mapping[str, Any]) -> list[Batch]:
        contents = body.get("contents")
        if not isinstance(contents, list):
            return []
        batches: list[Batch] = []
        for index, content in enumerate(contents):
            parts = content.get("parts") if isinstance(content, dict) else None
            if not isinstance(parts, list):
                continue
            batch: Batch = []
            for position, part in enumerate(parts):
                if not isinstance(part, dict):
                    continue
                key = next((k for k in _SPELLINGS if isinstance(part.get(k), dict)), None)
                if key is None:
                    continue
                call: dict[str, Any] = part[key]
                found = Found(call_id=text_of(call.get("id")), tool_name=text_of(call.get("name")))
                response = call.get("response")
                base = ("contents", index, "parts", position, key, "response")
                if isinstance(response, dict):
                    for name, value in response.items():
                        if name in _TEXT_KEYS and isinstance(value, str):
                            found.slot((*base, name), value)
                        else:
                            found.parts.append(value)
                elif response is not None:
                    found.parts.append(response)
                media = call.get("parts")
                if media is not None:
                    found.parts.append(media)
                batch.append(found)
            if any(found.slots for found in batch):
                batches.append(batch)
        return batches


FORMAT = Gemini()
