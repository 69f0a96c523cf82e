"""Every setting reaches the MCP boundary; a bad one fails at setup, never on a call."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import artifacts_of, call_over_http

from budgetware.core.config import BudgetConfig, ConfigError, budget
from budgetware.http.instrument import instrument
from budgetware.http.transport import AsyncBudgetTransport
from budgetware.integrations.mcp import BoundedTransport, McpBoundTransport, budget_http_client
from budgetware.mcp.bound import DEFAULT_RESULT_BUDGET


def _in(directory: Path, refs: list[str]) -> bool:
    return bool(refs) and all(Path(ref).parent == directory for ref in refs)


# -- the entry point's configuration reaches the MCP boundary -------------------------------


async def test_instrument_config_picks_the_mcp_artifact_directory(
    sse_server, tmp_path: Path
) -> None:
    directory = tmp_path / "from-instrument"
    with instrument(config=BudgetConfig(artifact_dir=directory)):
        result, _ = await call_over_http(sse_server.url, "big_text")
    assert _in(directory, artifacts_of(result))


async def test_instrument_config_with_persist_off_writes_no_mcp_artifact(
    sse_server, tmp_path: Path
) -> None:
    with instrument(config=BudgetConfig(persist=False, artifact_dir=tmp_path / "a")):
        result, _ = await call_over_http(sse_server.url, "big_text")
    assert artifacts_of(result) == []
    assert len(result.content[0].text) <= DEFAULT_RESULT_BUDGET
    assert not (tmp_path / "a").exists()


async def test_a_transport_config_picks_the_mcp_artifact_directory(
    json_server, tmp_path: Path
) -> None:
    directory = tmp_path / "from-transport"
    transport = AsyncBudgetTransport(
        httpx2.AsyncHTTPTransport(), config=BudgetConfig(artifact_dir=directory)
    )
    async with httpx2.AsyncClient(transport=transport) as http:
        result, _ = await call_over_http(json_server.url, "big_text", http)
    assert _in(directory, artifacts_of(result))


async def test_a_budget_block_inside_instrument_wins_for_mcp_too(
    sse_server, tmp_path: Path
) -> None:
    with (
        instrument(config=BudgetConfig(artifact_dir=tmp_path / "outer")),
        budget(artifact_dir=tmp_path / "block"),
    ):
        result, _ = await call_over_http(sse_server.url, "big_text")
    assert _in(tmp_path / "block", artifacts_of(result))


async def test_the_mcp_client_transport_takes_a_config(sse_server, tmp_path: Path) -> None:
    directory = tmp_path / "from-mcp-client"
    async with budget_http_client(config=BudgetConfig(artifact_dir=directory)) as http:
        result, _ = await call_over_http(sse_server.url, "big_text", http)
    assert _in(directory, artifacts_of(result))


# -- bad settings: a clear error at setup ---------------------------------------------------

BAD = [
    ("BUDGETWARE_MCP_TOOLS", "{bad json"),
    ("BUDGETWARE_MCP_RESULT_BUDGET", "100k"),
    ("BUDGETWARE_MCP_SERVERS", '{"s": {"result_budget": "lots"}}'),
    ("BUDGETWARE_BATCH_BUDGET", "lots"),
    ("BUDGETWARE_ENDPOINTS", '{"gw": "no-such-format"}'),
]

SETUPS: dict[str, Callable[[], Any]] = {
    "instrument": lambda: instrument(),
    "instrument(config=)": lambda: instrument(config=BudgetConfig(persist=True)),
    "transport": lambda: AsyncBudgetTransport(httpx2.AsyncHTTPTransport()),
    "budget()": lambda: budget(persist=True).__enter__(),
    "mcp transport": lambda: McpBoundTransport(httpx2.AsyncHTTPTransport()),
    "mcp client": lambda: budget_http_client(),
    "mcp stdio": lambda: BoundedTransport(object()),
}


@pytest.mark.parametrize(("variable", "value"), BAD)
@pytest.mark.parametrize("setup", list(SETUPS))
def test_a_bad_value_fails_where_an_entry_point_is_set_up(
    variable: str, value: str, setup: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=variable):
        SETUPS[setup]()


@pytest.mark.parametrize(("variable", "value"), BAD)
@pytest.mark.xdist_group("litellm_proxy")  # budget_callback imports litellm: its worker
def test_the_sdk_hooks_fail_at_setup_too(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from budgetware.integrations.anthropic import budget_middleware
    from budgetware.integrations.litellm import budget_callback

    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=variable):
        budget_middleware()
    with pytest.raises(ConfigError, match=variable):
        budget_callback()


# -- a value that turns bad later: logged once, the call goes on ----------------------------


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("BUDGETWARE_MCP_TOOLS", "{bad json"),
        ("BUDGETWARE_MCP_RESULT_BUDGET", "100k"),
        ("BUDGETWARE_BATCH_BUDGET", "lots"),
    ],
)
async def test_a_value_that_turns_bad_later_never_breaks_an_mcp_call(
    sse_server,
    variable: str,
    value: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with instrument():
        monkeypatch.setenv(variable, value)
        with caplog.at_level(logging.WARNING, logger="budgetware"):
            first, _ = await call_over_http(sse_server.url, "big_text")
            second, _ = await call_over_http(sse_server.url, "big_text")
    # Still bounded (by the settings that remain valid), and said once.
    for result in (first, second):
        assert len(result.content[0].text) <= DEFAULT_RESULT_BUDGET
    warnings = [r for r in caplog.records if variable in r.getMessage()]
    assert len(warnings) == 1
    assert value not in warnings[0].getMessage()


async def test_a_bad_per_tool_setting_later_leaves_the_other_mcp_settings_in_force(
    sse_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    with instrument():
        monkeypatch.setenv("BUDGETWARE_MCP_RESULT_BUDGET", "5000")
        monkeypatch.setenv("BUDGETWARE_MCP_TOOLS", "{bad json")
        result, _ = await call_over_http(sse_server.url, "big_text")
    assert len(result.content[0].text) <= 5_000


# -- budget() blocks and x-budgetware-* headers reach the MCP boundary ----------------------


async def test_a_budget_block_sets_the_mcp_result_budget(sse_server) -> None:
    with instrument(), budget(mcp_result_budget=5_000):
        result, _ = await call_over_http(sse_server.url, "big_text")
    assert len(result.content[0].text) <= 5_000


async def test_a_budget_block_around_one_call_of_an_open_session(sse_server) -> None:
    with instrument():
        async with (
            streamable_http_client(sse_server.url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            with budget(mcp_result_budget=5_000):
                narrow = await session.call_tool("big_text", {})
            wide = await session.call_tool("big_text", {})
    assert len(narrow.content[0].text) <= 5_000
    assert 5_000 < len(wide.content[0].text) <= DEFAULT_RESULT_BUDGET


async def test_a_header_sets_the_mcp_result_budget(sse_server) -> None:
    headers = {"x-budgetware-mcp-result-budget": "5000"}
    with instrument():
        async with httpx2.AsyncClient(headers=headers) as http:
            result, _ = await call_over_http(sse_server.url, "big_text", http)
    assert len(result.content[0].text) <= 5_000


async def test_the_disable_header_leaves_only_the_message_limit(sse_server) -> None:
    with instrument():
        async with httpx2.AsyncClient(headers={"x-budgetware-disable": "1"}) as http:
            result, _ = await call_over_http(sse_server.url, "big_text", http)
    assert DEFAULT_RESULT_BUDGET < len(result.content[0].text) <= 1024 * 1024
