"""A user's program: every public name of budgetware, used as the docs show it.

Never run: scripts/check-types type-checks it with ``mypy --strict`` and pyright against the
built wheel installed in a fresh environment (docs/packaging.md). An error fails the check,
and each ``assert_type`` pins a type a user relies on, so that a regression to ``Any`` or
``object`` fails too.
"""

from __future__ import annotations

import io
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import litellm
import mcp
import openai
import pytest
from anthropic.lib.bedrock import AnthropicBedrock
from google import genai
from google.genai import types as genai_types
from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler, HTTPHandler
from typing_extensions import assert_type

import budgetware
from budgetware import (
    ArtifactNotFound,
    ArtifactStoreError,
    AsyncBudgetTransport,
    BudgetConfig,
    BudgetTransport,
    BudgetwareWarning,
    ConfigError,
    InvalidPattern,
    InvalidReadArgument,
    SearchTimeout,
    ToolPolicy,
    budget,
    grep_artifact,
    read_artifact,
)
from budgetware.diagnostics import Recorder, set_recorder
from budgetware.display import (
    HeadlessWriter,
    project_acp_frame,
    project_acp_update,
    project_headless_message,
)
from budgetware.finalizer import (
    ArtifactStore,
    LocalArtifactStore,
    StoreUsage,
    ToolResult,
    allocate,
    bound_payload,
    finalize_batch,
    finalize_body,
    fit_text,
    guard_batch,
    json_string_bytes,
    measure,
)
from budgetware.integrations import acp as budget_acp
from budgetware.integrations import anthropic as budget_anthropic
from budgetware.integrations import google_genai as budget_genai
from budgetware.integrations import litellm as budget_litellm
from budgetware.integrations import mcp as budget_mcp
from budgetware.integrations import mcp_server
from budgetware.integrations import openai as budget_openai
from budgetware.integrations import tools as framework_tools
from budgetware.integrations.litellm.proxy import handler
from budgetware.integrations.opentelemetry import BudgetwareInstrumentor
from budgetware.integrations.pytest_plugin import BudgetwareCapture
from budgetware.testing import FakeProvider, scripted_tool_calls
from budgetware.tools import (
    DEFAULT_LIMIT,
    MAX_CONTEXT,
    MAX_LIMIT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    ToolApi,
    arun_read_tool_output,
    read_tool_output_parameters,
    read_tool_output_schema,
    run_read_tool_output,
)
from budgetware.types import GrepLine, GrepMatch, Instrumentation

ARTIFACTS = "/tmp/budgetware-artifacts"  # a str, as users write paths


def configure() -> BudgetConfig:
    """Settings as keyword arguments, with the values the docs show."""
    config = BudgetConfig(
        batch_budget=50_000,
        unit="tokens",
        artifact_dir=ARTIFACTS,
        max_artifact_bytes=10_000_000,
        artifact_max_age=7 * 24 * 3600,
        preview_tool_hint=True,
        text_results=("smolagents",),
        tool_policies={"search": ToolPolicy(priority="low"), "pytest": ToolPolicy(min_room=2_000)},
    )
    assert_type(config, BudgetConfig)
    assert_type(config.batch_budget, int)
    BudgetConfig(artifact_dir=Path(ARTIFACTS), artifact_store="s3://bucket/artifacts/")
    return config


def instrument_the_process(config: BudgetConfig) -> None:
    handle = budgetware.instrument(config=config)
    assert_type(handle, Instrumentation)
    assert_type(handle.patched, tuple[str, ...])
    with (
        budgetware.instrument(config=BudgetConfig(batch_budget=10_000)),
        budget(batch_budget=5_000, unit="utf8_bytes"),
    ):
        pass
    block: AbstractContextManager[None] = budget(batch_budget=1)
    print(block)
    assert_type(budgetware.is_instrumented(), bool)
    budgetware.uninstrument()
    print(budgetware.__version__.upper())


def one_client(config: BudgetConfig) -> None:
    transport = BudgetTransport(httpx2.HTTPTransport(), config=config)
    ours: BudgetTransport = transport
    theirs: httpx2.BaseTransport = transport
    print(ours, theirs)
    client = openai.OpenAI(http_client=openai.DefaultHttpxClient(transport=transport))
    client.close()
    with httpx2.Client(transport=BudgetTransport(httpx2.HTTPTransport())) as http:
        http.get("http://127.0.0.1/")
    with httpx.Client(transport=BudgetTransport(httpx.HTTPTransport())) as classic:
        classic.get("http://127.0.0.1/")


