"""A large non-streamed MCP response is bounded off the event loop (like large requests)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx2
import pytest
from held_s3 import (
    TICKS,
    TIMEOUT,
    HeldS3,
    held_s3,
    held_s3_store_url,
    prepare_store,
    ticks_while_held,
)
from local_servers import serving

from budgetware.core.config import BudgetConfig, budget
from budgetware.http.instrument import instrument
from budgetware.http.transport import OFFLOAD_BYTES
from budgetware.mcp import http as mcp_http
from budgetware.store import select

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "dump"}}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def result_body(size: int) -> bytes:
    text = ("x" * 99 + "\n") * (size // 100)
    result = {"content": [{"type": "text", "text": text}], "isError": False}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode()


@pytest.fixture(scope="module")
def mcp_json_url() -> Iterator[str]:
    """A loopback endpoint answering every POST with one 4.3 MB JSON tools/call result."""
    body = result_body(4_300_000)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"


@pytest.fixture
def bound_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread each MCP result was bounded in."""
    threads: list[int] = []
    original: Callable[..., Any] = mcp_http.bound_response_message

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return original(*args, **kwargs)

    monkeypatch.setattr(mcp_http, "bound_response_message", recording)
    return threads


async def test_a_large_read_mcp_response_is_bounded_off_the_loop(
    mcp_json_url: str, bound_threads: list[int], tmp_path: Path
) -> None:
    assert len(result_body(4_300_000)) > OFFLOAD_BYTES
    with instrument(config=BudgetConfig(artifact_dir=tmp_path)):
        async with httpx2.AsyncClient() as client:
            response = await client.post(mcp_json_url, json=CALL, headers=HEADERS)
    text = response.json()["result"]["content"][0]["text"]
    assert len(text) <= 100_000
    assert bound_threads
    assert threading.get_ident() not in bound_threads


@pytest.mark.parametrize("s3_elsewhere", [False, True], ids=["alone", "beside-an-s3-store"])
async def test_a_small_read_response_stays_on_the_loop(
    bound_threads: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, s3_elsewhere: bool
) -> None:
    # Whether an S3 store was named earlier in this process (by another entry point, or
    # an earlier test on the same xdist worker) used to decide: it sent every response
    # from 64 KiB to a worker thread, this one's store local or not. This entry point's
    # store is local: its writes never wait for a network.
    monkeypatch.setattr(select, "_remote_in_use", s3_elsewhere)
    body = result_body(200_000)  # over the result budget, under the offload size

    def reply(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=body)

    with instrument(config=BudgetConfig(artifact_dir=tmp_path)):
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(reply)) as client:
            await client.post("http://mcp.test/mcp", json=CALL, headers=HEADERS)
    assert bound_threads == [threading.get_ident()]


# --- the worker holds the GIL in no long call (the loop is never stalled over 10 ms) ------
#
# A worker thread lets the event loop in only between C calls, after the interpreter's
# switch interval (5 ms): one orjson.loads of 4.3 MB (4 to 8 ms here) added to that is too
# long a stall. Time is not asserted (benchmarks/bench_targets.py measures the stall); what
# is asserted is that no single parse covers the long text.


class _RecordingOrjson:
    """orjson, recording the size of every text it parses."""

    def __init__(self, orjson: Any) -> None:
        self._orjson = orjson
        self.sizes: list[int] = []

    def loads(self, data: Any) -> Any:
        self.sizes.append(len(data))
        return self._orjson.loads(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._orjson, name)


@pytest.fixture
def orjson_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from budgetware.core import jsonio

    if jsonio._orjson is None:
        pytest.skip("orjson is not installed")
    recording = _RecordingOrjson(jsonio._orjson)
    monkeypatch.setattr(jsonio, "_orjson", recording)
    return recording.sizes


def _rewrite_in_thread(request: Any, response: Any, config: BudgetConfig) -> Any:
    from budgetware.http.hooks import rewrite_response

    return rewrite_response(request, response, config)


@pytest.mark.parametrize("structured", [False, True], ids=["text", "text-and-structured"])
def test_a_large_result_is_parsed_in_pieces(
    orjson_sizes: list[int], tmp_path: Path, structured: bool
) -> None:
    from budgetware.mcp import pieces

    text = "".join(f'line {i}: ok "quoted" tab\t done\n' for i in range(120_000))
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if structured:
        result["structuredContent"] = {"output": text}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode()
    assert len(body) > 4_000_000
    request = httpx2.Request("POST", "http://mcp.test/mcp", json=CALL, headers=HEADERS)
    response = httpx2.Response(
        200, headers={"content-type": "application/json"}, content=body, request=request
    )
    new = _rewrite_in_thread(request, response, BudgetConfig(artifact_dir=tmp_path))
    bounded = new.json()["result"]
    assert len(bounded["content"][0]["text"]) <= 100_000
    assert bounded["_meta"]["budgetware/artifacts"]
    assert orjson_sizes
    assert max(orjson_sizes) <= pieces.PIECE_BYTES + 1024


