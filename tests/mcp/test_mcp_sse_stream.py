"""The SSE rewriter event by event: unrelated events pass as they complete, byte-identical."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp.client.streamable_http import DEFAULT_MAX_SSE_EVENT_SIZE

from budgetware.core.config import BudgetConfig
from budgetware.integrations.mcp import McpBoundTransport, rewrite_mcp_response
from budgetware.mcp.bound import DEFAULT_MAX_MESSAGE_BYTES
from budgetware.store.local import LocalArtifactStore

URL = "http://127.0.0.1:9/mcp"
BIG = "start " + "z" * 300_000 + " end"
# What every streamable HTTP client sends on a POST (and model API clients do not).
ACCEPT = {"accept": "application/json, text/event-stream"}
CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "dump"}}
# CRLF line ends, a comment, an id line: none of it may change in an unrelated event.
PROGRESS = (
    b": keep-alive\r\n"
    b"event: message\r\n"
    b"id: ev-1\r\n"
    b'data: {"jsonrpc":"2.0","method":"notifications/progress",'
    b'"params":{"progressToken":7,"progress":1,"message":"\\"result\\""}}\r\n'
    b"\r\n"
)
# A server-to-client request that happens to carry the same id as the call.
SAME_ID_REQUEST = (
    b'data: {"jsonrpc":"2.0","id":7,"method":"sampling/createMessage",'
    b'"params":{"result":"not a result"}}\n\n'
)


def result_event(text: str, request_id: int = 7) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {"content": [{"type": "text", "text": text}], "isError": False},
    }
    return b"event: message\r\nid: ev-2\r\ndata: " + json.dumps(message).encode() + b"\r\n\r\n"


class GatedStream(httpx2.AsyncByteStream):
    """Sends ``first``, waits for ``gate``, then sends ``rest`` in awkward 4099-byte chunks."""

    def __init__(self, first: bytes, rest: bytes, gate: anyio.Event) -> None:
        self.first, self.rest, self.gate = first, rest, gate

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.first
        await self.gate.wait()
        for start in range(0, len(self.rest), 4099):
            yield self.rest[start : start + 4099]


def client_for(stream: httpx2.AsyncByteStream, store: LocalArtifactStore) -> httpx2.AsyncClient:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)

    inner = httpx2.MockTransport(handler)
    transport = McpBoundTransport(
        inner, config=BudgetConfig(mcp_result_budget=10_000), store=store
    )
    return httpx2.AsyncClient(transport=transport)


async def test_an_unrelated_event_is_delivered_before_the_stream_goes_on(tmp_path: Path) -> None:
    gate = anyio.Event()
    store = LocalArtifactStore(tmp_path)
    stream = GatedStream(PROGRESS, result_event(BIG), gate)
    received = bytearray()
    # A rewriter that held the first event back would wait forever for the gate: fail fast.
    with anyio.fail_after(5):
        async with (
            client_for(stream, store) as client,
            client.stream("POST", URL, json=CALL, headers=ACCEPT) as r,
        ):
            async for chunk in r.aiter_bytes():
                received += chunk
                if bytes(received) == PROGRESS:
                    gate.set()  # only now does the server send the rest
    assert gate.is_set()
    assert bytes(received).startswith(PROGRESS)
    assert len(received) < len(PROGRESS) + 20_000  # and the result event was bounded


async def test_only_the_call_result_event_changes_and_crlf_framing_is_kept(
    tmp_path: Path,
) -> None:
    gate = anyio.Event()
    gate.set()
    store = LocalArtifactStore(tmp_path)
    tail = SAME_ID_REQUEST + result_event(BIG) + result_event("other call", request_id=8)
    stream = GatedStream(PROGRESS, tail, gate)
    async with (
        client_for(stream, store) as client,
        client.stream("POST", URL, json=CALL, headers=ACCEPT) as r,
    ):
        body = await r.aread()
    assert body.startswith(PROGRESS + SAME_ID_REQUEST)
    assert body.endswith(result_event("other call", request_id=8))
    event = body[len(PROGRESS + SAME_ID_REQUEST) : -len(result_event("other call", 8))]
    lines = event.split(b"\r\n")
    assert lines[:2] == [b"event: message", b"id: ev-2"]
    assert lines[-2:] == [b"", b""]
    message = json.loads(lines[2].removeprefix(b"data: "))
    text = message["result"]["content"][0]["text"]
    assert len(text) <= 10_000
    assert text.startswith("[Tool output truncated: ")
    assert text.endswith(" end")


async def test_non_tools_call_responses_are_the_same_response_object(tmp_path: Path) -> None:
    sent: list[httpx2.Response] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        response = httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=result_event(BIG)
        )
        sent.append(response)
        return response

    store = LocalArtifactStore(tmp_path)
    transport = McpBoundTransport(httpx2.MockTransport(handler), store=store)
    listing = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
    request = httpx2.Request("POST", URL, json=listing, headers=ACCEPT)
    assert await transport.handle_async_request(request) is sent[0]


def test_default_message_limit_is_the_mcp_clients_sse_event_limit() -> None:
    assert DEFAULT_MAX_MESSAGE_BYTES == DEFAULT_MAX_SSE_EVENT_SIZE


@pytest.mark.parametrize("library", [httpx, httpx2])
def test_sync_streams_of_either_http_library_are_bounded(library: Any, tmp_path: Path) -> None:
    class Stream(library.SyncByteStream):  # type: ignore[misc, name-defined]
        def __iter__(self) -> Iterator[bytes]:
            data = result_event(BIG)
            for start in range(0, len(data), 1000):
                yield data[start : start + 1000]

    request = library.Request("POST", URL, json=CALL, headers=ACCEPT)
    headers = {"content-type": "text/event-stream"}
    response = library.Response(200, headers=headers, stream=Stream(), request=request)
    store = LocalArtifactStore(tmp_path)
    new = rewrite_mcp_response(
        request, response, config=BudgetConfig(mcp_result_budget=5_000), store=store
    )
    data = new.read().split(b"data: ", 1)[1].split(b"\r\n", 1)[0]
    assert len(json.loads(data)["result"]["content"][0]["text"]) <= 5_000


@pytest.mark.parametrize("library", [httpx, httpx2])
def test_an_already_read_json_response_is_bounded_with_a_new_length(
    library: Any, tmp_path: Path
) -> None:
    request = library.Request("POST", URL, json=CALL, headers=ACCEPT)
    message = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": BIG}]}}
    headers = {"content-type": "application/json"}
    response = library.Response(200, headers=headers, json=message, request=request)
    store = LocalArtifactStore(tmp_path)
    new = rewrite_mcp_response(
        request, response, config=BudgetConfig(mcp_result_budget=5_000), store=store
    )
    assert int(new.headers["content-length"]) == len(new.content) < 6_000
    assert len(new.json()["result"]["content"][0]["text"]) <= 5_000
