"""Client-side helpers for the ACP tests: a recording acp Client and a raw NDJSON session."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from acp import RequestPermissionResponse

AGENT_SCRIPT = str(Path(__file__).with_name("acp_agent.py"))
REPO_ROOT = str(Path(__file__).resolve().parents[2])
# asyncio's default StreamReader limit: frames above it must still get through.
ASYNCIO_DEFAULT_LIMIT = 64 * 1024


def child_env() -> dict[str, str]:
    """The environment for child processes: budgetware importable from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, env.get("PYTHONPATH")) if p)
    return env


def proxy_command(*agent: str) -> list[str]:
    return [sys.executable, "-m", "budgetware", "acp-proxy", "--", *agent]


class RecordingClient:
    """An acp Client that keeps every session update as the JSON the agent sent."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def request_permission(self, *args: Any, **kwargs: Any) -> RequestPermissionResponse:
        raise NotImplementedError

    def tool_call_updates(self) -> list[dict[str, Any]]:
        return [u for u in self.updates if u.get("sessionUpdate") == "tool_call_update"]


async def drive_with_acp_client(conn: Any) -> None:
    """initialize, session/new and one prompt through an acp ClientSideConnection."""
    from acp import PROTOCOL_VERSION, text_block

    await conn.initialize(protocol_version=PROTOCOL_VERSION)
    session = await conn.new_session(cwd=REPO_ROOT, mcp_servers=[])
    await conn.prompt(session_id=session.session_id, prompt=[text_block("read big.txt")])


REQUESTS = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
    {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}},
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "session/prompt",
        "params": {"sessionId": "sess-1", "prompt": [{"type": "text", "text": "go"}]},
    },
]


async def raw_session(command: list[str]) -> tuple[list[bytes], int]:
    """Speak raw NDJSON to an agent command: every stdout line it wrote, and its exit code.

    Lines are read with asyncio's default buffer limit and reassembled from chunks, the
    way acp's own reader does, so over-long frames are exercised, not avoided.
    """
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=child_env(),
        limit=ASYNCIO_DEFAULT_LIMIT,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    lines: list[bytes] = []
    for request in REQUESTS:
        process.stdin.write(json.dumps(request).encode() + b"\n")
        await process.stdin.drain()
        while True:
            line = await asyncio.wait_for(read_line(process.stdout), timeout=20)
            assert line, "the agent closed its stdout early"
            lines.append(line)
            if json.loads(line).get("id") == request["id"]:
                break
    process.stdin.close()
    code = await asyncio.wait_for(process.wait(), timeout=20)
    return lines, code


async def read_line(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    while True:
        try:
            chunks.append(await reader.readuntil(b"\n"))
            return b"".join(chunks)
        except asyncio.LimitOverrunError as exc:
            chunks.append(await reader.readexactly(exc.consumed))
        except asyncio.IncompleteReadError as exc:
            chunks.append(exc.partial)
            return b"".join(chunks)
