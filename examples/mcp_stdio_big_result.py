"""An MCP tool that returns 2 MB reaches the agent bounded, with its full output kept.

Run: python examples/mcp_stdio_big_result.py
The same file is the server (started as a subprocess over stdio with --serve).
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

BIG = "".join(f"{i:07d} a line of build log output\n" for i in range(70_000))  # 2.45 MB


def serve() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("build-logs")

    @server.tool()
    def build_log() -> str:
        """The whole log of the last build."""
        return BIG

    server.run("stdio")


async def main() -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from budgetware.integrations.mcp import META_ARTIFACTS, BoundedTransport

    server = StdioServerParameters(command=sys.executable, args=[__file__, "--serve"])
    # BoundedTransport wraps any MCP client transport (stdio here) and bounds tools/call
    # results as they arrive; over HTTP, budgetware.instrument() does the same.
    async with (
        BoundedTransport(stdio_client(server)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("build_log", {})

    text = result.content[0].text  # type: ignore[union-attr]
    (artifact,) = result.meta[META_ARTIFACTS]  # type: ignore[index]
    print(f"the server returned {len(BIG):,} chars; the agent received {len(text):,}")
    print(text.splitlines()[0])
    assert Path(artifact).read_text() == BIG
    print(f"full output kept in {Path(artifact).name}")


if __name__ == "__main__":
    if "--serve" in sys.argv:
        serve()
    else:
        anyio.run(main)
