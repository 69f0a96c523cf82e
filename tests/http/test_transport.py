"""BudgetTransport and AsyncBudgetTransport, for httpx and httpx2 alike (MockTransport inside)."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from http_helpers import big_results, tool_result_texts

from budgetware.core.config import BudgetConfig
from budgetware.http import hooks as _hooks
from budgetware.http.transport import AsyncBudgetTransport, BudgetTransport

URL = "http://127.0.0.1:9/v1/chat/completions"


@pytest.fixture(params=["httpx", "httpx2"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


def chat_body(results: list[str]) -> bytes:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                for i in range(len(results))
            ],
        },
    ]
    messages += [
        {"role": "tool", "tool_call_id": f"c{i}", "content": r} for i, r in enumerate(results)
    ]
    return json.dumps({"model": "m", "messages": messages}).encode()


def mock(lib: ModuleType, seen: list[Any]) -> Any:
    def handler(request: Any) -> Any:
        request.read()
        seen.append(request)
        return lib.Response(200, json={"ok": True})

    return lib.MockTransport(handler)


def post(lib: ModuleType, transport: Any, body: bytes, **headers: str) -> Any:
    with lib.Client(transport=transport) as client:
        return client.post(
            URL, content=body, headers={"content-type": "application/json", **headers}
        )


def test_transport_is_an_instance_of_the_inner_library_base_class(lib: ModuleType) -> None:
    transport = BudgetTransport(mock(lib, []))
    assert isinstance(transport, lib.BaseTransport)
    assert isinstance(transport, BudgetTransport)
    assert transport.lib is lib
    assert isinstance(AsyncBudgetTransport(mock(lib, [])), lib.AsyncBaseTransport)


def test_request_under_budget_reaches_inner_as_the_same_object(lib: ModuleType) -> None:
    seen: list[Any] = []
    inner = mock(lib, seen)
    request = lib.Request("POST", URL, content=chat_body(["small"]))
    BudgetTransport(inner, config=BudgetConfig(batch_budget=50_000)).handle_request(request)
    assert seen == [request]


def test_request_over_budget_is_rebuilt_with_bounded_body_and_new_content_length(
    lib: ModuleType, tmp_path: Path
) -> None:
    seen: list[Any] = []
    config = BudgetConfig(batch_budget=20_000, artifact_dir=tmp_path)
    original = chat_body(big_results(3, 50_000))
    request = lib.Request(
        "POST",
        URL,
        content=original,
        headers={"Authorization": "Bearer k", "X-Custom": "1"},
        extensions={"timeout": {"connect": 5.0}},
    )
    BudgetTransport(mock(lib, seen), config=config).handle_request(request)
    [sent] = seen
    assert sent is not request
    assert sent.method == "POST"
    assert sent.url == request.url
    assert len(sent.content) < len(original)
    assert sent.headers["content-length"] == str(len(sent.content))
    assert sent.headers.get_list("content-length") == [str(len(sent.content))]
    assert sent.headers["authorization"] == "Bearer k"
    assert sent.headers["x-custom"] == "1"
    assert sent.extensions["timeout"] == {"connect": 5.0}
    texts = tool_result_texts("openai_chat", json.loads(sent.content))
    assert sum(len(t) for t in texts) <= 20_000


def test_budgetware_headers_are_stripped_even_when_the_body_is_unchanged(lib: ModuleType) -> None:
    seen: list[Any] = []
    body = chat_body(["small"])
    post(lib, BudgetTransport(mock(lib, seen)), body, **{"x-budgetware-batch-budget": "900"})
    [sent] = seen
    assert not [name for name in sent.headers if name.startswith("x-budgetware")]
    assert sent.content == body


def test_streaming_request_body_passes_through_unread(lib: ModuleType) -> None:
    seen: list[Any] = []

    def chunks() -> Iterator[bytes]:
        yield chat_body(big_results(2, 50_000))

    request = lib.Request("POST", URL, content=chunks())
    BudgetTransport(mock(lib, seen), config=BudgetConfig(batch_budget=1_000)).handle_request(
        request
    )
    assert seen == [request]
    assert len(request.content) > 100_000


def test_close_and_context_manager_reach_the_inner_transport(lib: ModuleType) -> None:
    closed: list[str] = []

    class Inner(lib.BaseTransport):  # type: ignore[name-defined,misc]
        def handle_request(self, request: Any) -> Any:
            return lib.Response(200)

        def close(self) -> None:
            closed.append("close")

    transport = BudgetTransport(Inner())
    with transport as entered:
        assert entered is transport
    transport.close()
    assert closed == ["close", "close"]


async def test_async_close_reaches_the_inner_transport(lib: ModuleType) -> None:
    closed: list[str] = []

    class Inner(lib.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        async def handle_async_request(self, request: Any) -> Any:
            return lib.Response(200)

        async def aclose(self) -> None:
            closed.append("aclose")

    transport = AsyncBudgetTransport(Inner())
    async with transport as entered:
        assert entered is transport
    await transport.aclose()
    assert closed == ["aclose", "aclose"]


async def test_async_transport_bounds_the_body(lib: ModuleType, tmp_path: Path) -> None:
    seen: list[Any] = []
    config = BudgetConfig(batch_budget=20_000, artifact_dir=tmp_path)
    transport = AsyncBudgetTransport(mock(lib, seen), config=config)
    async with lib.AsyncClient(transport=transport) as client:
        await client.post(URL, content=chat_body(big_results(3, 50_000)))
    [sent] = seen
    texts = tool_result_texts("openai_chat", json.loads(sent.content))
    assert sum(len(t) for t in texts) <= 20_000


def test_streaming_response_is_delivered_unread(lib: ModuleType) -> None:
    def handler(request: Any) -> Any:
        return lib.Response(200, stream=lib.ByteStream(b"data: 1\n\n"))

    transport = BudgetTransport(lib.MockTransport(handler))
    with lib.Client(transport=transport) as client, client.stream("POST", URL) as response:
        assert not response.is_stream_consumed
        assert response.read() == b"data: 1\n\n"


@pytest.fixture
def rewriter_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Any, Any]]]:
    calls: list[tuple[Any, Any]] = []

    def rewriter(request: Any, response: Any) -> Any:
        calls.append((request, response))
        return response

    monkeypatch.setattr(_hooks, "RESPONSE_REWRITERS", [rewriter])
    return calls


def test_every_response_goes_through_the_response_rewriters(
    lib: ModuleType, rewriter_calls: list[tuple[Any, Any]]
) -> None:
    response = post(lib, BudgetTransport(mock(lib, [])), b"{}")
    assert len(rewriter_calls) == 1
    assert rewriter_calls[0][1].status_code == response.status_code == 200


async def test_every_async_response_goes_through_the_response_rewriters(
    lib: ModuleType, rewriter_calls: list[tuple[Any, Any]]
) -> None:
    async with lib.AsyncClient(transport=AsyncBudgetTransport(mock(lib, []))) as client:
        await client.post(URL, content=b"{}")
    assert len(rewriter_calls) == 1


def test_invalid_config_fails_when_the_transport_is_built(
    lib: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    from budgetware.core.config import ConfigError

    monkeypatch.setenv("BUDGETWARE_BATCH_BUDGET", "lots")
    with pytest.raises(ConfigError, match="BUDGETWARE_BATCH_BUDGET"):
        BudgetTransport(mock(lib, []))


def test_streaming_request_body_loses_its_budgetware_headers(lib: ModuleType) -> None:
    seen: list[Any] = []

    def chunks() -> Iterator[bytes]:
        yield b'{"model": "m"}'

    request = lib.Request("POST", URL, content=chunks(), headers={"x-budgetware-disable": "1"})
    BudgetTransport(mock(lib, seen)).handle_request(request)
    assert "x-budgetware-disable" not in seen[0].headers
    assert seen[0].content == b'{"model": "m"}'
