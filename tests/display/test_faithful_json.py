"""Nothing but tool text changes on the display boundaries: numbers are written as read."""

from __future__ import annotations

import asyncio
import datetime
import io
import json
import math
import uuid
from typing import Any

import pytest

from budgetware.display.acp_proxy import rewrite_line
from budgetware.display.headless import HeadlessWriter
from budgetware.display.projection import FIELD_BUDGET
from budgetware.integrations.acp import NdjsonStreamTransport

BIG = "r" * 200_000
# Spellings a re-serializer changes: orjson writes the first three as null, the standard
# library writes 1e400 as Infinity; the rest are reformatted by either.
NUMBERS = (
    b'"nan": NaN, "inf": 1e400, "ninf": -Infinity, "big": 123456789012345678901234567890, '
    b'"z": -0.0, "e": 1E+2, "f": 1.50'
)


def test_the_acp_proxy_keeps_every_byte_but_the_projected_field() -> None:
    head = b'{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", '
    update = b'"update": {"sessionUpdate": "tool_call_update", "toolCallId": "c", "rawOutput": '
    tail = b', "_meta": {' + NUMBERS + b"}}}}\n"
    line = head + update + json.dumps(BIG).encode() + tail
    out = rewrite_line(line)
    assert out.startswith(head + update)
    assert out.endswith(tail)
    projected = out[len(head + update) : -len(tail)]
    assert len(projected) <= FIELD_BUDGET
    assert len(json.loads(projected)) < len(BIG)


class _Writer:
    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data

    async def drain(self) -> None:
        pass


VALUES: dict[str, Any] = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf, "f": 1.5}


def _assert_values_as_python_writes_them(line: bytes) -> None:
    # What the agent's own writer (json.dumps: acp's stdio transport, a headless run)
    # would write for these values; orjson would write null for the first three.
    for spelling in (b'"nan":NaN', b'"inf":Infinity', b'"ninf":-Infinity', b'"f":1.5'):
        assert spelling in line
    decoded = json.loads(line)
    found = decoded.get("params", decoded).get("_meta") or decoded["message"]["_meta"]
    assert math.isnan(found["nan"])
    assert found["inf"] == math.inf


def test_the_acp_ndjson_transport_writes_every_value_as_it_is() -> None:
    writer = _Writer()
    transport = NdjsonStreamTransport(reader=None, writer=writer)  # type: ignore[arg-type]
    frame = {"jsonrpc": "2.0", "method": "session/update", "params": {"_meta": VALUES}}
    asyncio.run(transport.send(frame))
    _assert_values_as_python_writes_them(bytes(writer.data))


def test_the_headless_writer_writes_every_value_as_it_is() -> None:
    stream = io.BytesIO()
    message = {
        "type": "user",
        "message": {
            "role": "user",
            "_meta": VALUES,
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": BIG}],
        },
    }
    with HeadlessWriter(stream, "stream-json") as writer:
        writer.write(message)
    line = stream.getvalue()
    _assert_values_as_python_writes_them(line)
    assert len(json.loads(line)["message"]["content"][0]["content"]) < len(BIG)


# Types orjson writes that the standard library cannot: they used to be written beside a
# None (or a NaN) too, until the writer switched to json.dumps whenever a null appeared.
STAMP = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
UID = uuid.UUID("12345678-1234-5678-1234-567812345678")


@pytest.mark.parametrize("beside", [None, math.nan, 2**70 + 1])
def test_the_headless_writer_writes_datetimes_beside_none_nan_and_big_integers(
    beside: Any,
) -> None:
    stream = io.BytesIO()
    with HeadlessWriter(stream, "stream-json") as writer:
        writer.write({"type": "system", "ts": STAMP, "uid": UID, "session_id": beside})
    line = stream.getvalue()
    assert b'"ts":"2026-01-02T03:04:05+00:00"' in line
    assert b'"uid":"12345678-1234-5678-1234-567812345678"' in line
    expected = {None: b"null", 2**70 + 1: str(2**70 + 1).encode()}.get(beside, b"NaN")
    assert b'"session_id":' + expected in line


def test_the_acp_ndjson_transport_writes_datetimes_beside_none() -> None:
    writer = _Writer()
    transport = NdjsonStreamTransport(reader=None, writer=writer)  # type: ignore[arg-type]
    frame = {"jsonrpc": "2.0", "id": None, "result": {"at": STAMP, "nan": math.nan}}
    asyncio.run(transport.send(frame))
    line = bytes(writer.data)
    assert line.startswith(b'{"jsonrpc":"2.0","id":null,"result":{"at":"2026-01-02T03:04:05')
    assert b'"nan":NaN' in line


def test_the_acp_ndjson_transport_reads_big_integers_exactly() -> None:
    async def receive() -> Any:
        reader = asyncio.StreamReader()
        reader.feed_data(b'{"jsonrpc":"2.0","id":123456789012345678901234567891,"result":{}}\n')
        reader.feed_eof()
        transport = NdjsonStreamTransport(reader=reader, writer=_Writer())  # type: ignore[arg-type]
        return await transport.receive()

    message = asyncio.run(receive())
    assert message["id"] == 123456789012345678901234567891
    assert type(message["id"]) is int


def test_the_acp_proxy_keeps_big_integers_when_it_writes_a_frame_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The last resort (bytes that do not follow the structure: never from a real parser)
    # writes the projected frame whole: its values are still the ones the agent wrote.
    from budgetware.display import acp_proxy

    monkeypatch.setattr(acp_proxy, "patch_json", lambda body, old, new: None)
    line = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"tool_call_update","toolCallId":"c","rawOutput":'
        + json.dumps(BIG).encode()
        + b'},"_meta":{"big":123456789012345678901234567891}}}\n'
    )
    out = rewrite_line(line)
    assert out.endswith(b',"_meta":{"big":123456789012345678901234567891}}}\n')
