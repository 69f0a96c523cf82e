"""The HTTP-level producer boundary against a real mcp client and server on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from mcp_helpers import (
    RecordingTransport,
    artifact_files,
    artifacts_of,
    assert_schema_valid,
    call_error_over_http,
    call_over_http,
)
from mcp_server_app import BIG, PNG, SMALL

from budgetware.core.artifacts import text_key
from budgetware.core.config import BudgetConfig
from budgetware.integrations.mcp import McpServerBudget, budget_http_client
from budgetware.mcp.bound import DEFAULT_RESULT_BUDGET
from budgetware.store.local import LocalArtifactStore


def assert_bounded_big_text(text: str, budget: int, refs: list[str]) -> None:
    assert len(text) <= budget
    assert text.startswith(f"[Tool output truncated: {len(BIG):,} chars")
    assert "HEAD-MARKER" in text
    assert text.endswith("TAIL-MARKER")
    assert "MIDDLE-MARKER" not in text
    assert len(refs) == 1
    assert refs[0] in text


async def test_without_budgetware_a_2mb_result_over_sse_fails(sse_server) -> None:
    error = await call_error_over_http(sse_server.url, "big_text")
    assert "exceeded the 1048576 byte limit" in str(error)


async def test_2mb_result_over_sse_arrives_bounded_naming_its_artifact(
    sse_server, store: LocalArtifactStore
) -> None:
    http = budget_http_client(store=store)
    async with http:
        result, schema = await call_over_http(sse_server.url, "big_text", http)
    text = result.content[0].text
    refs = artifacts_of(result)
    assert_bounded_big_text(text, DEFAULT_RESULT_BUDGET, refs)
    assert Path(refs[0]).read_text() == BIG
    assert result.is_error is False
    assert_schema_valid(result, schema)


async def test_repeated_string_gets_the_same_bounded_value_in_text_and_structured(
    sse_server, store: LocalArtifactStore
) -> None:
    async with budget_http_client(store=store) as http:
        result, _ = await call_over_http(sse_server.url, "big_text", http)
    assert result.structured_content == {"result": result.content[0].text}


async def test_bounded_text_is_recorded_as_decided_with_its_artifact(
    sse_server, store: LocalArtifactStore
) -> None:
    async with budget_http_client(store=store) as http:
        result, _ = await call_over_http(sse_server.url, "big_text", http)
    decided = store.lookup_decision(text_key(result.content[0].text))
    assert decided == tuple(artifacts_of(result))


async def test_2mb_result_as_application_json_arrives_bounded(
    json_server, store: LocalArtifactStore
) -> None:
    async with budget_http_client(store=store) as http:
        result, schema = await call_over_http(json_server.url, "big_text", http)
    refs = artifacts_of(result)
    assert_bounded_big_text(result.content[0].text, DEFAULT_RESULT_BUDGET, refs)
    assert Path(refs[0]).read_text() == BIG
    assert_schema_valid(result, schema)


@pytest.mark.parametrize("served", ["gzip_sse_server", "gzip_json_server"])
async def test_gzip_responses_are_decoded_then_bounded(
    served: str, request: pytest.FixtureRequest, store: LocalArtifactStore
) -> None:
    url = request.getfixturevalue(served).url
    async with budget_http_client(store=store) as http:
        result, schema = await call_over_http(url, "big_text", http)
    refs = artifacts_of(result)
    assert_bounded_big_text(result.content[0].text, DEFAULT_RESULT_BUDGET, refs)
    assert Path(refs[0]).read_text() == BIG
    assert_schema_valid(result, schema)


async def test_image_beside_the_text_arrives_unchanged(
    sse_server, store: LocalArtifactStore
) -> None:
    async with budget_http_client(store=store) as http:
        result, _ = await call_over_http(sse_server.url, "big_with_image", http)
    text, image = result.content
    assert_bounded_big_text(text.text, DEFAULT_RESULT_BUDGET, artifacts_of(result))
    assert image.type == "image"
    assert image.data == PNG
    assert image.mime_type == "image/png"


async def test_error_result_is_bounded_and_stays_an_error(
    sse_server, store: LocalArtifactStore
) -> None:
    async with budget_http_client(store=store) as http:
        result, _ = await call_over_http(sse_server.url, "big_error", http)
    assert result.is_error is True
    text = result.content[0].text
    refs = artifacts_of(result)
    assert len(text) <= DEFAULT_RESULT_BUDGET
    assert "TAIL-MARKER" in text
    assert refs[0] in text
    assert BIG in Path(refs[0]).read_text()


async def test_structured_only_result_is_bounded_and_still_validates(
    sse_server, store: LocalArtifactStore
) -> None:
    async with budget_http_client(store=store) as http:
        result, _ = await call_over_http(sse_server.url, "structured_only", http)
    structured = result.structured_content
    assert result.content == []
    assert set(structured) == {"log", "status", "count"}
    assert structured["status"] == "ok"
    assert structured["count"] == 3
    assert len(structured["log"]) <= DEFAULT_RESULT_BUDGET
    refs = artifacts_of(result)
    assert refs[0] in structured["log"]
    assert json.loads(Path(refs[0]).read_text()) == {"log": BIG, "status": "ok", "count": 3}


async def test_event_limit_holds_even_with_the_result_budget_disabled(
    sse_server, store: LocalArtifactStore
) -> None:
    async with budget_http_client(config=BudgetConfig(mcp_result_budget=0), store=store) as http:
        result, schema = await call_over_http(sse_server.url, "big_text", http)
    text = result.content[0].text
    # Both copies (text block and structuredContent) share the one-MiB event.
    assert 400_000 < len(text) < 512 * 1024
    assert artifacts_of(result)[0] in text
    assert_schema_valid(result, schema)


async def test_per_tool_override_sets_the_result_budget(
    sse_server, store: LocalArtifactStore
) -> None:
    config = BudgetConfig(mcp_tools={"big_text": 5_000})
    async with budget_http_client(config=config, store=store) as http:
        result, _ = await call_over_http(sse_server.url, "big_text", http)
    assert len(result.content[0].text) <= 5_000


async def test_per_server_override_by_url_sets_the_result_budget(
    sse_server, store: LocalArtifactStore
) -> None:
    config = BudgetConfig(
        mcp_servers={sse_server.url: McpServerBudget(result_budget=7_000)},
        mcp_tools={"big_text": 1},
    )
    async with budget_http_client(config=config, store=store) as http:
        result, _ = await call_over_http(sse_server.url, "big_text", http)
    assert 6_000 < len(result.content[0].text) <= 7_000


async def test_every_other_message_and_small_results_pass_byte_identical(
    sse_server, store: LocalArtifactStore
) -> None:
    inner = RecordingTransport(httpx2.AsyncHTTPTransport())
    async with budget_http_client(store=store, transport=inner) as http:
        outer = RecordingTransport(http._transport)
        http._transport = outer  # record what the client receives, after bounding
        result, _ = await call_over_http(sse_server.url, "small_text", http)
    assert result.content[0].text == SMALL
    assert len(outer.exchanges) == len(inner.exchanges) >= 4
    methods = [e.request_body for e in inner.exchanges]
    assert any(b'"tools/call"' in m for m in methods)
    for before, after in zip(inner.exchanges, outer.exchanges):
        assert after.body == before.body
    assert artifact_files(store.directory) == []


class _Boom(Exception):
    """An internal error of the MCP boundary, made on purpose."""


def _holds(exc: BaseException, kind: type[BaseException]) -> bool:
    if isinstance(exc, kind):
        return True
    inner_errors = getattr(exc, "exceptions", None)  # an ExceptionGroup
    if inner_errors is not None:
        return any(_holds(inner, kind) for inner in inner_errors)
    return _holds(exc.__cause__, kind) if exc.__cause__ is not None else False


def _break_the_mcp_rewrite(monkeypatch: pytest.MonkeyPatch) -> None:
    from budgetware.mcp import http as mcp_http

    def boom(*args: object, **kwargs: object) -> object:
        raise _Boom

    monkeypatch.setattr(mcp_http, "bound_response_message", boom)
    # Only the entry point's config asks for errors to raise, not the environment.
    monkeypatch.delenv("BUDGETWARE_RAISE_ERRORS")


async def test_the_entry_points_raise_errors_reaches_the_mcp_boundary(
    json_server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # An internal error of the MCP rewrite under instrument(config=BudgetConfig(
    # raise_errors=True)) must raise, not be logged and swallowed (the result then
    # arrived unbounded).
    from budgetware.core.config import BudgetConfig
    from budgetware.http.instrument import instrument

    _break_the_mcp_rewrite(monkeypatch)
    config = BudgetConfig(raise_errors=True, artifact_dir=tmp_path)
    with instrument(config=config), pytest.raises(BaseException) as caught:
        async with httpx2.AsyncClient() as http:
            await call_over_http(json_server.url, "big_text", http)
    assert _holds(caught.value, _Boom)


def test_a_streamed_sse_rewrite_raises_under_its_entry_points_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The events of a streamed response are rewritten while the caller reads them, after
    # the response hook returned: the entry point's config must still decide.
    from budgetware.core.config import BudgetConfig
    from budgetware.http.hooks import rewrite_response

    _break_the_mcp_rewrite(monkeypatch)
    call = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"big_text"}}'
    request = httpx2.Request(
        "POST",
        "http://127.0.0.1:1/mcp",
        content=call,
        headers={"accept": "application/json, text/event-stream"},
    )
    event = (
        b'data: {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"'
        + BIG.encode().replace(b"\n", b"\\n")
        + b'"}]}}\n\n'
    )
    response = httpx2.Response(
        200,
        headers={"content-type": "text/event-stream"},
        stream=httpx2.ByteStream(event),
        request=request,
    )
    config = BudgetConfig(raise_errors=True, artifact_dir=tmp_path)
    new = rewrite_response(request, response, config)
    assert new is not response
    with pytest.raises(_Boom):
        new.read()
