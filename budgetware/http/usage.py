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

__all__ = ["counters", "watch_usage"]

TAIL = 64 * 1024
"""The most held of a body, or of one SSE line: a usage object sits near the end of either."""

APIS = frozenset({"openai_chat", "openai_responses", "anthropic_messages", "gemini"})
# The key of the usage object (Gemini's is usageMetadata), never inside a JSON string:
# a quote there is escaped.
_KEY = re.compile(rb'(?<!\\)"usage(?:Metadata)?"\s*:\s*')
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


def _usage_in(text: bytes | bytearray) -> dict[str, Any] | None:
    """The last usage object named in ``text`` (a tail: it may start anywhere)."""
    for match in reversed(list(_KEY.finditer(text))):
        rest = bytes(text[match.end() :]).decode("utf-8", "replace")
        try:
            value, _ = _DECODER.raw_decode(rest)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


class _Scanner:
    """Finds the usage in a body fed chunk by chunk, holding at most ``TAIL`` bytes."""

    def __init__(self, sse: bool, decoder: Any) -> None:
        self.sse = sse
        self.decoder = decoder
        self.buf = bytearray()
        self.found: dict[str, Any] = {}

    def feed(self, chunk: bytes) -> None:
        self.buf += chunk if self.decoder is None else _joined(self.decoder.decode(chunk))
        if self.sse:
            end = self.buf.rfind(b"\n")
            if end >= 0:
                for line in self.buf[:end].split(b"\n"):
                    self._line(line)
                del self.buf[: end + 1]
        if len(self.buf) > TAIL:
            del self.buf[:-TAIL]

    def finish(self) -> dict[str, Any]:
        if self.decoder is not None:
            self.buf += _joined(self.decoder.flush())
        self._line(self.buf)
        return self.found

    def _line(self, line: bytes | bytearray) -> None:
        if _KEY.search(line) is None:
            return
        usage = _usage_in(line)
        if usage is not None:  # a stream's later usage completes or corrects an earlier one
            self.found.update((k, v) for k, v in usage.items() if v is not None)


def _joined(out: Any) -> bytes:
    # httpx's decoders return bytes, httpx2's an iterator of them.
    return out if isinstance(out, bytes) else b"".join(out)


def watch_usage(response: Any, report: RequestReport) -> None:
    """Read the usage of ``response`` (to the request of ``report``) as the caller reads it,
    and report it when the body ends: at once if it was read already. The request's API is
    looked up only once a usage object was found."""
    try:
        known = report._api  # a function until someone asks
        if (not callable(known) and known not in APIS) or response.status_code != 200:
            return
        content_type = response.headers.get("content-type", "").lower()
        sse = content_type.startswith("text/event-stream")
        if not (sse or content_type.startswith("application/json")):
            return
        content = getattr(response, "_content", None)  # decoded, once read
        if isinstance(content, bytes):
            scanner = _Scanner(sse, None)
            scanner.feed(content[-TAIL:] if not sse else content)
            _report(scanner.finish(), report)
            return
        library = sys.modules.get(type(response).__module__.partition(".")[0])
        if library is None:
            return
        stream = _stream_class(library)(response.stream, _Scanner(sse, _decoder(response)))
        stream.report = report
        response.stream = stream
    except Exception:
        fail_open("read a response's usage")


def _decoder(response: Any) -> Any:
    """A fresh decoder of the response's content encoding (the library's own), or None."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return None
    probe = type(response)(200, headers={"content-encoding": encoding})
    return probe._get_content_decoder()


def _report(usage: Mapping[str, Any], report: RequestReport) -> None:
    if not usage:
        return
    api = report.api
    found = counters(api, usage) if api in APIS else None
    if found is not None:
        deliver_usage(UsageReport(str(api), *found, request=report))


@functools.cache
def _stream_class(library: Any) -> type[_WatchedStream]:
    """A byte stream of the response's own library (httpx or httpx2), sync and async."""
    bases = (_WatchedStream, library.SyncByteStream, library.AsyncByteStream)
    return type("UsageWatchedStream", bases, {})


class _WatchedStream:
    """Passes the response's raw chunks on as they come, feeding a copy to the scanner."""

    report: RequestReport

    def __init__(self, inner: Any, scanner: _Scanner) -> None:
        self._inner = inner
        self._scanner: _Scanner | None = scanner

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
        scanner = self._scanner
        if scanner is None:
            return
        try:
            scanner.feed(chunk)
        except Exception:  # an undecodable body: nothing to report, the caller reads on
            self._scanner = None

    def _end(self) -> None:
        scanner, self._scanner = self._scanner, None
        try:
            usage = scanner.finish() if scanner is not None else {}
        except Exception:  # an undecodable end: nothing to report
            return
        try:
            _report(usage, self.report)
        except Exception:
            fail_open("report a response's usage")

    def close(self) -> None:
        self._end()
        self._inner.close()

    async def aclose(self) -> None:
        self._end()
        await self._inner.aclose()
