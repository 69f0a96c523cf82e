"""What every renderer shares: the rendered answer, JSON, SSE and NDJSON bodies, ids."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Rendered", "args_json", "dumps", "error", "json_body", "ndjson", "sse", "uid"]


@dataclass(frozen=True)
class Rendered:
    """One answer: status, content type and the exact body bytes."""

    status: int
    content_type: str
    body: bytes


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def json_body(value: Any, status: int = 200) -> Rendered:
    return Rendered(status, "application/json", dumps(value))


def sse(events: Iterable[tuple[str | None, Any]], *, done_marker: bool = False) -> Rendered:
    parts: list[bytes] = []
    for event, data in events:
        head = f"event: {event}\n".encode() if event else b""
        parts.append(head + b"data: " + dumps(data) + b"\n\n")
    if done_marker:
        parts.append(b"data: [DONE]\n\n")
    return Rendered(200, "text/event-stream", b"".join(parts))


def ndjson(lines: Iterable[Any]) -> Rendered:
    return Rendered(200, "application/x-ndjson", b"".join(dumps(x) + b"\n" for x in lines))


def error(status: int, message: str, kind: str = "invalid_request_error") -> Rendered:
    # One shape every SDK turns into its own error: OpenAI's "error", Anthropic's "type".
    return json_body(
        {"type": "error", "error": {"type": kind, "message": message, "code": status}},
        status,
    )


def args_json(args: Mapping[str, Any]) -> str:
    return json.dumps(dict(args), ensure_ascii=False, separators=(",", ":"))


def uid(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"