def test_a_large_tools_call_argument_is_not_decoded_to_read_the_call(
    orjson_sizes: list[int], tmp_path: Path
) -> None:
    # Only the id, the method and the tool's name of the request are needed.
    call = {**CALL, "params": {"name": "upload", "arguments": {"data": "x" * 3_000_000}}}
    request = httpx2.Request("POST", "http://mcp.test/mcp", json=call, headers=HEADERS)
    response = httpx2.Response(
        200,
        headers={"content-type": "application/json"},
        content=result_body(200_000),
        request=request,
    )
    new = _rewrite_in_thread(request, response, BudgetConfig(artifact_dir=tmp_path))
    assert len(new.json()["result"]["content"][0]["text"]) <= 100_000
    assert max(orjson_sizes) < 300_000


@pytest.mark.parametrize("field", ["id", "name"])
def test_a_long_id_or_tool_name_is_read_whole_while_the_argument_is_not(
    field: str, tmp_path: Path
) -> None:
    # Read as empty, an id of 64 KiB or more matched no response: delivered unbounded.
    from budgetware.mcp.pieces import LONG_STRING_BYTES, loads_outline

    long = "i" * (LONG_STRING_BYTES + 10)
    call = {**CALL, "params": {"name": "dump", "arguments": {"data": "x" * 300_000}}}
    if field == "id":
        call["id"] = long
    else:
        call["params"]["name"] = long  # type: ignore[index]
    body = json.dumps(call).encode()
    outline = loads_outline(body)
    assert outline["params"]["arguments"]["data"] == ""
    assert (outline["id"], outline["params"]["name"]) == (call["id"], call["params"]["name"])  # type: ignore[index]
    request = httpx2.Request("POST", "http://mcp.test/mcp", content=body, headers=HEADERS)
    answer = json.loads(result_body(200_000))
    answer["id"] = call["id"]
    response = httpx2.Response(
        200,
        headers={"content-type": "application/json"},
        content=json.dumps(answer).encode(),
        request=request,
    )
    # The long tool name is read whole: its own budget applies.
    tools = {long: 5_000} if field == "name" else {}
    config = BudgetConfig(artifact_dir=tmp_path, mcp_tools=tools)
    new = _rewrite_in_thread(request, response, config)
    assert new.json()["id"] == call["id"]
    text = new.json()["result"]["content"][0]["text"]
    assert text.startswith("[Tool output truncated")
    assert len(text) <= (5_000 if field == "name" else 100_000)


