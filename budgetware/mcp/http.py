"""The HTTP-level MCP producer boundary: bound ``tools/call`` results in JSON and SSE
responses of httpx or httpx2 (duck typed). Importing it registers ``rewrite_mcp_response``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from functools import partial
from typing import Any

from budgetware.core.artifacts import ArtifactStore
from budgetware.core.config import BudgetConfig, resolve_config
from budgetware.core.errors import fail_open
from budgetware.core.finalize import preview_options
from budgetware.core.gil import give_way
from budgetware.core.jsonio import compact_literal, dumps_bytes, dumps_faithful
from budgetware.http.headers import request_settings
from budgetware.http.hooks import entry_config, register_response_rewriter
from budgetware.http.transport import library_of_class
from budgetware.http.usage import library_stream
from budgetware.mcp.bound import (
    SSE_FRAMING_RESERVE,
    bound_tool_result,
    names_server,
    result_budget_for,
)
from budgetware.mcp.pieces import LONG_STRING_BYTES, loads_in_pieces, loads_outline
from budgetware.store.select import store_for_config
from budgetware.wire.splice import patch_json

__all__ = ["bound_arguments", "response_may_wait", "rewrite_mcp_response"]


# Set on a response this module produced, so a second layer (transport and send) skips it.
EXTENSION = "budgetware_mcp"
_TOOLS_CALL = b'"tools/call"'
_DROP_HEADERS = ("content-encoding", "content-length", "transfer-encoding")


def rewrite_mcp_response(
    request: Any,
    response: Any,
    *,
    server: str | None = None,
    store: ArtifactStore | None = None,
    config: BudgetConfig | None = None,
) -> Any:
    """The response with its ``tools/call`` result bounded; the same object otherwise.

    Only a 200 JSON or SSE answer to a POSTed ``tools/call`` is touched; a stream's events
    go through as they complete, only the result's event rewritten. The new response is
    decoded (no ``Content-Encoding`` or ``Content-Length``). Settings: ``config`` (default:
    the delivering entry point's) < ``budget(...)`` blocks < ``x-budgetware-*`` headers.
    """
    call = _tools_call(request, response)
    if call is None:
        return response
    effective = None
    try:
        effective = _effective(entry_config() if config is None else config, request)
        limit = _result_budget(effective, server, request, call[1])
        max_bytes = effective.mcp_max_message_bytes
        if limit <= 0 and max_bytes <= 0:
            return response
        bound = partial(bound_response_message, **bound_arguments(effective, store, limit))
        if response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            transform = partial(_SseTransform, call[0], bound, max_bytes, effective)
            return _replace(response, transform)
        return _replace(response, partial(_JsonTransform, call[0], bound, effective))
    except Exception:
        fail_open("bound an MCP tool result", config=effective)
        return response


def response_may_wait(request: Any, response: Any, config: BudgetConfig | None = None) -> bool:
    """Whether rewriting this read response may wait for a store over the network: a
    ``tools/call`` result that may be over its budget or the message limit, and an S3 store."""
    content = getattr(response, "_content", None)
    if not isinstance(content, bytes):
        return False  # streamed: each event is rewritten in a worker thread already
    call = _tools_call(request, response)
    if call is None:
        return False
    effective = _effective(config, request)
    limit = _result_budget(effective, None, request, call[1])
    size = len(content)
    over_budget = limit > 0 and size > limit
    over_limit = 0 < effective.mcp_max_message_bytes < size
    if not (over_budget or over_limit):
        return False
    return effective.persist and effective.store_location().scheme == "s3"


def bound_arguments(
    config: BudgetConfig, store: ArtifactStore | None, budget: int
) -> dict[str, Any]:
    """``bound_tool_result``'s settings under ``config``: ``budget``, the message limit, the
    store (the configured one unless ``store``), persistence, unit and preview options."""
    return {
        "budget": budget,
        "max_bytes": config.mcp_max_message_bytes,
        "store": store_for_config(config) if store is None else store,
        "persist": config.persist,
        "unit": config.unit,
        "options": preview_options(config),
    }


def _effective(config: BudgetConfig | None, request: Any) -> BudgetConfig:
    """The settings of this request: environment < ``config`` < ``budget()`` < headers."""
    return resolve_config(config, request_overrides=request_settings(request), lenient=True)


def bound_response_message(message: Any, *, reserve_bytes: int = 0, **options: Any) -> Any:
    """A JSON-RPC response message with its result bounded by ``bound_tool_result`` (its
    ``max_bytes``: the whole message plus ``reserve_bytes``); the same object if unchanged."""
    if not isinstance(message, dict) or not isinstance(message.get("result"), dict):
        return message
    envelope = len(dumps_bytes({**message, "result": {}})) - 2
    outcome = bound_tool_result(
        message["result"], reserve_bytes=reserve_bytes + envelope, **options
    )
    return message if outcome.refs is None else {**message, "result": outcome.result}


def _tools_call(request: Any, response: Any) -> tuple[Any, str | None] | None:
    """(request id, tool name) when this exchange is one the MCP boundary rewrites."""
    try:
        if getattr(request, "method", None) != "POST" or response.status_code != 200:
            return None
        if response.extensions.get(EXTENSION):
            return None
        content_type = response.headers.get("content-type", "").lower()
        if not content_type.startswith(("application/json", "text/event-stream")):
            return None
        # Streamable HTTP clients accept both answers on every POST; model API requests
        # do not, so their bodies are never scanned.
        if "text/event-stream" not in request.headers.get("accept", "").lower():
            return None
        body = request.content  # raises when the request body is a stream: not MCP
    except Exception:
        return None
    if not isinstance(body, bytes) or _TOOLS_CALL not in body:
        return None
    try:
        call = loads_outline(body)
    except ValueError:
        return None
    if not isinstance(call, dict) or call.get("method") != "tools/call" or "id" not in call:
        return None
    params = call.get("params")
    tool = params.get("name") if isinstance(params, dict) else None
    return call["id"], tool if isinstance(tool, str) else None


def _result_budget(
    config: BudgetConfig, server: str | None, request: Any, tool: str | None
) -> int:
    if server is None and config.mcp_servers:
        url = request.url
        # Overrides may name the endpoint URL or just its host[:port].
        for name in (str(url.copy_with(query=None, fragment=None)), url.netloc.decode()):
            if names_server(config, name):
                server = name
                break
    return result_budget_for(config, server, tool)


def _same_id(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


# Bytes to deliver as they are, or a rewrite to run first (in a worker thread if async).
_Out = bytes | Callable[[], bytes]


class _JsonTransform:
    """One JSON-RPC message: it has to be whole before it can be bounded."""

    def __init__(
        self, call_id: Any, bound: Callable[[Any], Any], config: BudgetConfig | None = None
    ) -> None:
        self._call_id = call_id
        self._bound = bound
        self._config = config
        self._parts: list[bytes] = []

    def feed(self, chunk: bytes) -> list[_Out]:
        self._parts.append(chunk)
        return []

    def finish(self) -> list[_Out]:
        return [self._joined_and_rewritten]

    def _joined_and_rewritten(self) -> bytes:
        # Joined where it is rewritten: for a streamed answer, in the worker thread.
        body = b"".join(self._parts)
        self._parts = [body]
        return _guarded(body, partial(self._rewrite, body), self._config)

    def _rewrite(self, body: bytes) -> bytes:
        message = loads_in_pieces(body)
        if not isinstance(message, dict) or not _same_id(message.get("id"), self._call_id):
            return body
        bounded = self._bound(message)
        return body if bounded is message else _patched(body, message, bounded)


# A line ends with CRLF, LF or CR (the SSE grammar); a CR ending a chunk waits for the next.
_CR, _LF = 0x0D, 0x0A


def _next_eol(buf: bytes | bytearray, pos: int) -> tuple[int, int] | None:
    """(start, end) of the first line ending from ``pos``, or None."""
    lf = buf.find(b"\n", pos)
    cr = buf.find(b"\r", pos, lf if lf >= 0 else len(buf))
    if cr < 0:
        return None if lf < 0 else (lf, lf + 1)
    return cr, cr + 2 if cr + 1 == lf else cr + 1


class _SseTransform:
    """Passes every event through as soon as it is complete; rewrites only this call's result."""

    def __init__(
        self, call_id: Any, bound: Callable[..., Any], max_bytes: int, config: BudgetConfig
    ) -> None:
        self._call_id = call_id
        self._bound = bound
        self._max_bytes = max_bytes
        self._config = config
        self._buf = bytearray()
        self._scan = 0  # where the search for the next line ending resumes
        self._line_start = 0

    def feed(self, chunk: bytes) -> list[_Out]:
        self._buf += chunk
        if len(chunk) > LONG_STRING_BYTES:  # a whole body, in a worker thread: not a stream
            give_way()
        return self._events(final=False)

    def finish(self) -> list[_Out]:
        out = self._events(final=True)
        if self._buf:
            out.append(bytes(self._buf))  # an unterminated last event: the client drops it
            self._buf.clear()
        return out

    def _events(self, *, final: bool) -> list[_Out]:
        out: list[_Out] = []
        buf = self._buf
        while True:
            found = _next_eol(buf, self._scan)
            if found is None:
                self._scan = len(buf)
                break
            start, end = found
            if end - start == 1 and buf[start] == _CR and end == len(buf) and not final:
                self._scan = start
                break
            empty = start == self._line_start
            self._scan = self._line_start = end
            if empty:
                with memoryview(buf) as view:  # one copy of a long event, not two
                    event = bytes(view[:end])
                del buf[:end]
                self._scan = self._line_start = 0
                # A long event is looked at in the worker thread, not searched here.
                if len(event) >= LONG_STRING_BYTES or b'"result"' in event:
                    rewrite = partial(self._rewrite, event)
                    out.append(partial(_guarded, event, rewrite, self._config))
                else:
                    out.append(event)  # not a response: through untouched, right away
        return out

    def _rewrite(self, event: bytes) -> bytes:
        give_way()  # after the copy of a long event, before the next ones
        lines = event.splitlines(keepends=True)  # the SSE line endings: CRLF, LF or CR
        data: list[bytes] = []
        other_bytes = 0
        kind = b"message"
        for line in map(_no_eol, lines):
            give_way()  # each step copies a long line: the loop waits for one, not three
            if not line or line.startswith(b":"):
                continue
            field, _, value = line.partition(b":")
            give_way()
            value = value[1:] if value.startswith(b" ") else value
            if field == b"data":
                data.append(value)  # its UTF-8 is checked by the JSON parser
                continue
            other_bytes += len(line)  # kept byte for byte, whatever their encoding
            if field == b"event":
                kind = value
        if kind != b"message" or not data:
            return event
        text = b"\n".join(data)
        if b'"result"' not in text:
            return event  # a long notification or request: nothing to bound, nothing to parse
        try:
            message = loads_in_pieces(text)
        except ValueError:
            return event
        if not isinstance(message, dict) or not _same_id(message.get("id"), self._call_id):
            return event
        return self._bounded_event(event, lines, text, message, other_bytes, data)

    def _bounded_event(
        self,
        event: bytes,
        lines: list[bytes],
        text: bytes,
        message: Any,
        other_bytes: int,
        data: list[bytes],
    ) -> bytes:
        size = other_bytes + sum(6 + len(d) for d in data)  # each as "data: <value>"
        reserve = other_bytes + SSE_FRAMING_RESERVE
        for _ in range(3):
            bounded = self._bound(message, reserve_bytes=reserve)
            if bounded is message:
                if self._max_bytes <= 0 or size <= self._max_bytes:
                    return event
                # Over the limit only as the server spelled it: written compactly (every
                # number token as the server wrote it), it fits.
                payload_lines = [compact_literal(text)]
                break
            payload_lines = _patched(text, message, bounded).split(b"\n")
            # Untouched parts keep the server's longer spelling: bound again with the
            # overshoot reserved.
            new_size = other_bytes + sum(6 + len(p) for p in payload_lines)
            over = new_size + SSE_FRAMING_RESERVE - self._max_bytes
            if self._max_bytes <= 0 or over <= 0:
                break
            reserve += over
        out = bytearray()
        wrote = False
        for line in lines:
            field = _no_eol(line)
            give_way()
            if field.startswith(b"data:") or field == b"data":
                if not wrote:
                    for payload in payload_lines:
                        out += b"data: " + payload + line[len(field) :]
                    wrote = True
                continue
            out += line
        return bytes(out)


def _no_eol(line: bytes) -> bytes:
    return line.rstrip(b"\r\n")


def _patched(body: bytes, message: Any, bounded: Any) -> bytes:
    """The JSON text of ``bounded``: ``body`` with only what bounding changed written anew
    (numbers such as ``1e400`` or ``NaN`` keep their spelling)."""
    patched = patch_json(body, message, bounded)
    return patched if patched is not None else dumps_faithful(bounded)


def _guarded(
    original: bytes, rewrite: Callable[[], bytes], config: BudgetConfig | None = None
) -> bytes:
    """The rewritten bytes; on an internal error the original ones, unless errors raise."""
    try:
        return rewrite()
    except Exception:
        fail_open("bound an MCP tool result", config=config)
        return original


_Transform = _JsonTransform | _SseTransform


class _BoundedStream:
    """Reads the source response's decoded bytes and yields the transformed ones."""

    def __init__(self, source: Any, transform: Callable[[], _Transform]) -> None:
        self._source = source
        self._transform = transform

    def __iter__(self) -> Iterator[bytes]:
        transform = self._transform()
        for chunk in self._source.iter_bytes():
            for out in transform.feed(chunk):
                yield out if isinstance(out, bytes) else out()
        for out in transform.finish():
            yield out if isinstance(out, bytes) else out()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        import anyio.to_thread  # every httpx/httpx2 install has it

        transform = self._transform()
        async for chunk in self._source.aiter_bytes():
            for out in transform.feed(chunk):
                yield out if isinstance(out, bytes) else await anyio.to_thread.run_sync(out)
        for out in transform.finish():
            yield out if isinstance(out, bytes) else await anyio.to_thread.run_sync(out)

    def close(self) -> None:
        self._source.close()

    async def aclose(self) -> None:
        await self._source.aclose()


def _replace(response: Any, transform: Callable[[], _Transform]) -> Any:
    """A new response of the same library whose body goes through ``transform``."""
    library = library_of_class(type(response))
    if library is None:  # not an httpx or httpx2 response: nothing we can rebuild
        return response
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _DROP_HEADERS]
    extensions = {**response.extensions, EXTENSION: True}
    request = getattr(response, "_request", None)
    body: dict[str, Any]
    if hasattr(response, "_content"):
        run = transform()
        outs = run.feed(response.content) + run.finish()
        body = {"content": b"".join(out if isinstance(out, bytes) else out() for out in outs)}
        if body["content"] == response.content:
            return response
    else:
        bounded = library_stream("BoundedMcpStream", _BoundedStream, library)
        body = {"stream": bounded(response, transform)}
    new = type(response)(
        response.status_code, headers=headers, request=request, extensions=extensions, **body
    )
    new.default_encoding = response.default_encoding
    return new


register_response_rewriter(rewrite_mcp_response, may_wait=response_may_wait)
