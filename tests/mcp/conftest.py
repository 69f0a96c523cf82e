"""Loopback MCP servers (streamable HTTP under uvicorn, in a thread) and a private store."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn
from mcp_server_app import build_server, gzip_everything

from budgetware.store.local import LocalArtifactStore


@dataclass(frozen=True)
class Served:
    url: str


def _serve(json_response: bool, gzip: bool) -> Iterator[Served]:
    app = build_server().streamable_http_app(json_response=json_response)
    asgi = gzip_everything(app) if gzip else app
    config = uvicorn.Config(
        asgi, host="127.0.0.1", port=0, log_level="error", lifespan="on", ws="none"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the MCP test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Served(f"http://127.0.0.1:{port}/mcp")
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture(scope="session")
def sse_server() -> Iterator[Served]:
    yield from _serve(json_response=False, gzip=False)


@pytest.fixture(scope="session")
def json_server() -> Iterator[Served]:
    yield from _serve(json_response=True, gzip=False)


@pytest.fixture(scope="session")
def gzip_sse_server() -> Iterator[Served]:
    yield from _serve(json_response=False, gzip=True)


@pytest.fixture(scope="session")
def gzip_json_server() -> Iterator[Served]:
    yield from _serve(json_response=True, gzip=True)


@pytest.fixture
def store(tmp_path: Path) -> LocalArtifactStore:
    return LocalArtifactStore(tmp_path / "artifacts")
