"""A ``ThreadingHTTPServer`` on 127.0.0.1 that answers just enough of each provider API for
the real SDKs to complete a call, streaming or not, recording every request byte for byte."""

from __future__ import annotations

import contextlib
import json
import selectors
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from budgetware.testing._apis import (
    ApiName,
    RecordedRequest,
    Reply,
    ReplyPolicy,
    Usage,
    default_policy,
    detect_api,
)
from budgetware.testing._cache import (
    BYTES_PER_TOKEN,
    MAX_BREAKPOINTS,
    TTLS,
    Block,
    PromptCache,
    prompt_blocks,
)
from budgetware.testing._renderers import Rendered, args_json, error, model_of, render

__all__ = ["FakeProvider"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() closes idle keep-alive connections itself
    allow_reuse_address = False
    timeout = 0.05  # bounds handle_request()'s wait for a connection that vanished
    # socketserver's backlog of 5 drops the SYNs of a burst; clients retry after a second.
    request_queue_size = 1024

    def __init__(self, provider: FakeProvider) -> None:
        self.provider = provider
        self.connections: set[socket.socket] = set()
        self.handler_threads: set[threading.Thread] = set()
        self.conn_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client dropping a kept-alive connection is no error of the fake.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def server_bind(self) -> None:
        # Not HTTPServer's: its reverse DNS lookup can stall for seconds without a resolver.
        socketserver.TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = int(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive, as a real API; every answer has a length
    server_version = "budgetware-fake-provider/1"
    sys_version = ""
    timeout = 30  # an idle keep-alive connection gives up, so no thread waits forever
    wbufsize = 64 * 1024  # headers and body leave in one write

    def setup(self) -> None:
        # Else Nagle's algorithm waits for the client's delayed ACK (40 ms) on every answer.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()
        with self.server.conn_lock:
            self.server.connections.add(self.connection)
            self.server.handler_threads.add(threading.current_thread())

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.conn_lock:
                self.server.connections.discard(self.connection)
                self.server.handler_threads.discard(threading.current_thread())

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: no stderr line per request

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks: list[bytes] = []
            while True:
                size_line = self.rfile.readline(65537)
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:  # trailers end with an empty line
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline(65537)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def do_POST(self) -> None:
        """Record the request and answer it (every method: a GET is recorded, then refused)."""
        try:
            raw = self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            self._send(error(400, "unreadable request body"))
            return
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        detected = detect_api(self.path)
        api = detected[0] if detected else None
        provider = self.server.provider
        rendered, usage = provider._answer(self.command, self.path, raw, detected)
        provider._record(RecordedRequest(self.command, self.path, headers, raw, api, usage))
        self._send(rendered)

    do_GET = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_POST

    def _send(self, rendered: Rendered) -> None:
        try:
            self.send_response(rendered.status)
            self.send_header("Content-Type", rendered.content_type)
            self.send_header("Content-Length", str(len(rendered.body)))
            if rendered.content_type == "text/event-stream":
                self.send_header("Cache-Control", "no-cache")
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(rendered.body)
            self.wfile.flush()
        except OSError:  # the client went away mid-answer
            self.close_connection = True


def _serve_until_woken(server: _Server, wake: socket.socket) -> None:
    """Accept connections until ``wake``'s peer is closed; each is served in its own thread."""
    with selectors.DefaultSelector() as selector, wake:
        selector.register(server, selectors.EVENT_READ)
        selector.register(wake, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is wake:
                    return
                server.handle_request()


class FakeProvider:
    """A local fake of the LLM provider APIs that records every request.

    Use it as a context manager or call ``start()`` and ``stop()``. Point an SDK at
    ``fp.url``; read what it sent from ``fp.requests``. ``reply`` decides each answer from
    ``(api, request_json)`` and may be swapped at any time. It caches prompts as each API
    does unless ``caching=False``; ``clock`` (seconds, default ``time.monotonic``) times
    the cache entries' lives.
    """

    def __init__(
        self,
        reply: ReplyPolicy | None = None,
        *,
        caching: bool = True,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.reply: ReplyPolicy = reply or default_policy
        self.caching = caching
        self._cache = PromptCache(clock or time.monotonic)
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        # While it serves: the server, its accept thread, the socket whose closing stops it.
        self._serving: tuple[_Server, threading.Thread, socket.socket] | None = None

    # lifecycle

    def start(self) -> FakeProvider:
        """Listen on an ephemeral port of 127.0.0.1 and serve from a daemon thread."""
        if self._serving is not None:
            return self
        server = _Server(self)
        wake, stop = socket.socketpair()
        thread = threading.Thread(
            target=_serve_until_woken,
            args=(server, wake),
            name=f"FakeProvider:{server.server_address[1]}",
            daemon=True,
        )
        thread.start()
        self._serving = (server, thread, stop)
        return self

    def stop(self) -> None:
        """Stop serving, drop open keep-alive connections and close the listening socket."""
        if self._serving is None:
            return
        server, thread, stop = self._serving
        self._serving = None
        stop.close()  # wakes the accept loop at once, not at a next poll
        thread.join(timeout=5)
        with server.conn_lock:
            connections = list(server.connections)
            handlers = list(server.handler_threads)
        for conn in connections:  # wakes handlers blocked on idle keep-alive connections
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for handler in handlers:
            handler.join(timeout=5)
        server.server_close()

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port it listens on (raises ``RuntimeError`` when it is not running)."""
        if self._serving is None:
            raise RuntimeError("FakeProvider is not running: call start() or use `with`")
        return int(self._serving[0].server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, without a trailing slash."""
        return f"http://127.0.0.1:{self.port}"

    # recordings

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def last(self) -> RecordedRequest:
        """The most recent request (raises ``LookupError`` when there is none)."""
        with self._lock:
            if not self._requests:
                raise LookupError("the fake provider has received no request")
            return self._requests[-1]

    def clear(self) -> None:
        """Forget the recorded requests."""
        with self._lock:
            self._requests.clear()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _answer(
        self, method: str, path: str, raw: bytes, detected: tuple[ApiName, str] | None
    ) -> tuple[Rendered, Usage | None]:
        if detected is None:
            return error(
                404, f"no fake endpoint for {method} {urlsplit(path).path}", "not_found"
            ), None
        if method != "POST":
            return error(405, f"{method} is not supported on {urlsplit(path).path}"), None
        api, operation = detected
        try:
            body = json.loads(raw) if raw.strip() else None
        except (ValueError, UnicodeDecodeError):
            return error(400, "the request body is not valid JSON"), None
        if not isinstance(body, dict):
            return error(400, "the request body must be a JSON object"), None
        blocks = prompt_blocks(api, body)
        marks = [ttl for _, ttl in blocks if ttl is not None]
        if len(marks) > MAX_BREAKPOINTS:
            found = f"Found {len(marks)}."
            return error(
                400, f"A maximum of 4 blocks with cache_control may be provided. {found}"
            ), None
        if any(ttl not in TTLS for ttl in marks):
            return error(400, "cache_control.ttl: Input should be '5m' or '1h'"), None
        try:
            reply = self.reply(api, body)
        except Exception as exc:  # a broken test policy must not hang the SDK call
            return error(500, f"reply policy failed: {exc!r}", "api_error"), None
        if isinstance(reply, str):
            reply = Reply(reply)
        if reply.status != 200:
            return error(reply.status, reply.text or "fake provider error", "api_error"), None
        usage = self._usage(api, operation, model_of(api, path, body), blocks, reply)
        return render(api, operation, path, body, reply, usage), usage

    def _usage(
        self, api: ApiName, operation: str, model: str, blocks: list[Block], reply: Reply
    ) -> Usage:
        """The request's token counts; a model request reads and writes the cache."""
        prompt = b"".join(data for data, _ in blocks)
        size = len(reply.text) + sum(len(args_json(c[2])) + len(c[1]) for c in reply.tool_calls)
        output = max(1, size // BYTES_PER_TOKEN)
        usage = Usage(max(1, len(prompt) // BYTES_PER_TOKEN), output)
        if not self.caching or operation in ("count_tokens", "countTokens"):
            return usage
        if api == "anthropic":
            read, written = self._cache.explicit(model, blocks)
            return replace(usage, cache_read_tokens=read, cache_write_tokens=written)
        if api in ("openai_chat", "openai_responses", "gemini"):
            return replace(usage, cache_read_tokens=self._cache.automatic(model, prompt))
        return usage
