"""The hooks in the ACP, headless and MCP boundaries emit their stages; off, they do nothing."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

from budgetware.diagnostics import events as diagnostics
from budgetware.display.acp_proxy import pump_stdout
from budgetware.display.headless import HeadlessWriter
from budgetware.integrations.acp import NdjsonStreamTransport, ProjectingTransport
from budgetware.mcp.bound import bound_tool_result
from budgetware.store.local import LocalArtifactStore

from .conftest import Log

BIG = "b" * 100_000


def _update(call: str, text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "s",
            "update": {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call,
                "content": [{"type": "content", "content": {"type": "text", "text": text}}],
            },
        },
    }


def _headless(text: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": "tu", "content": text}
    return {"type": "user", "message": {"role": "user", "content": [block]}}


def test_headless_writer_emits_the_projection_pair(log: Log) -> None:
    HeadlessWriter(io.BytesIO()).write(_headless(BIG))
    stages = [e["stage"] for e in log.events]
    assert stages == ["headless_projection_input", "headless_projection_output"]
    before, after = (e["values"][0]["hmac_sha256"] for e in log.events)
    assert before != after


def test_headless_wire_bytes_are_the_bytes_written(log: Log) -> None:
    for mode in ("stream-json", "json"):
        stream = io.BytesIO()
        writer = HeadlessWriter(stream, mode, budget=10**9)  # not projected: oversized on wire
        writer.write(_headless(BIG))
        (wire,) = [e for e in log.events if e["stage"] == "headless_wire"]
        assert wire["wire_utf8_bytes"] == len(stream.getvalue())
        writer.close()
        log.lines.clear()


def test_acp_proxy_emits_projection_and_wire(log: Log) -> None:
    lines = json.dumps(_update("c1", BIG)).encode() + b"\n"
    sink = io.BytesIO()
    pump_stdout(io.BytesIO(lines), sink, 10**9)  # unprojected: the wire carries it whole
    (wire,) = [e for e in log.events if e["stage"] == "acp_wire"]
    assert wire["wire_utf8_bytes"] == len(sink.getvalue())
    assert wire["tool_call_hmacs"] == [diagnostics.keyed_hash("c1")]
    log.lines.clear()
    pump_stdout(io.BytesIO(lines), io.BytesIO(), 65_536)
    stages = [e["stage"] for e in log.events]
    assert stages == ["acp_projection_input", "acp_projection_output"]


async def test_acp_transports_emit_projection_and_wire(log: Log) -> None:
    sent: list[dict[str, Any]] = []

    class Inner:
        async def send(self, message: dict[str, Any]) -> None:
            sent.append(message)

        async def receive(self) -> dict[str, Any] | None:
            return None

        async def close(self) -> None:
            return None

    await ProjectingTransport(Inner()).send(_update("c2", BIG))
    assert [e["stage"] for e in log.events] == ["acp_projection_input", "acp_projection_output"]
    log.lines.clear()

    class Writer:
        def __init__(self) -> None:
            self.data = b""

        def write(self, data: bytes) -> None:
            self.data += data

        async def drain(self) -> None:
            return None

    writer = Writer()
    transport = NdjsonStreamTransport(asyncio.StreamReader(), writer)  # type: ignore[arg-type]
    await transport.send(_update("c3", BIG))
    (wire,) = log.events
    assert (wire["stage"], wire["wire_utf8_bytes"]) == ("acp_wire", len(writer.data))


def test_mcp_producer_emits_its_pair_with_the_artifact_state(log: Log, tmp_path: Any) -> None:
    result = {"content": [{"type": "text", "text": "m" * 50_000}], "isError": False}
    store = LocalArtifactStore(tmp_path / "artifacts")
    outcome = bound_tool_result(result, budget=1_000, store=store)
    assert outcome.refs
    before, after = log.events
    assert (before["stage"], after["stage"]) == ("producer_input", "producer_output")
    assert before["artifacts"] == [{"state": "undecided", "kinds": []}]
    assert after["artifacts"] == [{"state": "reusable", "kinds": ["file"]}]
    assert before["values"][0]["code_points"] == 50_000
    assert after["values"][0]["code_points"] <= 1_000
    assert str(tmp_path) not in log.text


def test_hooks_are_silent_when_off() -> None:
    assert diagnostics.enabled is False
    stream = io.BytesIO()
    HeadlessWriter(stream).write(_headless(BIG))
    bound_tool_result({"content": [{"type": "text", "text": BIG}]}, budget=1_000, persist=False)
    assert diagnostics.failures == 0
    assert len(stream.getvalue()) < 70_000


def test_http_transport_emits_http_wire_for_the_bytes_sent(log: Log) -> None:
    import httpx

    from budgetware.http.transport import BudgetTransport

    received: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        received.append(request.content)
        return httpx.Response(200, json={})

    messages = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "call-h", "content": "h" * 300_000},
    ]
    transport = BudgetTransport(httpx.MockTransport(handler))
    with httpx.Client(transport=transport) as client:
        client.post("https://api.example/v1/chat/completions", json={"messages": messages})
    (wire,) = [e for e in log.events if e["stage"] == "http_wire"]
    assert wire["wire_utf8_bytes"] == len(received[0])
    assert wire["tool_call_hmacs"] == [diagnostics.keyed_hash("call-h")]
    (finalized,) = [e for e in log.events if e["stage"] == "finalizer_output"]
    assert wire["values"][0]["hmac_sha256"] == finalized["values"][0]["hmac_sha256"]
