"""An S3 store whose writes hang until the test lets them go, and a ticker that proves the
event loop kept running meanwhile, with no wall-time threshold.

``HeldS3`` is a loopback proxy in front of the real S3 server of the tests (moto, the
session's ``s3_endpoint``): every request goes through to it, except each ``PutObject``,
held (its connection open, no answer) until ``release()``, then sent on. While a PUT is
held, the bounding that made it waits on its socket: if it runs on the event loop, the
loop runs nothing until the store's timeout; if it runs in a worker thread, the loop goes
on. ``ticks_while_held`` runs an awaitable beside a ticker and counts the ticker's turns
that came while a PUT was held; after ``TICKS`` of them it releases the PUT. A bounding
on the loop lets no tick in (the PUT is held until botocore gives up on it), whatever the
load on the machine; a bounding off the loop lets them in, however loaded.
"""

from __future__ import annotations

import asyncio
import http.client
import select
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest
from local_servers import serving
from testing.s3 import aws_env

from budgetware.store import select as store_select
from budgetware.store.s3 import S3ArtifactStore

T = TypeVar("T")

TICKS = 3
"""Ticker turns the loop must take while a PUT is held before the test releases it."""
TIMEOUT = 10.0
"""``artifact_store_timeout`` of the held stores: botocore waits this long for the held
PUT's answer. Far above the milliseconds the ticker needs, loaded or not; a bounding on
the loop costs the test twice this (two attempts) before it fails."""
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "expect", "proxy-connection"}


class HeldS3:
    """A proxy on 127.0.0.1 in front of ``upstream`` (an S3 server) that holds PUTs."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._holding = 0
        self.held = 0
        """PUTs held so far."""
        self.abandoned = 0
        """Held PUTs whose client gave up (closed the connection) before the release."""
        self.puts: list[str] = []
        """The path of every PUT sent on to the server."""
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, and 100-continue for botocore

            def do_GET(self) -> None:
                proxy._forward(self)

            do_HEAD = do_POST = do_DELETE = do_GET

            def do_PUT(self) -> None:
                body = proxy._read_body(self)
                is_object = "/" in urlsplit(self.path).path.strip("/")  # /bucket/key
                if is_object and not proxy._hold(self):
                    self.close_connection = True
                    return
                proxy._forward(self, body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._serving = ExitStack()
        self._serving.enter_context(serving(self.server))

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def holding(self) -> bool:
        """Whether a PUT is held right now, its client still waiting for the answer, and
        no held PUT was given up on yet: a bounding on the loop lets the loop run only
        after botocore gave up on its PUTs, and by then this says False (the proxy sees a
        client go within 10 ms; botocore gives up after ``TIMEOUT`` seconds)."""
        return self._holding > 0 and not self.abandoned

    def release(self) -> None:
        """Send the held PUTs (and every later one) on to the server."""
        self._released.set()

    def close(self) -> None:
        self.release()
        self._serving.close()

    def _read_body(self, handler: BaseHTTPRequestHandler) -> bytes:
        if handler.headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(handler.rfile.readline().split(b";")[0], 16)
                chunk = handler.rfile.read(size + 2)[:size]
                if not size:
                    break
                chunks.append(chunk)
            while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        return handler.rfile.read(int(handler.headers.get("content-length") or 0))

    def _hold(self, handler: BaseHTTPRequestHandler) -> bool:
        """Wait for the release; False when the client gave up first."""
        if self._released.is_set():
            return True
        with self._lock:
            self._holding += 1
            self.held += 1
        try:
            conn = handler.connection
            while not self._released.wait(0.01):
                readable, _, _ = select.select([conn], [], [], 0)
                if readable and not conn.recv(1, socket.MSG_PEEK):
                    with self._lock:
                        self.abandoned += 1
                    return False
            return True
        finally:
            with self._lock:
                self._holding -= 1

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes | None = None) -> None:
        if body is None:
            body = self._read_body(handler)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["content-length"] = str(len(body))
        upstream = http.client.HTTPConnection(
            self.upstream.hostname or "127.0.0.1", self.upstream.port, timeout=60
        )
        try:
            upstream.request(handler.command, handler.path, body=body, headers=headers)
            answer = upstream.getresponse()
            content = answer.read()
            if handler.command == "PUT":
                self.puts.append(handler.path)
            handler.send_response(answer.status, answer.reason)
            for key, value in answer.getheaders():
                if key.lower() not in _HOP_BY_HOP and key.lower() != "content-length":
                    handler.send_header(key, value)
            handler.send_header("content-length", str(len(content)))
            handler.end_headers()
            if handler.command != "HEAD":
                handler.wfile.write(content)
        finally:
            upstream.close()


@contextmanager
def held_s3(s3_endpoint: str) -> Iterator[HeldS3]:
    """A ``HeldS3`` in front of the session's S3 server, closed after the block."""
    proxy = HeldS3(s3_endpoint)
    try:
        yield proxy
    finally:
        proxy.close()


def held_s3_store_url(monkeypatch: pytest.MonkeyPatch, held: HeldS3) -> str:
    """``s3://<fresh bucket>/held``, the bucket made on the real server, with this
    process's AWS environment pointed at the proxy; the process's "an S3 store is in
    use" flag is restored after the test (naming an S3 store sets it for good)."""
    import boto3

    bucket = f"held-{uuid.uuid4().hex[:12]}"
    env = aws_env(held.endpoint)
    boto3.session.Session(
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=env["AWS_DEFAULT_REGION"],
    ).client("s3", endpoint_url=held.upstream.geturl()).create_bucket(Bucket=bucket)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setattr(store_select, "_remote_in_use", store_select.remote_store_in_use())
    return f"s3://{bucket}/held"


def prepare_store(config: Any) -> S3ArtifactStore:
    """The process-wide S3 store of ``config``, its client built now: building one holds
    the GIL for tenths of a second, which is not what a test of the loop measures."""
    store = store_select.store_for_config(config)
    assert isinstance(store, S3ArtifactStore)
    store.client()
    return store


@dataclass(frozen=True)
class Held:
    result: Any
    ticks: int
    """Ticker turns that came while a PUT was held."""
    done_while_held: bool
    """Whether the work had finished by the release (it should have been waiting)."""
    seconds: float


async def ticks_while_held(held: HeldS3, work: Awaitable[T], *, limit: float = 120.0) -> Held:
    """Run ``work`` beside a ticker (``asyncio.sleep(0.001)`` at a time); count the
    ticker's turns while ``held`` holds a PUT, and release it after ``TICKS`` of them.

    ``limit`` only ends a test that would otherwise hang: nothing is measured against it.
    """
    started = time.monotonic()
    task = asyncio.ensure_future(work)
    ticks = 0
    done_while_held = False
    try:
        while not task.done() and time.monotonic() - started < limit:
            await asyncio.sleep(0.001)
            if held.holding:
                ticks += 1
                if ticks >= TICKS:
                    done_while_held = task.done()
                    break
        held.release()
        result = await asyncio.wait_for(task, limit)
    finally:
        held.release()
        if not task.done():
            task.cancel()
    return Held(result, ticks, done_while_held, time.monotonic() - started)
