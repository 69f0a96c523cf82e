"""Tests for the fake provider and the SDK drivers: each real SDK completes a call against it."""

from __future__ import annotations

import gc
import http.client
import json
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import httpx2
import pytest

from budgetware.testing import (
    ApiName,
    FakeProvider,
    RecordedRequest,
    Reply,
    scripted_tool_calls,
)
from budgetware.testing._apis import count_tool_call_turns, detect_api

from . import drivers
from .drivers import DRIVERS, Driver

RESULTS = ["alpha-result", "beta-result", "".join(chr(97 + i % 26) for i in range(1000))]

# google-genai 3.6 defines `class AiohttpClientSession(aiohttp.ClientSession)` inside the
# call that opens its aiohttp session, and aiohttp warns about subclassing ClientSession.
# Nothing on our side can avoid it; it only concerns the SDK's own aiohttp path.
GENAI_AIOHTTP_SUBCLASS_WARNING = pytest.mark.filterwarnings(
    "ignore:Inheritance class AiohttpClientSession from ClientSession is discouraged"
    ":DeprecationWarning"
)


# litellm's gemini provider imports vertex_ai_context_caching on its first call, whose
# TypedDicts (_CachedContentItem, _CreatedCachedContent, ...) use `ReadOnly` items, and
# pydantic warns about each once, at that import. Nothing on our side can avoid it.
LITELLM_GEMINI_READONLY_WARNING = pytest.mark.filterwarnings(
    "ignore:Items? .* on TypedDict class '_\\w*CachedContent\\w*' (is|are) using the `ReadOnly`"
    ":UserWarning"
)


