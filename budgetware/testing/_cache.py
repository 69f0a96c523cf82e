"""Prompt caching as the providers do it, one cache per FakeProvider (one organization).

The prompt is rendered canonically in the order the provider reads it (tools, system,
messages), 4 bytes of UTF-8 a token, so two requests share a cached prefix exactly when
their renderings share it. An entry is the hash of a prefix (the model's name first) with
its time to live, refreshed by every hit.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

from budgetware.testing._apis import ApiName

__all__ = ["BYTES_PER_TOKEN", "Block", "PromptCache", "prompt_blocks"]

BYTES_PER_TOKEN: Final = 4
MIN_TOKENS: Final = 1024
"""The shortest prefix cached (OpenAI, Gemini Flash, Anthropic's Sonnet and Opus)."""
STEP: Final = 128
"""OpenAI caches (and this fake, for Gemini too) in steps of this many tokens."""
LOOKBACK: Final = 20
"""Anthropic looks for an earlier written prefix at this many block boundaries before a
breakpoint."""
MAX_BREAKPOINTS: Final = 4
TTLS: Final = {"5m": 300.0, "1h": 3600.0}
_AUTOMATIC_TTL: Final = 300.0

Block = tuple[bytes, "str | None"]
"""A block of the prompt as rendered, and the TTL of the cache breakpoint it ends, if any."""


def _canonical(value: Any) -> bytes:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def prompt_blocks(api: ApiName, body: Mapping[str, Any]) -> list[Block]:
    """The prompt of ``body`` block by block, in the order the provider reads it."""
    if api == "anthropic":
        return _anthropic_blocks(body)
    tools = _list(body.get("tools"))
    if api == "gemini":
        system = body.get("systemInstruction", body.get("system_instruction"))
        parts = [*tools, system, *_list(body.get("contents"))]
    elif api == "openai_responses":
        given = body.get("input")
        parts = [
            *tools,
            body.get("instructions"),
            *(given if isinstance(given, list) else [given]),
        ]
    else:
        parts = [*tools, *_list(body.get("messages"))]
    return [(_canonical(part), None) for part in parts if part is not None]


def _anthropic_blocks(body: Mapping[str, Any]) -> list[Block]:
    blocks: list[Block] = []

    def add(block: Any, head: bytes = b"") -> None:
        ttl = None
        if isinstance(block, dict) and "cache_control" in block:
            control = block["cache_control"]
            if isinstance(control, dict):
                ttl = str(control.get("ttl", "5m"))
            block = {key: value for key, value in block.items() if key != "cache_control"}
        blocks.append((head + _canonical(block), ttl))

    def text_blocks(value: Any) -> list[Any]:
        return [{"type": "text", "text": value}] if isinstance(value, str) else _list(value)

    for tool in _list(body.get("tools")):
        add(tool)
    for block in text_blocks(body.get("system")):
        add(block)
    for message in _list(body.get("messages")):
        if not isinstance(message, dict):
            continue
        head = _canonical({"role": message.get("role")})
        content = text_blocks(message.get("content"))
        if not content:
            blocks.append((head, None))
        for index, block in enumerate(content):
            add(block, b"" if index else head)
    control = body.get("cache_control")  # automatic caching: a breakpoint on the last block
    if isinstance(control, dict) and blocks and blocks[-1][1] is None:
        blocks[-1] = (blocks[-1][0], str(control.get("ttl", "5m")))
    return blocks


class PromptCache:
    """The live prefixes of one organization and when each expires; thread-safe."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._entries: dict[bytes, tuple[float, float]] = {}  # digest: (expires at, ttl)

    def automatic(self, model: str, prompt: bytes) -> int:
        """OpenAI's and Gemini's caching: how many tokens of ``prompt`` were read from the
        cache (a prefix of at least 1,024 tokens, in steps of 128). The prompt is cached."""
        digest = hashlib.sha256(model.encode())
        view = memoryview(prompt)
        steps: list[tuple[int, bytes]] = []
        done = 0
        for tokens in range(MIN_TOKENS, len(prompt) // BYTES_PER_TOKEN + 1, STEP):
            end = tokens * BYTES_PER_TOKEN
            digest.update(view[done:end])
            done = end
            steps.append((tokens, digest.digest()))
        with self._lock:
            now = self.clock()
            read = 0
            for tokens, key in steps:
                if not self._hit(key, now):
                    break
                read = tokens
            for _, key in steps:
                self._entries[key] = (now + _AUTOMATIC_TTL, _AUTOMATIC_TTL)
        return read

    def explicit(self, model: str, blocks: list[Block]) -> tuple[int, int]:
        """Anthropic's caching: (tokens read, tokens written) for a prompt whose blocks mark
        breakpoints. Each breakpoint reads the longest live prefix ending at it or at one of
        the 20 block boundaries before it, and writes the prefix it ends."""
        digest = hashlib.sha256(model.encode())
        ends: list[int] = []
        keys: list[bytes] = []
        size = 0
        for data, _ in blocks:
            digest.update(data)
            size += len(data)
            ends.append(size // BYTES_PER_TOKEN)
            keys.append(digest.digest())
        breakpoints = [index for index, (_, ttl) in enumerate(blocks) if ttl is not None]
        with self._lock:
            now = self.clock()
            hit = -1
            for point in breakpoints:
                for index in range(point, max(point - LOOKBACK, 0) - 1, -1):
                    if index <= hit:
                        break
                    if self._hit(keys[index], now):
                        hit = index
                        break
            read = ends[hit] if hit >= 0 else 0
            written = read
            for point in breakpoints:
                if point > hit and ends[point] >= MIN_TOKENS:
                    ttl = TTLS[str(blocks[point][1])]
                    self._entries[keys[point]] = (now + ttl, ttl)
                    written = max(written, ends[point])
        return read, written - read

    def _hit(self, key: bytes, now: float) -> bool:
        entry = self._entries.get(key)
        if entry is None:
            return False
        if entry[0] <= now:
            del self._entries[key]
            return False
        self._entries[key] = (now + entry[1], entry[1])  # a hit refreshes its time to live
        return True
