"""A large non-streamed MCP response is bounded off the event loop (like large requests)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest

from budgetware.core.config import BudgetConfig
from budgetware.http.instrument import instrument
from budgetware.http.transport import OFFLOAD_BYTES
from budgetware.mcp import http as mcp_http
from budgetware.store import select

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "dump"}}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def result_body(size: int) -> bytes:
    text = ("x" * 99 + "\n") * (size // 100)
    result = {"content": [{"type": "text", "text": text}], "isError": False}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode()


@pytest.fixture(scope="module")
def mcp_json_url() -> Iterator[str]:
    """A loopback endpoint answering every POST with one 4.3 MB JSON tools/call result."""
    body = result_body(4_300_000)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def bound_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread each MCP result was bounded in."""
    threads: list[int] = []
    original: Callable[..., Any] = mcp_http.bound_response_message

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return original(*args, **kwargs)

    monkeypatch.setattr(mcp_http, "bound_response_message", recording)
    return threads


async def test_a_large_read_mcp_response_is_bounded_off_the_loop(
    mcp_json_url: str, bound_threads: list[int], tmp_path: Path
) -> None:
    assert len(result_body(4_300_000)) > OFFLOAD_BYTES
    with instrument(config=BudgetConfig(artifact_dir=tmp_path)):
        async with httpx2.AsyncClient() as client:
            response = await client.post(mcp_json_url, json=CALL, headers=HEADERS)
    text = response.json()["result"]["content"][0]["text"]
    assert len(text) <= 100_000
    assert bound_threads
    assert threading.get_ident() not in bound_threads


@pytest.mark.parametrize("s3_elsewhere", [False, True], ids=["alone", "beside-an-s3-store"])
async def test_a_small_read_response_stays_on_the_loop(
    bound_threads: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, s3_elsewhere: bool
) -> None:
    # Whether an S3 store was named earlier in this process (by another entry point, or
    # an earlier test on the same xdist worker) used to decide: it sent every response
    # from 64 KiB to a worker thread, this one's store local or not. This entry point's
    # store is local: its writes never wait for a network.
    monkeypatch.setattr(select, "_remote_in_use", s3_elsewhere)
    body = result_body(200_000)  # over the result budget, under the offload size

    def reply(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=body)

    with instrument(config=BudgetConfig(artifact_dir=tmp_path)):
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(reply)) as client:
            await client.post("http://mcp.test/mcp", json=CALL, headers=HEADERS)
    assert bound_threads == [threading.get_ident()]
