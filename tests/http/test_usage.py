"""The provider's token counters, read from responses as they pass and reported with their
request: real SDKs against the caching fake provider, a slow and a compressed stream, broken
usage fields."""

from __future__ import annotations

import gzip
import importlib.util
import json
import logging
import threading
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from local_servers import serving

from budgetware.core import observe
from budgetware.core.config import BudgetConfig
from budgetware.http.instrument import instrument
from budgetware.http.transport import AsyncBudgetTransport, BudgetTransport
from budgetware.testing import FakeProvider

LONG = "The quick brown fox jumps over the lazy dog. " * 135  # about 1,500 tokens


@pytest.fixture
def usage() -> Iterator[list[observe.UsageReport]]:
    reports: list[observe.UsageReport] = []
    with observe.subscribe(usage=reports.append):
        yield reports


def _openai(fp: FakeProvider, **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=fp.url + "/v1", api_key="k", max_retries=0, **kwargs)


def _anthropic(fp: FakeProvider) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fp.url, api_key="k", max_retries=0)


SYSTEM = [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}]
HI = [{"role": "user", "content": "hi"}]


def chat(fp: FakeProvider) -> None:
    with _openai(fp) as client:
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "system", "content": LONG}]
        )


def chat_stream(fp: FakeProvider) -> None:
    with _openai(fp) as client:
        stream = client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "system", "content": LONG}],
            stream=True,
            stream_options={"include_usage": True},
        )
        for _ in stream:  # the SDK stops reading at [DONE]: the body ends when it closes
            pass


def responses(fp: FakeProvider) -> None:
    with _openai(fp) as client:
        client.responses.create(model="gpt-5", instructions=LONG, input="hi")


def responses_stream(fp: FakeProvider) -> None:
    with _openai(fp) as client:
        for _ in client.responses.create(
            model="gpt-5", instructions=LONG, input="hi", stream=True
        ):
            pass


def messages(fp: FakeProvider) -> None:
    with _anthropic(fp) as client:
        client.messages.create(model="claude-sonnet-4-5", max_tokens=9, system=SYSTEM, messages=HI)  # type: ignore[arg-type]


def messages_stream(fp: FakeProvider) -> None:
    client = _anthropic(fp)
    with (
        client,
        client.messages.stream(
            model="claude-sonnet-4-5",
            max_tokens=9,
            system=SYSTEM,  # type: ignore[arg-type]
            messages=HI,  # type: ignore[arg-type]
        ) as stream,
    ):
        stream.get_final_message()


def _genai(fp: FakeProvider, stream: bool) -> None:
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=fp.url))
    config = types.GenerateContentConfig(system_instruction=LONG)
    try:
        if stream:
            list(
                client.models.generate_content_stream(
                    model="gemini-2.5-flash", contents="hi", config=config
                )
            )
        else:
            client.models.generate_content(model="gemini-2.5-flash", contents="hi", config=config)
    finally:
        client.close()


def gemini(fp: FakeProvider) -> None:
    _genai(fp, stream=False)


def gemini_stream(fp: FakeProvider) -> None:
    _genai(fp, stream=True)


CALLS: dict[str, tuple[str, Callable[[FakeProvider], None]]] = {
    "chat": ("openai_chat", chat),
    "chat_stream": ("openai_chat", chat_stream),
    "responses": ("openai_responses", responses),
    "responses_stream": ("openai_responses", responses_stream),
    "messages": ("anthropic_messages", messages),
    "messages_stream": ("anthropic_messages", messages_stream),
    "gemini": ("gemini", gemini),
    "gemini_stream": ("gemini", gemini_stream),
}


# google-genai does not install on every Python CI tests (3.10 has no release of it).
_NO_GENAI = pytest.mark.skipif(
    importlib.util.find_spec("google") is None or importlib.util.find_spec("google.genai") is None,
    reason="google-genai is not installed",
)


@pytest.mark.sdk
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=_NO_GENAI if n.startswith("gemini") else ()) for n in CALLS]
)
def test_the_counters_of_real_sdk_responses_are_the_providers(
    name: str, fake_provider: FakeProvider, usage: list[observe.UsageReport], config: BudgetConfig
) -> None:
    api, call = CALLS[name]
    requests: list[observe.RequestReport] = []
    with observe.subscribe(request=requests.append), instrument(config=config):
        call(fake_provider)
        call(fake_provider)  # the same prompt again: its prefix is read from the cache
    assert len(usage) == 2
    for report, recorded, request in zip(usage, fake_provider.requests, requests):
        sent = recorded.usage
        assert sent is not None
        assert report.api == api
        assert report.input_tokens == sent.input_tokens
        assert report.cache_read_tokens == sent.cache_read_tokens
        written = sent.cache_write_tokens if api == "anthropic_messages" else None
        assert report.cache_write_tokens == written
        assert report.output_tokens == sent.output_tokens
        assert report.request is request
        assert request.usage is report
    assert usage[0].cache_read_tokens == 0
    assert usage[1].cache_read_tokens >= 1024