async def one_async_client() -> None:
    transport = AsyncBudgetTransport(httpx2.AsyncHTTPTransport())
    ours: AsyncBudgetTransport = transport
    print(ours)
    async with httpx2.AsyncClient(transport=transport) as http:
        await http.get("http://127.0.0.1/")
    async with httpx.AsyncClient(transport=AsyncBudgetTransport(httpx.AsyncHTTPTransport())):
        pass


def read_back(ref: str) -> str:
    store = LocalArtifactStore(ARTIFACTS, sweep_interval=600)
    try:
        window = read_artifact(ref, offset=20_000, limit=10_000)
        assert_type(window, str)
        matches = grep_artifact(ref, r"FAILED|Error", context=2, max_matches=50, store=store)
        assert_type(matches, list[GrepMatch])
        for match in matches:
            line: GrepLine = match
            print(match.line_number, match.line, line.line_number)
    except ArtifactNotFound:
        return "gone"
    except (InvalidReadArgument, InvalidPattern, SearchTimeout) as exc:
        return str(exc)
    except ArtifactStoreError:
        raise
    return window


def settings_mistakes() -> None:
    try:
        BudgetConfig(unit="tokens:o200k_base")
    except ConfigError as exc:
        print(exc)
    import warnings

    warnings.simplefilter("error", BudgetwareWarning)


def the_model_reads_back(store: LocalArtifactStore, arguments: str) -> list[dict[str, Any]]:
    api: ToolApi = "anthropic"
    declarations = [read_tool_output_schema(api), read_tool_output_schema("openai_responses")]
    assert_type(declarations[0], dict[str, Any])
    assert_type(read_tool_output_parameters(), dict[str, Any])
    answer = run_read_tool_output(arguments, store=store)
    assert_type(answer, str)
    print(TOOL_NAME, TOOL_DESCRIPTION, DEFAULT_LIMIT + MAX_LIMIT + MAX_CONTEXT)
    return declarations


async def the_model_reads_back_async(config: BudgetConfig) -> str:
    return await arun_read_tool_output({"ref": "x", "pattern": "Error"}, config=config)


def finalize_yourself(config: BudgetConfig) -> list[ToolResult]:
    store: ArtifactStore = LocalArtifactStore(ARTIFACTS)
    batch = [ToolResult(call_id="call_1", tool_name="pytest", slots=("x" * 300_000,))]
    bounded = finalize_batch(batch, config=config, store=store)
    assert_type(bounded, list[ToolResult])
    assert_type(guard_batch(bounded, config=config), list[ToolResult])
    assert_type(bounded[0].full_text, str)
    assert_type(fit_text("x" * 10_000, 2_000, refs=("/tmp/a.txt",), unit="chars"), str)
    assert_type(allocate([10, 20_000], 5_000), list[int])
    assert_type(measure("text", "utf8_bytes"), int)
    assert_type(json_string_bytes("text"), int)
    body = finalize_body("https://api.openai.com/v1/chat/completions", b"{}", config=config)
    assert_type(body, bytes)
    payload = bound_payload("/v1/messages", {"messages": []}, config=config)
    print(payload)
    usage = LocalArtifactStore(ARTIFACTS).usage()
    assert_type(usage, StoreUsage)
    print(usage.count, usage.total_bytes)
    return bounded


def project_for_display() -> None:
    update: dict[str, Any] = {"sessionUpdate": "tool_call_update", "content": []}
    assert_type(project_acp_update(update), dict[str, Any])
    assert_type(project_acp_frame({"method": "session/update", "params": {}}), dict[str, Any])
    assert_type(project_headless_message({"type": "user"}), dict[str, Any])
    with HeadlessWriter(sys.stdout.buffer, mode="stream-json") as out:
        out.write({"type": "result"})
    HeadlessWriter(io.StringIO(), "json").close()


def record_submissions() -> None:
    previous = set_recorder(Recorder("/tmp/budgetware-records"))
    assert_type(previous, Recorder | None)
    set_recorder(None)