def _raw(
    fp: FakeProvider,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    *,
    chunked: bool = False,
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", fp.port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {}, encode_chunked=chunked)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _post_json(fp: FakeProvider, path: str, payload: Any) -> tuple[int, dict[str, str], bytes]:
    return _raw(
        fp, "POST", path, json.dumps(payload).encode(), {"Content-Type": "application/json"}
    )


def _sse_data(body: bytes) -> list[Any]:
    return [
        json.loads(line[len(b"data: ") :])
        for line in body.splitlines()
        if line.startswith(b"data: ") and line != b"data: [DONE]"
    ]


# --- the server itself ---------------------------------------------------------------------


class TestServer:
    def test_url_and_lifecycle(self) -> None:
        fp = FakeProvider()
        with pytest.raises(RuntimeError):
            _ = fp.url
        fp.start()
        try:
            assert fp.url == f"http://127.0.0.1:{fp.port}"
            assert fp.start() is fp  # idempotent
        finally:
            fp.stop()
        fp.stop()  # idempotent
        with pytest.raises(RuntimeError):
            _ = fp.port

    def test_unknown_path_is_404_json_and_recorded(self, fake_provider: FakeProvider) -> None:
        status, headers, body = _raw(fake_provider, "POST", "/nope?x=1", b"{}")
        assert status == 404
        assert headers["content-type"] == "application/json"
        assert json.loads(body)["error"]["code"] == 404
        req = fake_provider.last
        assert (req.method, req.path, req.route, req.api) == ("POST", "/nope?x=1", "/nope", None)

    def test_get_is_recorded(self, fake_provider: FakeProvider) -> None:
        assert _raw(fake_provider, "GET", "/v1/models")[0] == 404
        assert _raw(fake_provider, "GET", "/v1/chat/completions")[0] == 405
        assert [r.method for r in fake_provider.requests] == ["GET", "GET"]

    @pytest.mark.parametrize("payload", [b"{not json", b"\xff\xfe", b"[1, 2]", b""])
    def test_malformed_body_is_400_json_and_recorded(
        self, fake_provider: FakeProvider, payload: bytes
    ) -> None:
        status, _, body = _raw(fake_provider, "POST", "/v1/chat/completions", payload)
        assert status == 400
        assert "error" in json.loads(body)
        assert fake_provider.last.body == payload
        assert fake_provider.last.api == "openai_chat"

    def test_body_without_content_type_and_chunked(self, fake_provider: FakeProvider) -> None:
        payload = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        raw = json.dumps(payload).encode()
        status, _, body = _raw(fake_provider, "POST", "/v1/chat/completions", raw)
        assert status == 200
        assert json.loads(body)["choices"][0]["message"]["content"] == "ok"
        # Chunked upload (an iterable body), as some clients do for generated content.
        status, _, _ = _raw(
            fake_provider,
            "POST",
            "/v1/chat/completions",
            iter([raw[:10], raw[10:]]),  # type: ignore[arg-type]
            {"Content-Type": "application/octet-stream"},
            chunked=True,
        )
        assert status == 200
        first, second = fake_provider.requests
        assert first.body == second.body == raw
        assert "content-type" not in first.headers
        assert second.headers["transfer-encoding"] == "chunked"
        assert second.json() == payload

    def test_headers_are_lower_cased(self, fake_provider: FakeProvider) -> None:
        _raw(fake_provider, "POST", "/api/chat", b'{"stream": false}', {"X-Custom-Thing": "1"})
        assert fake_provider.last.headers["x-custom-thing"] == "1"
        assert fake_provider.last.api == "ollama"

    def test_requests_is_a_snapshot_and_clear(self, fake_provider: FakeProvider) -> None:
        with pytest.raises(LookupError):
            _ = fake_provider.last
        _raw(fake_provider, "POST", "/x")
        snapshot = fake_provider.requests
        _raw(fake_provider, "POST", "/y")
        assert len(snapshot) == 1
        assert len(fake_provider.requests) == 2
        fake_provider.clear()
        assert fake_provider.requests == []

    def test_concurrent_requests_are_all_recorded(self, fake_provider: FakeProvider) -> None:
        def worker(n: int) -> None:
            for i in range(5):
                _post_json(fake_provider, "/v1/chat/completions", {"model": f"{n}-{i}"})

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        models = sorted(r.json()["model"] for r in fake_provider.requests)
        assert models == sorted(f"{n}-{i}" for n in range(8) for i in range(5))

    def test_stop_with_idle_keepalive_connection_is_prompt(self) -> None:
        fp = FakeProvider().start()
        client = httpx2.Client()
        try:
            resp = client.post(f"{fp.url}/v2/chat", json={"model": "m", "messages": []})
            assert resp.status_code == 200
            started = time.monotonic()
            fp.stop()  # the pooled connection is still open on the client side
            assert time.monotonic() - started < 3
        finally:
            client.close()
        # Any unclosed server socket would surface as a ResourceWarning. What the worker
        # held before the test is set aside (tests/conftest.py): the collection walks what
        # the test made (where a server socket would be), not the SDKs' heap (0.7 s).
        gc.collect()

    def test_answers_leave_without_waiting_for_the_clients_ack(self) -> None:
        # Without TCP_NODELAY, a second small segment waits for the client's delayed ACK
        # (about 40 ms): each answer on a kept-alive connection would stall that long.
        # The latency itself is measured in benchmarks/bench_fake_provider.py.
        with FakeProvider() as fp, httpx2.Client() as client:
            for _ in range(3):
                reply = client.post(f"{fp.url}/v2/chat", json={"model": "m", "messages": []})
                assert reply.status_code == 200
            assert fp._serving is not None
            server = fp._serving[0]
            with server.conn_lock:
                connections = list(server.connections)
            assert len(connections) == 1  # the three requests shared one connection
            assert connections[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)

    def test_a_burst_of_200_connections_is_accepted_and_answered(self) -> None:
        # A listen backlog of 5 makes the kernel drop the SYNs of a burst; the clients
        # retry only after a second (the first SYN retransmission), or give up.
        count = 200
        body = b'{"model": "m", "messages": []}'
        request = (
            b"POST /v2/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        with FakeProvider() as fp:
            sockets = [socket.socket() for _ in range(count)]
            try:
                selector = selectors.DefaultSelector()
                for sock in sockets:
                    sock.setblocking(False)
                    sock.connect_ex(("127.0.0.1", fp.port))
                    selector.register(sock, selectors.EVENT_WRITE)
                deadline = time.monotonic() + 0.9  # before any SYN is sent a second time
                pending = set(sockets)
                while pending and (left := deadline - time.monotonic()) > 0:
                    for key, _ in selector.select(left):
                        selector.unregister(key.fileobj)
                        pending.discard(key.fileobj)  # type: ignore[arg-type]
                selector.close()
                assert not pending, f"{len(pending)} of {count} handshakes did not complete"
                for sock in sockets:
                    assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
                    sock.setblocking(True)
                    sock.settimeout(10)
                    sock.sendall(request)
                for sock in sockets:
                    answer = b""
                    while b"\r\n\r\n" not in answer:
                        answer += sock.recv(65536)
                    assert answer.startswith(b"HTTP/1.1 200 ")
            finally:
                for sock in sockets:
                    sock.close()
            assert len(fp.requests) == count

    def test_server_socket_is_closed_after_stop(self) -> None:
        with FakeProvider() as fp:
            port = fp.port
        with socket.socket() as s:
            s.settimeout(2)
            with pytest.raises(OSError):
                s.connect(("127.0.0.1", port))

    def test_reply_policy_gets_api_and_body(self) -> None:
        seen: list[tuple[str, Any]] = []

        def policy(api: str, body: dict[str, Any] | None) -> str:
            seen.append((api, body))
            return f"answer for {api}"

        with FakeProvider(reply=policy) as fp:
            _, _, body = _post_json(fp, "/v2/chat", {"model": "c", "messages": []})
        assert seen == [("cohere", {"model": "c", "messages": []})]
        assert json.loads(body)["message"]["content"][0]["text"] == "answer for cohere"

    def test_error_reply_and_failing_policy(self, fake_provider: FakeProvider) -> None:
        fake_provider.reply = lambda api, body: Reply.error(529, "overloaded")
        status, _, body = _post_json(fake_provider, "/v1/messages", {"model": "m"})
        assert status == 529
        assert json.loads(body)["error"]["message"] == "overloaded"

        def broken(api: str, body: dict[str, Any] | None) -> Reply:
            raise RuntimeError("boom")

        fake_provider.reply = broken
        status, _, body = _post_json(fake_provider, "/v1/messages", {"model": "m"})
        assert status == 500
        assert "boom" in json.loads(body)["error"]["message"]


class TestRouting:
    @pytest.mark.parametrize(
        ("path", "expected"),
        [
            ("/v1/chat/completions", ("openai_chat", "chat")),
            ("/openai/deployments/x/chat/completions?api-version=1", ("openai_chat", "chat")),
            ("/v1/responses", ("openai_responses", "chat")),
            ("/v1/messages", ("anthropic", "chat")),
            ("/v1/messages?beta=true", ("anthropic", "chat")),
            ("/v1/messages/count_tokens", ("anthropic", "count_tokens")),
            ("/v1beta/models/gemini-2.5-flash:generateContent", ("gemini", "generateContent")),
            (
                "/v1/models/g:streamGenerateContent?alt=sse",
                ("gemini", "streamGenerateContent"),
            ),
            ("/v1beta/models/g:countTokens", ("gemini", "countTokens")),
            ("/api/chat", ("ollama", "chat")),
            ("/v2/chat", ("cohere", "chat")),
            ("/api/generate", None),
            ("/v1/models/g:embedContent", None),
            ("/", None),
        ],
    )
    def test_detect_api(self, path: str, expected: tuple[str, str] | None) -> None:
        assert detect_api(path) == expected


class TestRendering:
    """Raw wire answers, checked where no SDK parses them in this file."""

    def test_gemini_stream_without_sse_is_a_json_array(self, fake_provider: FakeProvider) -> None:
        status, headers, body = _post_json(
            fake_provider, "/v1beta/models/g:streamGenerateContent", {"contents": []}
        )
        assert status == 200
        assert headers["content-type"] == "application/json"
        assert json.loads(body)[0]["candidates"][0]["content"]["parts"] == [{"text": "ok"}]

    def test_gemini_stream_sse(self, fake_provider: FakeProvider) -> None:
        status, headers, body = _post_json(
            fake_provider, "/v1beta/models/g:streamGenerateContent?alt=sse", {"contents": []}
        )
        assert status == 200
        assert headers["content-type"] == "text/event-stream"
        assert _sse_data(body)[0]["modelVersion"] == "g"

    def test_ollama_streams_when_stream_is_absent(self, fake_provider: FakeProvider) -> None:
        _, headers, body = _post_json(fake_provider, "/api/chat", {"model": "m", "messages": []})
        assert headers["content-type"] == "application/x-ndjson"
        lines = [json.loads(x) for x in body.splitlines()]
        assert [x["done"] for x in lines] == [False, True]
        assert lines[0]["message"]["content"] == "ok"

    def test_anthropic_count_tokens(self, fake_provider: FakeProvider) -> None:
        _, _, body = _post_json(fake_provider, "/v1/messages/count_tokens", {"model": "m"})
        assert json.loads(body)["input_tokens"] >= 1

    def test_tool_call_shapes(self, fake_provider: FakeProvider) -> None:
        fake_provider.reply = lambda api, body: Reply.tools([("id1", "f", {"a": 1})])
        _, _, body = _post_json(fake_provider, "/v2/chat", {"model": "m", "messages": []})
        cohere = json.loads(body)
        assert cohere["finish_reason"] == "TOOL_CALL"
        assert cohere["message"]["tool_calls"][0]["function"] == {
            "name": "f",
            "arguments": '{"a":1}',
        }
        _, _, body = _post_json(fake_provider, "/api/chat", {"stream": False})
        call = json.loads(body)["message"]["tool_calls"][0]
        assert call["function"]["name"] == "f"
        assert call["function"]["arguments"] == {"a": 1}
        _, _, body = _post_json(fake_provider, "/v1beta/models/g:generateContent", {})
        part = json.loads(body)["candidates"][0]["content"]["parts"][0]
        assert part == {"functionCall": {"id": "id1", "name": "f", "args": {"a": 1}}}


class TestCountToolCallTurns:
    def test_openai_chat_ollama_cohere(self) -> None:
        body = {
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "tool_calls": [{"id": "1"}]},
                {"role": "tool", "content": "r"},
                {"role": "assistant", "content": "text only", "tool_calls": []},
                {"role": "assistant", "tool_calls": [{"id": "2"}, {"id": "3"}]},
            ]
        }
        apis: tuple[ApiName, ...] = ("openai_chat", "ollama", "cohere")
        for api in apis:
            assert count_tool_call_turns(api, body) == 2

    def test_anthropic(self) -> None:
        body = {
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [{"type": "text"}, {"type": "tool_use"}]},
                {"role": "user", "content": [{"type": "tool_result"}]},
                {"role": "assistant", "content": "plain string"},
            ]
        }
        assert count_tool_call_turns("anthropic", body) == 1

    def test_gemini_both_spellings(self) -> None:
        body = {
            "contents": [
                {"role": "model", "parts": [{"functionCall": {}}]},
                {"role": "user", "parts": [{"functionResponse": {}}]},
                {"role": "model", "parts": [{"function_call": {}}]},
                {"role": "model", "parts": [{"text": "no call"}]},
            ]
        }
        assert count_tool_call_turns("gemini", body) == 2

    def test_openai_responses_runs(self) -> None:
        body = {
            "input": [
                {"role": "user", "content": "q"},
                {"type": "reasoning"},
                {"type": "function_call"},
                {"type": "function_call"},
                {"type": "function_call_output"},
                {"type": "function_call_output"},
                {"type": "reasoning"},
                {"type": "custom_tool_call"},
                {"type": "custom_tool_call_output"},
            ]
        }
        assert count_tool_call_turns("openai_responses", body) == 2
        assert count_tool_call_turns("openai_responses", {"input": "just text"}) == 0

    def test_garbage(self) -> None:
        assert count_tool_call_turns("openai_chat", None) == 0
        assert count_tool_call_turns("anthropic", {"messages": "nope"}) == 0