def _long(text: str, *, ensure_ascii: bool = True) -> bytes:
    doc = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": text}]}}
    return json.dumps(doc, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass")


def _pieces_cases() -> list[Any]:
    emoji = "\U0001f600"
    return [
        pytest.param(_long("a" * 900_000), id="ascii"),
        # A surrogate pair (\ud83d\ude00 in the JSON) and raw UTF-8 across every cut.
        pytest.param(_long((emoji + "ab" * 7) * 100_000), id="escaped-pairs"),
        pytest.param(_long(("é" + emoji + "xy") * 150_000, ensure_ascii=False), id="raw-utf8"),
        pytest.param(_long("\ud800x" * 200_000), id="lone-surrogates"),
        # Raw surrogate bytes (CESU-8): the standard library reads them (surrogatepass).
        pytest.param(_long("q" * 300_000).replace(b"qqq", b"\xed\xa0\x80", 50_000), id="cesu-8"),
        pytest.param(_long('say "hi"\\ \n\t/' * 60_000), id="escapes"),
        # Escapes everywhere: no place to cut, so it is read whole, the plain way.
        pytest.param(_long("\n" * 300_000), id="no-safe-cut"),
        pytest.param(
            _long("9" * 400_000).replace(b'"id": 7', b'"id": 123456789012345678901234'),
            id="big-integer",
        ),
        pytest.param(b'{"' + b"k" * 300_000 + b'": "' + b"v" * 300_000 + b'"}', id="long-key"),
        pytest.param(b'"' + b"r" * 800_000 + b'"', id="a-string-alone"),
        pytest.param(
            b"[" + b",".join(b'"' + bytes([65 + i]) * 70_000 + b'"' for i in range(20)) + b"]",
            id="many-long",
        ),
        pytest.param(b'{"a": ["' + b"s" * 200_000 + b'", NaN, 1e400]}', id="non-finite"),
    ]


@pytest.mark.parametrize("body", _pieces_cases())
def test_loads_in_pieces_reads_exactly_what_loads_exact_reads(body: bytes) -> None:
    from budgetware.core.jsonio import loads_exact
    from budgetware.mcp.pieces import loads_in_pieces

    expected = loads_exact(body)
    got = loads_in_pieces(body)
    assert got == expected or (got != got and expected != expected)  # NaN aside
    assert json.dumps(got, allow_nan=True) == json.dumps(expected, allow_nan=True)


@pytest.mark.parametrize(
    "body",
    [
        b'{"a": "' + b"x" * 300_000,
        b'{"a": "' + b"x" * 300_000 + b'"',
        b'["' + b"x" * 300_000 + b'\x01"]',
        b'["' + b"x" * 300_000 + b'\\q"]',
        b'["' + b"x" * 300_000 + b'\xff"]',
        b'["' + b"x" * 300_000 + b'"] trailing',
    ],
    ids=["unterminated", "unclosed", "control", "bad-escape", "bad-utf8", "trailing"],
)
def test_loads_in_pieces_refuses_what_loads_exact_refuses(body: bytes) -> None:
    from budgetware.core.jsonio import loads_exact
    from budgetware.mcp.pieces import loads_in_pieces

    with pytest.raises(ValueError) as plain:
        loads_exact(body)
    with pytest.raises(ValueError) as pieces:
        loads_in_pieces(body)
    assert type(pieces.value) is type(plain.value)


# --- small responses that will persist to S3 go off the loop too -------------------------
#
# The store's PUT is held until the loop has turned beside it (tests/held_s3.py): a rewrite
# on the loop lets no tick in, whatever the load; one in a worker thread lets them in.

SMALL_RESULT = 30_000
"""A tools/call result far below every size rule (64 KiB, 1 MiB), over a 2,000 budget."""


def _small_reply(request: httpx2.Request) -> httpx2.Response:
    body = result_body(SMALL_RESULT)
    return httpx2.Response(200, headers={"content-type": "application/json"}, content=body)


@pytest.fixture
def held_store(s3_endpoint: str) -> Iterator[HeldS3]:
    with held_s3(s3_endpoint) as held:
        yield held


@pytest.mark.parametrize("store_from", ["instrument", "budget-block"])
async def test_a_small_mcp_result_over_its_budget_waits_for_s3_off_the_loop(
    held_store: HeldS3,
    monkeypatch: pytest.MonkeyPatch,
    bound_threads: list[int],
    store_from: str,
) -> None:
    # The HTTP layer does not know the MCP budget (BUDGETWARE_MCP_RESULT_BUDGET); the MCP
    # boundary tells it that this result is over it and will be written to S3. In a
    # budget(artifact_store=...) block no store exists before its first request.
    url = held_s3_store_url(monkeypatch, held_store)
    settings = {"artifact_store": url, "artifact_store_timeout": TIMEOUT}
    prepare_store(BudgetConfig(**settings))
    monkeypatch.setattr(select, "_remote_in_use", False)  # as if nothing had named S3
    monkeypatch.setenv("BUDGETWARE_MCP_RESULT_BUDGET", "2000")
    assert len(result_body(SMALL_RESULT)) < 64 * 1024
    config = BudgetConfig(**settings) if store_from == "instrument" else None
    if config is not None:
        monkeypatch.setattr(select, "_remote_in_use", True)  # instrument() set it up
    block = budget(**settings) if store_from == "budget-block" else contextlib.nullcontext()
    with instrument(config=config), block:
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(_small_reply)) as client:
            held = await ticks_while_held(
                held_store, client.post("http://mcp.test/mcp", json=CALL, headers=HEADERS)
            )
    assert held.ticks >= TICKS, held
    assert not held.done_while_held
    assert held_store.abandoned == 0
    assert bound_threads
    assert threading.get_ident() not in bound_threads
    text = held.result.json()["result"]["content"][0]["text"]
    assert len(text) <= 2000
    assert url + "/" in text


async def test_a_small_mcp_result_under_its_budget_stays_on_the_loop_with_s3(
    held_store: HeldS3, monkeypatch: pytest.MonkeyPatch, bound_threads: list[int]
) -> None:
    url = held_s3_store_url(monkeypatch, held_store)
    config = BudgetConfig(artifact_store=url, artifact_store_timeout=TIMEOUT)
    prepare_store(config)
    with instrument(config=config):
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(_small_reply)) as client:
            response = await client.post("http://mcp.test/mcp", json=CALL, headers=HEADERS)
    # Under the 100,000-character default: nothing to cut, nothing to write.
    assert bound_threads == [threading.get_ident()]
    assert held_store.held == 0
    assert response.content == result_body(SMALL_RESULT)


