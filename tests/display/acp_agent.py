"""A real ACP agent, built with the acp package's helpers, that reports one huge tool result.

Run as a script: ``python acp_agent.py plain`` serves with ``acp.run_agent`` (unbounded
output, for the proxy), ``python acp_agent.py wrapped`` with budgetware's ``run_agent``.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import acp
from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_tool_call,
)

# 499,999 bytes of tool output, with recognizable ends.
BIG = "HEAD-" + "x" * 499_989 + "-TAIL"
SESSION_ID = "sess-1"


class BigToolAgent:
    """Answers every prompt with a message, a tool call with a huge result, and a message."""

    def __init__(self) -> None:
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=PROTOCOL_VERSION)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=SESSION_ID)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        send = self.conn.session_update
        await send(session_id, update_agent_message_text("reading big.txt"))
        await send(session_id, start_tool_call("call-1", "read big.txt", kind="read"))
        await send(
            session_id,
            update_tool_call(
                "call-1",
                status="completed",
                content=[tool_content(text_block(BIG))],
                raw_output=BIG,
            ),
        )
        await send(session_id, update_agent_message_text("done"))
        return PromptResponse(stop_reason="end_turn")


async def serve(mode: str) -> None:
    if mode == "wrapped":
        from budgetware.integrations.acp import run_agent

        await run_agent(BigToolAgent())
    else:
        await acp.run_agent(BigToolAgent())


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1] if len(sys.argv) > 1 else "plain"))
