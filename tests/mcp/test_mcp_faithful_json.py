"""The MCP rewrites change nothing but tool text: numbers keep the server's spelling."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from budgetware.integrations.mcp import rewrite_mcp_response
from budgetware.store.local import LocalArtifactStore

BIG = "m" * 200_000
NUMBERS = b'"score": 1e400, "nan": NaN, "ninf": -Infinity, "big": 123456789012345678901234567890'
CALL = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"dump"}}'


def _result(spacing: bytes = b" ") -> bytes:
    text = json.dumps(BIG).encode()
    return (
        b'{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": '
        + text
        + b'}], "structuredContent": {"result": '
        + text
        + b", "
        + NUMBERS
        + b'}, "isError": false}}'
    ).replace(b" ", spacing)


def _exchange(body: bytes, content_type: str) -> tuple[httpx2.Request, httpx2.Response]:
    request = httpx2.Request(
        "POST",
        "http://127.0.0.1:1/mcp",
        content=CALL,
        headers={"accept": "application/json, text/event-stream"},
    )
    response = httpx2.Response(
        200, headers={"content-type": content_type}, content=body, request=request
    )
    return request, response


def _assert_numbers_kept(out: bytes) -> None:
    assert NUMBERS in out
    decoded = json.loads(out)
    result = decoded["result"]
    assert len(result["content"][0]["text"]) <= 100_000
    assert result["structuredContent"]["result"] == result["content"][0]["text"]
    assert result["_meta"]["budgetware/artifacts"]


@pytest.mark.parametrize("spacing", [b" ", b"  "])
def test_the_json_rewrite_keeps_every_number_as_the_server_wrote_it(
    tmp_path: Path, spacing: bytes
) -> None:
    body = _result(spacing)
    request, response = _exchange(body, "application/json")
    new = rewrite_mcp_response(request, response, store=LocalArtifactStore(tmp_path))
    assert new is not response
    _assert_numbers_kept(new.content.replace(spacing, b" "))


def test_the_sse_rewrite_keeps_every_number_as_the_server_wrote_it(tmp_path: Path) -> None:
    event = b"event: message\r\nid: 3\r\ndata: " + _result() + b"\r\n\r\n"
    request, response = _exchange(event, "text/event-stream")
    new = rewrite_mcp_response(request, response, store=LocalArtifactStore(tmp_path))
    out = new.content
    assert out.startswith(b"event: message\r\nid: 3\r\ndata: ")
    assert out.endswith(b"\r\n\r\n")
    _assert_numbers_kept(out[len(b"event: message\r\nid: 3\r\ndata: ") : -4])


def test_a_multi_line_sse_event_stays_a_valid_event(tmp_path: Path) -> None:
    # A server may split one JSON message over several data lines.
    lines = _result().replace(b', "isError"', b',\n"isError"').split(b"\n")
    event = b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"
    request, response = _exchange(event, "text/event-stream")
    new = rewrite_mcp_response(request, response, store=LocalArtifactStore(tmp_path))
    data = [line[len(b"data: ") :] for line in new.content.split(b"\n") if line]
    assert len(data) == 2
    _assert_numbers_kept(b"\n".join(data))
    assert len(new.content) <= 1024 * 1024


def test_an_event_over_the_limit_only_by_its_escapes_keeps_every_number(tmp_path: Path) -> None:
    # 99,000 astral characters fit the 100,000-char result budget, but escaped as the
    # server wrote them (12 bytes each) the event is 1.19 MB: it is written compactly, and
    # only the strings change spelling.
    text = json.dumps("\U0001f600" * 99_000).encode()
    numbers = b'"a":1e400,"e":1E+2,"f":1.50,"t":1e-400,"big":123456789012345678901234567891'
    payload = (
        b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":'
        + text
        + b'}],"structuredContent":{'
        + numbers
        + b"}}}"
    )
    assert len(payload) > 1024 * 1024
    request, response = _exchange(b"data: " + payload + b"\n\n", "text/event-stream")
    new = rewrite_mcp_response(request, response, store=LocalArtifactStore(tmp_path))
    out = new.content
    assert len(out) <= 1024 * 1024
    assert out.startswith(b"data: ")
    assert out.endswith(b"}}}\n\n")
    assert b'"structuredContent":{' + numbers + b"}" in out
    decoded = json.loads(out[len(b"data: ") :])
    assert decoded["result"]["content"][0]["text"] == "\U0001f600" * 99_000
    assert list(tmp_path.iterdir()) == []  # nothing was cut: no artifact


def test_a_raw_surrogate_byte_in_an_sse_event_does_not_leave_it_unbounded(
    tmp_path: Path,
) -> None:
    # CESU-8: a surrogate written as raw bytes. The JSON parser accepts it; the event used
    # to be decoded strictly and passed through whole.
    big = "s" * 200_000
    payload = (
        b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"'
        + big.encode()
        + b'"}],"_meta":{"k\xed\xa0\x80":1},"isError":false}}'
    )
    request, response = _exchange(
        b"event: message\ndata: " + payload + b"\n\n", "text/event-stream"
    )
    new = rewrite_mcp_response(request, response, store=LocalArtifactStore(tmp_path))
    out = new.content
    assert len(out) < 110_000
    assert b'"k\xed\xa0\x80":1' in out  # the key keeps its bytes
    assert out.startswith(b"event: message\ndata: ")
    decoded = json.loads(out[len(b"event: message\ndata: ") :])
    assert len(decoded["result"]["content"][0]["text"]) <= 100_000
    assert decoded["result"]["_meta"]["budgetware/artifacts"]
