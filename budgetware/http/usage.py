"""The provider's token counters, read from the response of a reported model request as it
passes: every chunk goes on at once and unchanged; only a bounded tail of a JSON body, or of
each SSE line that names the usage, is held. Nothing found (or unreadable) reports nothing.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from budgetware.core.errors import fail_open
from budgetware.core.observe import RequestReport, UsageReport, deliver_usage

__all__ = ["counters", "library_stream", "watch_usage"]

TAIL = 64 * 1024
"""The most held of a body, or of one SSE line: a usage object sits near the end of either."""

APIS = frozenset({"openai_chat", "openai_responses", "anthropic_messages", "gemini"})
# The key of the usage object (Gemini's is usageMetadata).
_KEY = re.compile(rb'"usage(?:Metadata)?"\s*:\s*')
_DECODER = json.JSONDecoder()


def _count(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def counters(api: str, usage: Mapping[str, Any]) -> tuple[int, int, int | None, int | None] | None:
    """(input tokens, the cached included; read from the cache; written to it; output
    tokens) of ``api``'s usage object, or None when it is not one."""
    if api == "anthropic_messages":
        uncached = _count(usage.get("input_tokens"))
        read = _count(usage.get("cache_read_input_tokens") or 0)
        written = _count(usage.get("cache_creation_input_tokens") or 0)
        if uncached is None or read is None or written is None:
            return None
        return uncached + read + written, read, written, _count(usage.get("output_tokens"))
    if api == "gemini":
        total, cached, out = "promptTokenCount", "cachedContentTokenCount", "candidatesTokenCount"
        details = usage
    else:
        chat = api == "openai_chat"
        total = "prompt_tokens" if chat else "input_tokens"
        out = "completion_tokens" if chat else "output_tokens"
        found = usage.get("prompt_tokens_details" if chat else "input_tokens_details")
        details, cached = (found if isinstance(found, Mapping) else {}), "cached_tokens"
    tokens = _count(usage.get(total))
    read = _count(details.get(cached) or 0)
    if tokens is None or read is None:
        return None
    # LiteLLM adds Anthropic's count of what was written to its chat usage.
    written = _count(usage.get("cache_creation_input_tokens"))
    return tokens, read, written, _count(usage.get(out))


def _usages(text: bytes | bytearray, stop: int) -> Iterator[dict[str, Any]]:
    """The usage objects named in ``text[:stop]``, in order. A key inside a JSON string is
    not one: a quote there is escaped."""
    for match in _KEY.finditer(text, 0, stop):
        at = match.start()
        if text[at - 1 : at] != b"\\":
            start = match.end()
            window = bytes(text[start : min(stop, start + TAIL)]).decode("utf-8", "replace")
            try:
                value, _ = _DECODER.raw_decode(window)
            except ValueError:
                value = None
            if isinstance(value, dict):
                yield value


def _joined(out: Any) -> bytes:
    # httpx's decoders return bytes, httpx2's an iterator of them.
    return out if isinstance(out, bytes) else b"".join(out)


def watch_usage(response: Any, report: RequestReport) -> None:
    """Read the usage of ``response`` as the caller reads it, if its request was a model
    call of a known API (never other traffic), and report it when the body ends: at once
    if it was read already."""
    try:
        api = report.api
        if api not in APIS or response.status_code != 200:
            return
        content_type = response.headers.get("content-type", "").lower()
        sse = content_type.startswith("text/event-stream")
        if not (sse or content_type.startswith("application/json")):
            return
        content = getattr(response, "_content", None)  # decoded, once read
        if isinstance(content, bytes):
            read = _WatchedStream(None, report, api, sse, None)
            read._feed(content if sse else content[-TAIL:])
            read._end()
            return
        library = sys.modules.get(type(response).__module__.partition(".")[0])
        if library is not None:
            watched = library_stream("UsageWatchedStream", _WatchedStream, library)
            response.stream = watched(response.stream, report, api, sse, _decoder(response))
    except Exception:
        fail_open("read a response's usage")


def _decoder(response: Any) -> Any:
    """A fresh decoder of the response's content encoding (the library's own), or None."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return None
    probe = type(response)(200, headers={"content-encoding": encoding})
    return probe._get_content_decoder()


@functools.cache
def library_stream(name: str, base: type, library: Any) -> type:
    """``base`` (named ``name``) as a sync and async byte stream of httpx or httpx2."""
    return type(name, (base, library.SyncByteStream, library.AsyncByteStream), {})


class _WatchedStream:
    """Passes the response's raw chunks on as they come, and finds the usage in a copy of
    them: each complete SSE line as it ends, else the last ``TAIL`` bytes."""

    def __init__(
        self, inner: Any, report: RequestReport, api: str, sse: bool, decoder: Any
    ) -> None:
        self._inner = inner
        self._report = report
        self._api = api
        self._sse = sse
        self._decoder = decoder
        self._buf: bytearray | None = bytearray()  # None once ended, or unreadable
        self._found: dict[str, Any] = {}

    # The body ends when it is read to its end, or closed (an SDK stops reading an SSE
    # stream at its last event).

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self._inner:
                self._feed(chunk)
                yield chunk
        finally:
            self._end()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                self._feed(chunk)
                yield chunk
        finally:
            self._end()

    def _feed(self, chunk: bytes) -> None:
        buf = self._buf
        if buf is None:
            return
        try:
            buf += chunk if self._decoder is None else _joined(self._decoder.decode(chunk))
            if self._sse:
                self._scan(buf, buf.rfind(b"\n") + 1)  # the lines ended so far
            if len(buf) > TAIL:
                del buf[:-TAIL]
        except Exception:  # an undecodable body: nothing to report, the caller reads on
            self._buf = None

    def _scan(self, buf: bytearray, stop: int) -> None:
        for usage in _usages(buf, stop):  # a stream's later usage completes an earlier one
            self._found.update((k, v) for k, v in usage.items() if v is not None)
        del buf[:stop]

    def _end(self) -> None:
        buf, self._buf = self._buf, None
        if buf is None:
            return
        try:
            if self._decoder is not None:
                buf += _joined(self._decoder.flush())
            self._scan(buf, len(buf))
        except Exception:  # an undecodable end: nothing to report
            return
        try:
            found = counters(self._api, self._found) if self._found else None
            if found is not None:
                deliver_usage(UsageReport(self._api, *found, request=self._report))
        except Exception:
            fail_open("report a response's usage")

    def close(self) -> None:
        self._end()
        self._inner.close()

    async def aclose(self) -> None:
        self._end()
        await self._inner.aclose()
