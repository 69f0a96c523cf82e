"""The projecting acp Transport, with a real acp agent in process and over stdio."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import acp
import pytest
from acp import connect_to_agent, spawn_agent_process
from acp._transport import memory_transport_pair
from acp.connection import StreamEvent

from budgetware.core.jsonio import dumps_bytes
from budgetware.core.measure import json_string_bytes
from budgetware.display.projection import ACP_MARKER, FIELD_BUDGET
from budgetware.integrations.acp import NdjsonStreamTransport, ProjectingTransport

from .acp_agent import BIG, BigToolAgent
from .acp_client import (
    AGENT_SCRIPT,
    ASYNCIO_DEFAULT_LIMIT,
    RecordingClient,
    child_env,
    drive_with_acp_client,
    raw_session,
)


class RecordingTransport:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.closed = False

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    async def receive(self) -> dict[str, Any] | None:
        return {"jsonrpc": "2.0", "id": 9, "result": None}

    async def close(self) -> None:
        self.closed = True


def session_update(update: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": update},
    }


def assert_bounded(update: dict[str, Any]) -> None:
    assert len(dumps_bytes(update["content"])) <= FIELD_BUDGET
    assert json_string_bytes(update["rawOutput"]) <= FIELD_BUDGET
    text = update["content"][0]["content"]["text"]
    assert ACP_MARKER in text
    assert text.startswith("HEAD-")
    assert text.endswith("-TAIL")
    assert update["rawOutput"] == text


async def test_wrapper_projects_outgoing_tool_call_updates() -> None:
    inner = RecordingTransport()
    update = {"sessionUpdate": "tool_call_update", "toolCallId": "c", "rawOutput": BIG}
    await ProjectingTransport(inner).send(session_update(update))
    sent = inner.sent[0]["params"]["update"]
    assert json_string_bytes(sent["rawOutput"]) <= FIELD_BUDGET
    assert update["rawOutput"] is BIG


async def test_wrapper_passes_other_frames_as_the_same_object() -> None:
    inner = RecordingTransport()
    frames = [
        {"jsonrpc": "2.0", "id": 1, "result": {"rawOutput": BIG}},
        session_update(
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": BIG}}
        ),
    ]
    wrapper = ProjectingTransport(inner)
    for frame in frames:
        await wrapper.send(frame)
    assert all(a is b for a, b in zip(inner.sent, frames))


async def test_wrapper_delegates_receive_and_close() -> None:
    inner = RecordingTransport()
    wrapper = ProjectingTransport(inner)
    assert await wrapper.receive() == {"jsonrpc": "2.0", "id": 9, "result": None}
    await wrapper.close()
    assert inner.closed


async def test_wrapper_is_an_acp_transport() -> None:
    assert isinstance(ProjectingTransport(RecordingTransport()), acp._transport.Transport)


async def test_real_agent_in_process_reaches_the_client_bounded_and_keeps_its_full_output() -> (
    None
):
    agent_end, client_end = memory_transport_pair()
    seen_by_agent: list[dict[str, Any]] = []

    def observe(event: StreamEvent) -> None:
        seen_by_agent.append(event.message)

    agent_task = asyncio.create_task(
        acp.run_agent(BigToolAgent(), ProjectingTransport(agent_end), observers=[observe])
    )
    client = RecordingClient()
    conn = connect_to_agent(client, client_end)
    try:
        await asyncio.wait_for(drive_with_acp_client(conn), timeout=20)
    finally:
        await conn.close()
        await agent_end.close()
        await asyncio.wait_for(agent_task, timeout=5)
    (received,) = client.tool_call_updates()
    assert_bounded(received)
    # The agent's side of the connection (what a transcript would record) saw it all.
    updates = [m["params"]["update"] for m in seen_by_agent if m.get("method") == "session/update"]
    (full,) = [u for u in updates if u["sessionUpdate"] == "tool_call_update"]
    assert full["rawOutput"] == BIG
    assert full["content"][0]["content"]["text"] == BIG
    messages = [
        u["content"]["text"] for u in client.updates if u["sessionUpdate"] == "agent_message_chunk"
    ]
    assert messages == ["reading big.txt", "done"]


async def test_wrapped_stdio_agent_reaches_an_acp_client_bounded() -> None:
    client = RecordingClient()
    async with spawn_agent_process(
        client, sys.executable, AGENT_SCRIPT, "wrapped", env=child_env()
    ) as (conn, _process):
        await asyncio.wait_for(drive_with_acp_client(conn), timeout=20)
    (received,) = client.tool_call_updates()
    assert_bounded(received)


async def test_wrapped_stdio_agent_writes_compact_utf8_frames_that_all_parse() -> None:
    lines, code = await raw_session([sys.executable, AGENT_SCRIPT, "wrapped"])
    frames = [json.loads(line) for line in lines]
    assert code == 0
    (index,) = [
        i
        for i, f in enumerate(frames)
        if f.get("params", {}).get("update", {}).get("sessionUpdate") == "tool_call_update"
    ]
    # Larger than the reader's 64 KiB buffer, yet far under the unbounded 1 MB.
    assert ASYNCIO_DEFAULT_LIMIT < len(lines[index]) < 256 * 1024
    assert_bounded(frames[index]["params"]["update"])
    assert lines[index] == dumps_bytes(frames[index]) + b"\n"


async def test_ndjson_transport_reads_lines_longer_than_the_reader_limit() -> None:
    reader = asyncio.StreamReader(limit=1024)
    long_frame = {"jsonrpc": "2.0", "method": "x", "params": {"text": "汉" * 5_000}}
    reader.feed_data(b"not json\n\n" + dumps_bytes(long_frame) + b"\n")
    reader.feed_eof()
    transport = NdjsonStreamTransport(reader, writer=None)  # type: ignore[arg-type]
    assert await transport.receive() == long_frame
    assert await transport.receive() is None


class FailingProjection(ProjectingTransport):
    def project(self, message: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("projection bug")


async def test_wrapper_sends_the_frame_unchanged_when_projection_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BUDGETWARE_RAISE_ERRORS", "0")
    inner = RecordingTransport()
    frame = session_update({"sessionUpdate": "tool_call_update", "rawOutput": BIG})
    await FailingProjection(inner).send(frame)
    assert inner.sent == [frame]


async def test_wrapper_raises_projection_errors_under_raise_errors() -> None:
    # The test suite sets BUDGETWARE_RAISE_ERRORS=1 (tests/conftest.py).
    with pytest.raises(RuntimeError, match="projection bug"):
        await FailingProjection(RecordingTransport()).send(session_update({}))