@pytest.mark.sdk
def test_transports_sync_and_async_report_the_counters(
    fake_provider: FakeProvider, usage: list[observe.UsageReport], config: BudgetConfig
) -> None:
    import asyncio

    messages = [{"role": "system", "content": LONG}]
    http = httpx2.Client(transport=BudgetTransport(httpx2.HTTPTransport(), config=config))
    with _openai(fake_provider, http_client=http) as client:
        client.chat.completions.create(model="gpt-4o", messages=messages)  # type: ignore[arg-type]

    async def streamed() -> None:
        transport = AsyncBudgetTransport(httpx2.AsyncHTTPTransport(), config=config)
        async with openai.AsyncOpenAI(
            base_url=fake_provider.url + "/v1",
            api_key="k",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=transport),
        ) as client:
            stream = await client.chat.completions.create(
                model="gpt-4o",
                messages=messages,  # type: ignore[arg-type]
                stream=True,
                stream_options={"include_usage": True},
            )
            async for _ in stream:
                pass

    asyncio.run(streamed())
    assert [(r.input_tokens, r.cache_read_tokens) for r in usage] == [
        (u.input_tokens, u.cache_read_tokens)
        for u in (r.usage for r in fake_provider.requests)
        if u
    ]
    assert usage[1].cache_read_tokens > 0


def test_the_info_line_says_what_the_provider_read_from_its_cache(
    fake_provider: FakeProvider, config: BudgetConfig, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="budgetware"), instrument(config=config):
        chat(fake_provider)
        chat(fake_provider)
    lines = [r for r in caplog.records if "usage" in r.getMessage()]
    assert len(lines) == 2
    read = fake_provider.last.usage.cache_read_tokens  # type: ignore[union-attr]
    total = fake_provider.last.usage.input_tokens  # type: ignore[union-attr]
    assert lines[1].getMessage() == (
        f"budgetware: the provider's usage (openai_chat): {total:,} input tokens, "
        f"{read:,} read from its cache ({read / total:.0%})"
    )
    assert lines[1].budgetware["cache_read_tokens"] == read  # type: ignore[attr-defined]


# --- a slow, compressed stream from a real socket -----------------------------------------


def _sse_chunks() -> list[bytes]:
    def chunk(delta: dict[str, Any], usage: Any = None) -> bytes:
        data = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        data.update(choices=[{"index": 0, "delta": delta, "finish_reason": None}] if delta else [])
        data["usage"] = usage
        return b"data: " + json.dumps(data).encode() + b"\n\n"

    usage = {"prompt_tokens": 5000, "completion_tokens": 2, "total_tokens": 5002}
    usage["prompt_tokens_details"] = {"cached_tokens": 4096}  # type: ignore[assignment]
    return [
        chunk({"role": "assistant", "content": "first"}),
        chunk({"content": " last"}),
        chunk({}, usage),
        b"data: [DONE]\n\n",
    ]


