"""The message-level producer boundary: stdio with a subprocess server, the test server in
this process (where the transport is not what a test checks: a server process costs about
1 s of CPU), and raw streams."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import jsonschema
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client._memory import InMemoryTransport
from mcp.client.stdio import stdio_client
from mcp.shared.message import SessionMessage
from mcp_server_app import BIG, PNG, SMALL, build_server
from mcp_types import JSONRPCRequest, JSONRPCResponse

from budgetware.core.config import BudgetConfig, budget
from budgetware.integrations.mcp import BoundedTransport, McpServerBudget, bound_streams
from budgetware.mcp.bound import DEFAULT_RESULT_BUDGET, META_ARTIFACTS
from budgetware.store.local import LocalArtifactStore

SERVER = StdioServerParameters(
    command=sys.executable, args=[str(Path(__file__).with_name("mcp_server_app.py"))]
)


async def test_server_override_matches_the_name_from_initialize(
    store: LocalArtifactStore,
) -> None:
    servers = {"big-output-server": McpServerBudget(result_budget=3_000)}
    config = BudgetConfig(mcp_servers=servers)
    transport = InMemoryTransport(build_server())
    async with (
        BoundedTransport(transport, store=store, config=config) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("big_text", {})
    assert 2_000 < len(result.content[0].text) <= 3_000


async def test_2mb_results_over_stdio_are_bounded_by_a_budget_block_or_the_default_naming_it(
    store: LocalArtifactStore,
) -> None:
    # One server process for the 2 MB results and the image and small results (each
    # server start cost about 1 s of CPU).
    # The answer is read in the session's task, which started before the block.
    async with (
        BoundedTransport(stdio_client(SERVER), store=store) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        with budget(mcp_result_budget=5_000):
            narrow = await session.call_tool("big_text", {})
        result = await session.call_tool("big_text", {})
        tools = {t.name: t for t in (await session.list_tools()).tools}
        with_image = await session.call_tool("big_with_image", {})
        small = await session.call_tool("small_text", {})
    # An image beside a cut text, and a small result, are untouched.
    assert with_image.content[1].data == PNG
    assert small.content[0].text == SMALL
    assert small.meta is None
    assert len(narrow.content[0].text) <= 5_000
    # Outside the block: the default budget, the artifact named, the structure kept.
    text = result.content[0].text
    refs = result.meta[META_ARTIFACTS]
    assert 5_000 < len(text) <= DEFAULT_RESULT_BUDGET
    assert refs[0] in text
    assert "MIDDLE-MARKER" not in text
    assert Path(refs[0]).read_text() == BIG
    assert result.structured_content == {"result": text}
    jsonschema.validate(result.structured_content, tools["big_text"].output_schema)


async def test_messages_other_than_a_tools_call_result_are_the_same_objects(
    store: LocalArtifactStore,
) -> None:
    to_client, client_reads = anyio.create_memory_object_stream[SessionMessage | Exception](10)
    client_writes, to_server = anyio.create_memory_object_stream[SessionMessage](10)
    read, write = bound_streams(client_reads, client_writes, store=store)
    await write.send(
        SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/list", params={}))
    )
    await to_server.receive()
    big = {"content": [{"type": "text", "text": BIG}]}
    unrelated = SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=1, result=big))
    await to_client.send(unrelated)
    assert await read.receive() is unrelated
    error = ValueError("transport error")
    await to_client.send(error)
    assert await read.receive() is error
    for stream in (to_client, client_reads, client_writes, to_server):
        await stream.aclose()


async def test_the_high_level_client_accepts_a_bounded_transport(
    store: LocalArtifactStore,
) -> None:
    transport = InMemoryTransport(build_server())
    async with Client(BoundedTransport(transport, store=store)) as client:
        result = await client.call_tool("big_text", {})
    text = result.content[0].text
    assert len(text) <= DEFAULT_RESULT_BUDGET
    assert result.meta[META_ARTIFACTS][0] in text
