"""preview_tool_hint at the MCP producer boundary: a result bounded where it enters the
agent names the read_tool_output tool too, when the entry point's configuration says so."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from budgetware import BudgetConfig
from budgetware.core.finalize import preview_options
from budgetware.core.notice import TOOL_HINT
from budgetware.integrations.mcp import BoundedTransport
from budgetware.mcp.bound import bound_tool_result
from budgetware.store.local import LocalArtifactStore

SERVER = StdioServerParameters(
    command=sys.executable, args=[str(Path(__file__).with_name("mcp_server_app.py"))]
)
BIG = {"content": [{"type": "text", "text": "log line\n" * 50_000}]}


def test_bound_tool_result_takes_the_configuration_s_wording(store: LocalArtifactStore) -> None:
    for hint in (False, True):
        options = preview_options(BudgetConfig(preview_tool_hint=hint))
        outcome = bound_tool_result(BIG, budget=5_000, store=store, options=options)
        text = outcome.result["content"][0]["text"]
        assert len(text) <= 5_000
        assert outcome.refs
        assert (f"{outcome.refs[0]}{TOOL_HINT}]" in text) is hint


async def test_over_stdio_with_the_setting_on(store: LocalArtifactStore) -> None:
    config = BudgetConfig(preview_tool_hint=True)
    async with (
        BoundedTransport(stdio_client(SERVER), store=store, config=config) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("big_text", {})
    notice = result.content[0].text.split("\n", 1)[0]
    assert notice.endswith(f"{TOOL_HINT}]")