@pytest.mark.parametrize("text", ["a" * 3_000_000, "é\ud800😀x" * 300_000], ids=["ascii", "mixed"])
def test_the_content_address_of_a_long_text_is_encoded_in_pieces(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    # Hashing releases the GIL; encoding 3 MB to hash it does not.
    import hashlib

    from budgetware.core import artifacts

    hashed: list[int] = []

    class Recording:
        def __init__(self, data: bytes = b"") -> None:
            self._sha = hashlib.sha256()
            if data:
                self.update(data)

        def update(self, data: bytes) -> None:
            hashed.append(len(data))
            self._sha.update(data)

        def digest(self) -> bytes:
            return self._sha.digest()

    monkeypatch.setattr(artifacts, "hashlib", SimpleNamespace(sha256=Recording))
    assert (
        artifacts.text_key(text)
        == hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    )
    assert len(hashed) > 1
    assert max(hashed) <= 4 * 256 * 1024


def test_a_large_sse_event_is_parsed_in_pieces(orjson_sizes: list[int], tmp_path: Path) -> None:
    from budgetware.mcp import pieces

    body = b"event: message\r\nid: 7\r\ndata: " + result_body(4_300_000) + b"\r\n\r\n"
    request = httpx2.Request("POST", "http://mcp.test/mcp", json=CALL, headers=HEADERS)
    response = httpx2.Response(
        200, headers={"content-type": "text/event-stream"}, content=body, request=request
    )
    new = _rewrite_in_thread(request, response, BudgetConfig(artifact_dir=tmp_path))
    head, _, data = new.content.partition(b"data: ")
    assert head == b"event: message\r\nid: 7\r\n"
    assert data.endswith(b"\r\n\r\n")
    assert len(json.loads(data)["result"]["content"][0]["text"]) <= 100_000
    assert max(orjson_sizes) <= pieces.PIECE_BYTES + 1024


@pytest.mark.parametrize(
    ("buf", "found"),
    [
        (b"ab\r\ny", (2, 4)),
        (b"ab\ry\n", (2, 3)),
        (b"ab\ny\r", (2, 3)),
        (b"ab\r", (2, 3)),
        (b"ab\n\r\n", (2, 3)),
        (b"\r\n", (0, 2)),
        (b"ab", None),
    ],
    ids=["crlf", "lone-cr", "lf", "cr-last", "lf-then-crlf", "crlf-alone", "none"],
)
def test_the_first_line_ending_is_found(buf: bytes, found: tuple[int, int] | None) -> None:
    assert mcp_http._next_eol(buf, 0) == found
    assert mcp_http._next_eol(b"zz" + buf, 2) == (
        None if found is None else (found[0] + 2, found[1] + 2)
    )


async def test_a_streamed_json_answer_is_joined_in_the_worker_thread(tmp_path: Path) -> None:
    # A streamed answer's chunks arrive on the loop; finish() runs there too, and only
    # hands over the work: the 4 MB join happens where the rewrite runs.
    import anyio.to_thread

    joined_in: list[int] = []

    class Parts(list[bytes]):
        def __iter__(self) -> Iterator[bytes]:
            joined_in.append(threading.get_ident())
            return super().__iter__()

    transform = mcp_http._JsonTransform(1, lambda message: message)
    body = result_body(4_300_000)
    for start in range(0, len(body), 65_536):
        transform.feed(body[start : start + 65_536])
    transform._parts = Parts(transform._parts)
    (out,) = transform.finish()
    assert joined_in == []
    assert callable(out)
    assert await anyio.to_thread.run_sync(out) == body
    assert joined_in
    assert threading.get_ident() not in joined_in


def test_a_long_sse_notification_passes_without_being_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A long event is handed to the worker unsearched; one that holds no result is not
    # parsed there either, only passed on.
    parsed: list[int] = []
    real = mcp_http.loads_in_pieces

    def recording(text: bytes) -> Any:
        parsed.append(len(text))
        return real(text)

    monkeypatch.setattr(mcp_http, "loads_in_pieces", recording)
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "n" * 500_000}}
    event = b"event: message\ndata: " + json.dumps(note).encode() + b"\n\n"
    result = result_body(200_000)
    body = event + b"event: message\ndata: " + result + b"\n\n"
    request = httpx2.Request("POST", "http://mcp.test/mcp", json=CALL, headers=HEADERS)
    response = httpx2.Response(
        200, headers={"content-type": "text/event-stream"}, content=body, request=request
    )
    new = _rewrite_in_thread(request, response, BudgetConfig(artifact_dir=tmp_path))
    assert new.content.startswith(event)
    assert len(new.content) < len(body)
    assert parsed == [len(result)]