class _SlowServer(HTTPServer):
    """Sends an SSE answer's first event, then waits for ``go`` before the others."""

    def __init__(self, compress: bool) -> None:
        self.compress = compress
        self.go = threading.Event()
        self.sent_last = threading.Event()
        super().__init__(("127.0.0.1", 0), _SlowHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _SlowHandler(BaseHTTPRequestHandler):
    server: _SlowServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        if self.server.compress:
            self.send_header("content-encoding", "gzip")
        self.end_headers()  # HTTP/1.0: the body ends when the connection closes
        encoder = zlib.compressobj(wbits=31) if self.server.compress else None
        for index, data in enumerate(_sse_chunks()):
            if index == 1:
                self.server.go.wait(10)
            if encoder is not None:
                data = encoder.compress(data) + encoder.flush(zlib.Z_SYNC_FLUSH)
            self.wfile.write(data)
            self.wfile.flush()
        if encoder is not None:
            self.wfile.write(encoder.flush())
        self.server.sent_last.set()


@pytest.mark.sdk
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_a_slow_stream_reaches_the_sdk_unbuffered_and_its_usage_is_read(
    compress: bool, usage: list[observe.UsageReport], config: BudgetConfig
) -> None:
    server = _SlowServer(compress)
    with serving(server), instrument(config=config):
        client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
        with client:
            stream = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            chunks = iter(stream)
            first = next(chunks)
            assert not server.sent_last.is_set()  # the first chunk came before the last left
            assert first.choices[0].delta.content == "first"
            server.go.set()
            rest = list(chunks)
    assert rest[0].choices[0].delta.content == " last"
    assert rest[-1].usage is not None
    (report,) = usage
    assert (report.input_tokens, report.cache_read_tokens, report.output_tokens) == (5000, 4096, 2)


# --- what is not a usage object reports nothing and breaks nothing ------------------------

URL = "https://api.openai.com/v1/chat/completions"
BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()


class _Chunks(httpx.SyncByteStream):
    """A raw body that arrives in pieces, as from the network."""

    def __init__(self, data: bytes, size: int = 7) -> None:
        self.pieces = [data[i : i + size] for i in range(0, len(data), size)]

    def __iter__(self) -> Iterator[bytes]:
        yield from self.pieces


def _fetch(
    body: bytes, content_type: str = "application/json", encoding: str | None = None
) -> tuple[bytes, httpx.Response]:
    headers = {"content-type": content_type}
    raw = body
    if encoding == "gzip":
        raw = gzip.compress(body)
        headers["content-encoding"] = "gzip"
    mock = httpx.MockTransport(
        lambda request: httpx.Response(200, headers=headers, stream=_Chunks(raw))
    )
    with httpx.Client(transport=BudgetTransport(mock)) as client:
        response = client.post(URL, content=BODY, headers={"content-type": "application/json"})
    return response.content, response


@pytest.mark.parametrize(
    "body",
    [
        b'{"id": "x", "usage": {"prompt_tokens": "many"}}',
        b'{"id": "x", "usage": {"prompt_tokens": -3}}',
        b'{"usage": {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 1.5}}}',
        b'{"id": "x", "usage": {"prompt_tokens": 10',  # cut short
        b'{"id": "x", "usage": null}',
        b'{"id": "x", "text": "\\"usage\\": {\\"prompt_tokens\\": 5}"}',  # inside a string
        b"\xff\xfe not json at all",
    ],
)
def test_a_broken_usage_field_reports_nothing_and_changes_no_byte(
    body: bytes, usage: list[observe.UsageReport]
) -> None:
    content, _ = _fetch(body)
    assert content == body
    assert usage == []


def test_a_compressed_json_body_is_read_as_it_passes(usage: list[observe.UsageReport]) -> None:
    body = json.dumps(
        {"choices": [{"message": {"content": "x" * 200_000}}], "usage": {"prompt_tokens": 1500}}
    ).encode()
    content, response = _fetch(body, encoding="gzip")
    assert content == body
    assert response.headers["content-encoding"] == "gzip"
    (report,) = usage
    assert (report.api, report.input_tokens, report.cache_read_tokens) == ("openai_chat", 1500, 0)


def test_an_sse_stream_with_a_broken_usage_line_reports_nothing(
    usage: list[observe.UsageReport],
) -> None:
    body = b'data: {"usage": {"prompt_tokens": 1\n\ndata: {"usage": "none"}\n\ndata: [DONE]\n\n'
    content, _ = _fetch(body, content_type="text/event-stream")
    assert content == body
    assert usage == []


def test_nothing_watching_leaves_the_stream_as_it_is() -> None:
    body = b'{"usage": {"prompt_tokens": 1}}'
    mock = httpx.MockTransport(
        lambda request: httpx.Response(
            200, headers={"content-type": "application/json"}, stream=_Chunks(body)
        )
    )
    with BudgetTransport(mock) as transport:
        response = transport.handle_request(httpx.Request("POST", URL, content=BODY))
        assert type(response.stream).__name__ == "_Chunks"  # as it came
        assert response.read() == body


MCP_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "dump"}}


@pytest.mark.parametrize(
    ("url", "body", "content_type"),
    [
        ("https://example.com/stats", BODY, "application/json"),
        # An MCP server's answer (one event) that names a usage: not read, whatever its size.
        ("http://127.0.0.1:9/mcp", json.dumps(MCP_CALL).encode(), "text/event-stream"),
    ],
)
def test_a_response_to_a_request_of_no_model_api_is_not_read(
    url: str, body: bytes, content_type: str, usage: list[observe.UsageReport]
) -> None:
    answer = b'data: {"jsonrpc": "2.0", "id": 1, "result": {"usage": {"prompt_tokens": 1}}}\n\n'
    mock = httpx.MockTransport(
        lambda request: httpx.Response(
            200, headers={"content-type": content_type}, stream=_Chunks(answer)
        )
    )
    with BudgetTransport(mock) as transport:
        response = transport.handle_request(httpx.Request("POST", url, content=body))
        assert type(response.stream).__name__ == "_Chunks"  # as it came
        assert response.read() == answer
    assert usage == []