# --- every driver, sync and async ----------------------------------------------------------


def _tool_texts(driver: Driver, body: dict[str, Any], n: int) -> list[str]:
    """The tool result strings at the exact JSON location of the driver's wire format."""
    name = driver.name
    if driver.api in ("openai_chat", "ollama", "cohere"):
        msgs = body["messages"][2 : 2 + n]
        assert all(m["role"] == "tool" for m in msgs)
        if driver.api == "ollama":
            assert all(m["tool_name"] == drivers.TOOL_NAME for m in msgs)
        else:
            assert [m["tool_call_id"] for m in msgs] == [drivers.call_id(i) for i in range(n)]
        if name == "mistralai":
            assert all(m["name"] == drivers.TOOL_NAME for m in msgs)
        return [m["content"] for m in msgs]
    if driver.api == "openai_responses":
        items = body["input"][1 + n : 1 + 2 * n]
        assert all(i["type"] == "function_call_output" for i in items)
        return [i["output"] for i in items]
    if driver.api == "anthropic":
        blocks = body["messages"][2]["content"]
        assert body["messages"][2]["role"] == "user"
        assert [b["type"] for b in blocks] == ["tool_result"] * n
        return [b["content"] for b in blocks]
    assert driver.api == "gemini"
    parts = body["contents"][2]["parts"]
    if name.startswith("litellm"):
        # litellm writes snake_case and wraps a plain string as response.content.
        return [p["function_response"]["response"]["content"] for p in parts]
    return [p["functionResponse"]["response"]["output"] for p in parts]


