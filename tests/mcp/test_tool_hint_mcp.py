"""preview_tool_hint at the MCP producer boundary: a result bounded where it enters the
agent names the read_tool_output tool too, when the entry point's configuration says so."""

from __future__ import annotations

from mcp import ClientSession
from mcp.client._memory import InMemoryTransport
from mcp_server_app import build_server

from budgetware import BudgetConfig
from budgetware.core.finalize import preview_options
from budgetware.core.notice import TOOL_HINT
from budgetware.integrations.mcp import BoundedTransport
from budgetware.mcp.bound import bound_tool_result
from budgetware.store.local import LocalArtifactStore

BIG = {"content": [{"type": "text", "text": "log line\n" * 50_000}]}


def test_bound_tool_result_takes_the_configuration_s_wording(store: LocalArtifactStore) -> None:
    for hint in (False, True):
        options = preview_options(BudgetConfig(preview_tool_hint=hint))
        outcome = bound_tool_result(BIG, budget=5_000, store=store, options=options)
        text = outcome.result["content"][0]["text"]
        assert len(text) <= 5_000
        assert outcome.refs
        assert (f"{outcome.refs[0]}{TOOL_HINT}]" in text) is hint


async def test_through_the_transport_with_the_setting_on(store: LocalArtifactStore) -> None:
    # The entry point's configuration is what counts, not the transport (the server is
    # served in this process; test_mcp_stdio.py runs it over stdio): a server process of
    # its own cost about 0.9 s of CPU.
    config = BudgetConfig(preview_tool_hint=True)
    transport = InMemoryTransport(build_server())
    async with (
        BoundedTransport(transport, store=store, config=config) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("big_text", {})
    notice = result.content[0].text.split("\n", 1)[0]
    assert notice.endswith(f"{TOOL_HINT}]")