def sdk_helpers(config: BudgetConfig) -> None:
    openai.OpenAI(http_client=budget_openai.budget_http_client(config=config))
    openai.AsyncOpenAI(http_client=budget_openai.budget_async_http_client())
    openai.AsyncOpenAI(http_client=budget_openai.budget_aiohttp_client())
    anthropic.Anthropic(http_client=budget_anthropic.budget_http_client(config=config))
    anthropic.AsyncAnthropic(http_client=budget_anthropic.budget_async_http_client())
    AnthropicBedrock(middleware=[budget_anthropic.budget_middleware()])
    options = budget_genai.budget_http_options(config=config, timeout=30_000)
    assert_type(options, genai_types.HttpOptions)
    genai.Client(http_options=options)
    sync_handler = budget_litellm.budget_http_handler(config=config)
    assert_type(sync_handler, HTTPHandler)
    async_handler = budget_litellm.budget_async_http_handler()
    assert_type(async_handler, AsyncHTTPHandler)
    litellm.completion(model="anthropic/claude-haiku-4-5", messages=[], client=sync_handler)
    callback = budget_litellm.budget_callback(config=config)
    assert_type(callback, budget_litellm.BudgetCallback)
    assert_type(handler, budget_litellm.BudgetCallback)
    litellm.callbacks = [callback]


async def mcp_boundary(config: BudgetConfig) -> None:
    limits = BudgetConfig(
        mcp_result_budget=50_000,
        mcp_servers={"github": budget_mcp.McpServerBudget(result_budget=20_000)},
        mcp_tools={"search_*": budget_mcp.McpToolPolicy(priority="low")},
    )
    async with budget_mcp.budget_http_client(config=limits) as http:
        assert_type(http, httpx2.AsyncClient)
    result = budget_mcp.bound_tool_result({"content": []}, budget=limits.mcp_result_budget)
    assert_type(result, budget_mcp.BoundResult)
    print(budget_mcp.DEFAULT_RESULT_BUDGET, budget_mcp.META_ARTIFACTS)


async def mcp_streams(transport: AbstractContextManager[Any]) -> None:
    bounded = budget_mcp.BoundedTransport(transport, server="github")
    async with bounded as (read, write):
        budget_mcp.bound_streams(read, write, server="github")
    async with mcp.ClientSession(read, write):
        pass


async def serve_read_tool_output(store: LocalArtifactStore) -> None:
    server = mcp_server.build_server(store=store)
    mcp_server.http_app(server, token=mcp_server.token_from_env())
    await mcp_server.serve_stdio(server)
    await mcp_server.serve_http(server, host="127.0.0.1", port=8765)
    print(mcp_server.SERVER_NAME, mcp_server.TOKEN_ENV)


def opentelemetry_runner(config: BudgetConfig) -> None:
    instrumentor = BudgetwareInstrumentor()
    instrumentor.instrument(config=config)
    instrumentor.uninstrument()


async def acp_agent(agent: Any) -> None:
    transport = await budget_acp.stdio_transport(budget=65_536)
    assert_type(transport, budget_acp.ProjectingTransport)
    assert_type(transport.inner, budget_acp.TransportLike)
    await budget_acp.run_agent(agent)


def agent_frameworks(store: LocalArtifactStore) -> None:
    text = framework_tools.read_tool_output("/tmp/a.txt", offset=0, limit=DEFAULT_LIMIT)
    assert_type(text, str)
    framework_tools.openai_agents_tool(store=store)
    framework_tools.langchain_tool(store=store)
    framework_tools.pydantic_ai_tool(store=store)


async def agent_frameworks_async() -> str:
    return await framework_tools.aread_tool_output("/tmp/a.txt", pattern="Error", context=2)


@pytest.mark.budgetware(batch_budget=20_000)
def test_the_agent_fixes_the_bug(budgetware_capture: BudgetwareCapture) -> None:
    with FakeProvider(scripted_tool_calls([[("pytest", {"args": "-x"})]])) as provider:
        openai.OpenAI(base_url=provider.url, api_key="test")
    budgetware_capture.assert_within_budget()
    assert_type(budgetware_capture.results_cut, int)
    assert_type(budgetware_capture.artifacts, list[str])