def _check_recorded(fp: FakeProvider, driver: Driver) -> RecordedRequest:
    requests = fp.requests
    assert len(requests) == 1, [r.path for r in requests]
    request = requests[0]
    assert request.method == "POST"
    assert request.route == driver.path
    assert request.api == driver.api
    body = request.json()
    assert _tool_texts(driver, body, len(RESULTS)) == RESULTS
    return request


def _params(kind: str) -> list[Any]:
    out = []
    for d in DRIVERS:
        if (d.send if kind == "sync" else d.asend) is None:
            continue
        marks = [pytest.mark.sdk]
        if d.name == "google_genai_aiohttp":
            marks.append(GENAI_AIOHTTP_SUBCLASS_WARNING)
        if d.name == "litellm_gemini":
            marks.append(LITELLM_GEMINI_READONLY_WARNING)
        out.append(pytest.param(d, id=d.name, marks=marks))
    return out


@pytest.mark.parametrize("driver", _params("sync"))
def test_sync_driver(fake_provider: FakeProvider, driver: Driver) -> None:
    assert driver.send is not None
    assert driver.send(fake_provider.url, RESULTS) == "ok"
    _check_recorded(fake_provider, driver)


@pytest.mark.parametrize("driver", _params("async"))
async def test_async_driver(fake_provider: FakeProvider, driver: Driver) -> None:
    assert driver.asend is not None
    assert await driver.asend(fake_provider.url, RESULTS) == "ok"
    _check_recorded(fake_provider, driver)


@pytest.mark.sdk
def test_asynchronous_flag_runs_the_async_client(fake_provider: FakeProvider) -> None:
    assert drivers.send_openai_chat(fake_provider.url, RESULTS, asynchronous=True) == "ok"
    assert fake_provider.last.headers["x-stainless-async"].startswith("async")


@pytest.mark.sdk
def test_extra_headers_reach_the_wire(fake_provider: FakeProvider) -> None:
    for send in (drivers.send_openai_chat, drivers.send_anthropic, drivers.send_cohere):
        send(fake_provider.url, ["r"], extra_headers={"X-Budget-Test": "1"})
        assert fake_provider.last.headers["x-budget-test"] == "1"


# --- the per-client transport hook ---------------------------------------------------------


def _recording_wrapper(seen: list[tuple[str, str, bytes]]) -> Callable[[Any], Any]:
    """A ``wrap_transport`` that records (library, path, body) and delegates to the inner.

    It subclasses the base transport of the inner's library, as BudgetTransport will, so
    the SDKs that sniff the transport's library (google-genai) pick the right backend.
    """

    class Sync2(httpx2.BaseTransport):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def handle_request(self, request: Any) -> Any:
            seen.append(("httpx2", request.url.path, request.read()))
            return self.inner.handle_request(request)

        def close(self) -> None:
            self.inner.close()

    class Async2(httpx2.AsyncBaseTransport):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def handle_async_request(self, request: Any) -> Any:
            seen.append(("httpx2", request.url.path, await request.aread()))
            return await self.inner.handle_async_request(request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    class Sync1(httpx.BaseTransport):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def handle_request(self, request: Any) -> Any:
            seen.append(("httpx", request.url.path, request.read()))
            return self.inner.handle_request(request)

        def close(self) -> None:
            self.inner.close()

    class Async1(httpx.AsyncBaseTransport):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def handle_async_request(self, request: Any) -> Any:
            seen.append(("httpx", request.url.path, await request.aread()))
            return await self.inner.handle_async_request(request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    def wrap(inner: Any) -> Any:
        for base, cls in (
            (httpx2.BaseTransport, Sync2),
            (httpx2.AsyncBaseTransport, Async2),
            (httpx.BaseTransport, Sync1),
            (httpx.AsyncBaseTransport, Async1),
        ):
            if isinstance(inner, base):
                return cls(inner)
        raise TypeError(f"not a transport: {inner!r}")

    return wrap


def _hook_params(kind: str) -> list[Any]:
    return [p for p in _params(kind) if p.values[0].name != "google_genai_aiohttp"]


def _check_hook(
    fp: FakeProvider, driver: Driver, seen: list[tuple[str, str, bytes]], library: str
) -> None:
    request = _check_recorded(fp, driver)
    assert len(seen) == 1
    assert seen[0] == (library, driver.path, request.body)


@pytest.mark.parametrize("driver", _hook_params("sync"))
def test_sync_wrap_transport_sees_the_request(fake_provider: FakeProvider, driver: Driver) -> None:
    seen: list[tuple[str, str, bytes]] = []
    assert driver.send is not None
    assert driver.send(fake_provider.url, RESULTS, wrap_transport=_recording_wrapper(seen)) == "ok"
    _check_hook(fake_provider, driver, seen, driver.http_library)


@pytest.mark.parametrize("driver", _hook_params("async"))
async def test_async_wrap_transport_sees_the_request(
    fake_provider: FakeProvider, driver: Driver
) -> None:
    seen: list[tuple[str, str, bytes]] = []
    assert driver.asend is not None
    reply = await driver.asend(fake_provider.url, RESULTS, wrap_transport=_recording_wrapper(seen))
    assert reply == "ok"
    _check_hook(fake_provider, driver, seen, driver.http_library)


@pytest.mark.sdk
@pytest.mark.xdist_group("litellm_proxy")  # it drives litellm: where litellm is imported
async def test_aiohttp_stays_below_the_wrapped_transport(fake_provider: FakeProvider) -> None:
    inners: list[Any] = []

    def keep(inner: Any) -> Any:
        inners.append(inner)
        return _recording_wrapper([])(inner)

    await drivers.asend_openai_chat_aiohttp(fake_provider.url, RESULTS, wrap_transport=keep)
    await drivers.asend_anthropic(fake_provider.url, RESULTS, wrap_transport=keep, aiohttp=True)
    await drivers.asend_litellm(
        fake_provider.url, RESULTS, provider="anthropic", wrap_transport=keep
    )
    assert [type(i).__name__ for i in inners] == [
        "AiohttpTransport",
        "AiohttpTransport",
        "LiteLLMAiohttpTransport",
    ]
    assert [r.route for r in fake_provider.requests] == ["/v1/chat/completions"] + [
        "/v1/messages"
    ] * 2


@pytest.mark.sdk
def test_http_client_hook_is_used_as_is(fake_provider: FakeProvider) -> None:
    seen: list[tuple[str, str, bytes]] = []
    wrap = _recording_wrapper(seen)
    with httpx2.Client(transport=wrap(httpx2.HTTPTransport())) as client:
        drivers.send_openai_chat(fake_provider.url, ["r"], http_client=client)
        drivers.send_anthropic(fake_provider.url, ["r"], http_client=client)
        drivers.send_mistral(fake_provider.url, ["r"], http_client=client)
        drivers.send_google_genai(fake_provider.url, ["r"], http_client=client)
        assert not client.is_closed
    with httpx.Client(transport=wrap(httpx.HTTPTransport())) as client1:
        drivers.send_cohere(fake_provider.url, ["r"], http_client=client1)
        assert not client1.is_closed
    assert [path for _, path, _ in seen] == [r.route for r in fake_provider.requests]
    assert len(seen) == 5


# --- streaming answers, parsed by the SDKs -------------------------------------------------


@pytest.mark.sdk
def test_openai_streams(fake_provider: FakeProvider) -> None:
    import openai

    with openai.OpenAI(base_url=f"{fake_provider.url}/v1", api_key="k", max_retries=0) as c:
        chunks = c.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
        assert text == "ok"
        with c.responses.stream(model="m", input="hi") as stream:
            for _ in stream:
                pass
            assert stream.get_final_response().output_text == "ok"
        fake_provider.reply = lambda api, body: Reply.tools([("c1", "f", {"x": 1})])
        with c.responses.stream(model="m", input="hi") as stream:
            for _ in stream:
                pass
            call: Any = stream.get_final_response().output[0]
            assert (call.type, call.call_id, call.arguments) == ("function_call", "c1", '{"x":1}')
    assert [r.json()["stream"] for r in fake_provider.requests] == [True, True, True]


@pytest.mark.sdk
def test_anthropic_stream_with_tool_use(fake_provider: FakeProvider) -> None:
    import anthropic

    fake_provider.reply = lambda api, body: Reply.tools([("toolu_1", "f", {"x": 1})], "Let me.")
    with (
        anthropic.Anthropic(base_url=fake_provider.url, api_key="k", max_retries=0) as c,
        c.messages.stream(
            model=drivers.ANTHROPIC_MODEL,
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
        ) as stream,
    ):
        message = stream.get_final_message()
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[1].input == {"x": 1}  # type: ignore[union-attr]
    assert message.stop_reason == "tool_use"


@pytest.mark.sdk
def test_gemini_stream(fake_provider: FakeProvider) -> None:
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=fake_provider.url))
    try:
        text = "".join(
            chunk.text or ""
            for chunk in client.models.generate_content_stream(model="gemini-x", contents="hi")
        )
    finally:
        client.close()
    assert text == "ok"
    assert fake_provider.last.path == "/v1/models/gemini-x:streamGenerateContent?alt=sse"


@pytest.mark.sdk
def test_ollama_and_cohere_streams(fake_provider: FakeProvider) -> None:
    import cohere
    import ollama

    with ollama.Client(host=fake_provider.url) as oc:
        parts = list(oc.chat(model="m", messages=[{"role": "user", "content": "hi"}], stream=True))
    assert "".join(p.message.content or "" for p in parts) == "ok"
    assert parts[-1].done

    with httpx.Client() as http:
        cc = cohere.ClientV2(api_key="k", base_url=fake_provider.url, httpx_client=http)
        events: list[Any] = list(
            cc.chat_stream(model="m", messages=[cohere.UserChatMessageV2(content="hi")])
        )
    deltas = [e.delta.message.content.text for e in events if e.type == "content-delta"]
    assert deltas == ["ok"]
    assert events[-1].type == "message-end"


# --- a scripted agent, end to end ----------------------------------------------------------

SCRIPT = [
    [("lookup", {"q": "a"}), ("lookup", {"q": "b"})],
    [("fetch", {"url": "u"})],
]


@pytest.mark.sdk
def test_scripted_agent_openai_chat(fake_provider: FakeProvider) -> None:
    import openai

    fake_provider.reply = scripted_tool_calls(SCRIPT, "all done")
    messages: list[Any] = [{"role": "user", "content": "go"}]
    with openai.OpenAI(base_url=f"{fake_provider.url}/v1", api_key="k", max_retries=0) as c:
        for _ in range(5):
            msg = c.chat.completions.create(model="m", messages=messages).choices[0].message
            if not msg.tool_calls:
                break
            messages.append(msg.model_dump(exclude_none=True))
            for tc in msg.tool_calls:
                assert tc.type == "function"
                name = tc.function.name
                messages.append({"role": "tool", "tool_call_id": tc.id, "content": f"{name} out"})
    assert msg.content == "all done"
    requests = fake_provider.requests
    assert len(requests) == 3
    tool_counts = [sum(m["role"] == "tool" for m in r.json()["messages"]) for r in requests]
    assert tool_counts == [0, 2, 3]
    last_tools = [m for m in requests[-1].json()["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in last_tools] == ["call_0_0", "call_0_1", "call_1_0"]


@pytest.mark.sdk
def test_scripted_agent_openai_responses(fake_provider: FakeProvider) -> None:
    import openai

    fake_provider.reply = scripted_tool_calls(SCRIPT, "all done")
    items: list[Any] = [{"role": "user", "content": "go"}]
    with openai.OpenAI(base_url=f"{fake_provider.url}/v1", api_key="k", max_retries=0) as c:
        for _ in range(5):
            response = c.responses.create(model="m", input=items)
            calls = [o for o in response.output if o.type == "function_call"]
            if not calls:
                break
            items.extend(o.model_dump(exclude_none=True) for o in response.output)
            items.extend(
                {"type": "function_call_output", "call_id": o.call_id, "output": "out"}
                for o in calls
            )
    assert response.output_text == "all done"
    assert len(fake_provider.requests) == 3


@pytest.mark.sdk
async def test_scripted_agent_anthropic(fake_provider: FakeProvider) -> None:
    import anthropic

    fake_provider.reply = scripted_tool_calls(SCRIPT, "all done")
    messages: list[Any] = [{"role": "user", "content": "go"}]
    async with anthropic.AsyncAnthropic(
        base_url=fake_provider.url, api_key="k", max_retries=0
    ) as c:
        for _ in range(5):
            message = await c.messages.create(
                model=drivers.ANTHROPIC_MODEL, max_tokens=100, messages=messages
            )
            uses = [b for b in message.content if b.type == "tool_use"]
            if not uses:
                break
            messages.append({"role": "assistant", "content": message.content})
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": b.id, "content": f"{b.name} out"}
                        for b in uses
                    ],
                }
            )
    assert message.content[0].type == "text"
    assert message.content[0].text == "all done"
    bodies = [r.json() for r in fake_provider.requests]
    assert [len(b["messages"]) for b in bodies] == [1, 3, 5]
    assert bodies[2]["messages"][4]["content"][0]["tool_use_id"] == "call_1_0"


@pytest.mark.sdk
def test_scripted_agent_gemini(fake_provider: FakeProvider) -> None:
    from google import genai
    from google.genai import types

    fake_provider.reply = scripted_tool_calls(SCRIPT, "all done")
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="go")])]
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=fake_provider.url))
    try:
        for _ in range(5):
            response = client.models.generate_content(model="g", contents=contents)
            if not response.function_calls:
                break
            assert response.candidates
            assert response.candidates[0].content
            contents.append(response.candidates[0].content)
            contents.append(
                types.Content(
                    role="user",
                    parts=[
                        types.Part.from_function_response(name=fc.name or "", response={"r": 1})
                        for fc in response.function_calls
                    ],
                )
            )
    finally:
        client.close()
    assert response.text == "all done"
    assert len(fake_provider.requests) == 3


async def test_asynchronous_flag_inside_a_running_loop_is_refused() -> None:
    # `asynchronous=True` uses asyncio.run: inside a running loop, await asend_* instead.
    with pytest.raises(RuntimeError, match="asend_"):
        drivers.send_ollama("http://127.0.0.1:9", ["r"], asynchronous=True)
