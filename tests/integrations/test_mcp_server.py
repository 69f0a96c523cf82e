"""``budgetware mcp-server``: the real mcp client reads full outputs over stdio and over
streamable HTTP, from the store the BUDGETWARE_* settings name."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from local_servers import mcp_http_server

from budgetware.finalizer import LocalArtifactStore

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import InitializeResult

LOG = "\n".join(
    [f"PASSED tests/test_{i}.py::test_ok" for i in range(1, 5000)]
    + ["FAILED tests/test_cart.py::test_checkout_total - AssertionError: 汉字"]
    + [f"PASSED tests/test_{i}.py::test_more" for i in range(5000, 10000)]
)


def server_env(directory: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETWARE_")}
    env["BUDGETWARE_ARTIFACT_DIR"] = str(directory)
    return env


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, str]:
    directory = tmp_path / "artifacts"
    return directory, LocalArtifactStore(directory).put(LOG)


async def exercise(session: ClientSession, ref: str) -> InitializeResult:
    hello = await session.initialize()
    [tool] = (await session.list_tools()).tools
    assert tool.name == "read_tool_output"
    assert tool.input_schema["required"] == ["ref"]
    window = await session.call_tool("read_tool_output", {"ref": ref, "offset": 10, "limit": 50})
    assert not window.is_error
    assert (
        window.content[0].text == f"chars 10-60 of {len(LOG):,}; more with offset=60\n{LOG[10:60]}"
    )
    found = await session.call_tool("read_tool_output", {"ref": ref, "pattern": "FAILED"})
    offset = LOG.index("FAILED")
    assert found.content[0].text.split("\n")[1] == (
        f"5000:{offset}: FAILED tests/test_cart.py::test_checkout_total - AssertionError: 汉字"
    )
    missing = await session.call_tool("read_tool_output", {"ref": "/etc/passwd"})
    assert missing.is_error
    assert missing.content[0].text.startswith("error: no such full output")
    bad = await session.call_tool("read_tool_output", {"ref": ref, "pattern": "foo("})
    assert bad.is_error
    assert bad.content[0].text.startswith("error: not a valid regular expression")
    return hello


async def test_over_stdio(stored: tuple[Path, str]) -> None:
    directory, ref = stored
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "budgetware", "mcp-server"], env=server_env(directory)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await exercise(session, ref)


def start_http_server(directory: Path, *extra_env: tuple[str, str]) -> Iterator[str]:
    env = server_env(directory)
    env.update(extra_env)
    with mcp_http_server(env) as url:
        yield url


async def test_over_streamable_http_it_says_where_it_listens_and_which_version_it_is(
    stored: tuple[Path, str],
) -> None:
    from local_servers import free_port

    import budgetware

    port = free_port()
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "budgetware", "mcp-server", "--http", f"127.0.0.1:{port}"],
        env=server_env(stored[0]),
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        # The line comes once the port is bound: a client may connect at once.
        line = await asyncio.wait_for(process.stderr.readline(), timeout=60)
        url = f"http://127.0.0.1:{port}/mcp"
        assert line.decode().strip() == (
            f"budgetware mcp-server {budgetware.__version__}: listening on {url} "
            f"(store {stored[0]})"
        )
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            hello = await exercise(session, stored[1])
        assert hello.server_info.name == "budgetware"
        assert hello.server_info.version == budgetware.__version__
    finally:
        process.kill()
        await process.wait()


TOKEN = "s3cret-token-for-the-test"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
ACCEPT = {"accept": "application/json, text/event-stream"}


@pytest.fixture
def http_server_with_token(stored: tuple[Path, str]) -> Iterator[str]:
    yield from start_http_server(stored[0], ("BUDGETWARE_MCP_SERVER_TOKEN", TOKEN))


async def test_with_a_token_set_only_a_caller_with_it_reads(
    stored: tuple[Path, str], http_server_with_token: str
) -> None:
    _, ref = stored
    async with httpx2.AsyncClient() as plain:
        for auth in (None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x"):
            headers = dict(ACCEPT) if auth is None else {**ACCEPT, "authorization": auth}
            refused = await plain.post(http_server_with_token, json=INITIALIZE, headers=headers)
            assert refused.status_code == 401, auth
            assert refused.headers["www-authenticate"].startswith("Bearer")
            assert "read_tool_output" not in refused.text
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}) as client,
        streamable_http_client(http_server_with_token, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await exercise(session, ref)


@pytest.mark.parametrize("host", ["127.0.0.2", "0:0:0:0:0:0:0:1"])
async def test_on_any_loopback_address_a_rebound_host_or_a_foreign_origin_is_refused(
    stored: tuple[Path, str], host: str
) -> None:
    # DNS rebinding: a web page's own name resolved to this machine; the browser sends the
    # page's name as Host and its origin as Origin.
    with mcp_http_server(server_env(stored[0]), host=host) as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        async with httpx2.AsyncClient() as client:
            ours = await client.post(url, json=INITIALIZE, headers=ACCEPT)
            assert ours.status_code == 200
            assert "budgetware" in ours.text
            rebound = {**ACCEPT, "host": f"rebind.attacker.example:{port}"}
            refused = await client.post(url, json=INITIALIZE, headers=rebound)
            assert refused.status_code == 421
            assert "budgetware" not in refused.text
            foreign = {**ACCEPT, "origin": "http://attacker.example"}
            refused = await client.post(url, json=INITIALIZE, headers=foreign)
            assert refused.status_code == 403
            same = {**ACCEPT, "origin": url.rsplit("/", 1)[0]}
            assert (await client.post(url, json=INITIALIZE, headers=same)).status_code == 200


@pytest.mark.parametrize(
    ("address", "token", "warned"),
    [
        ("0.0.0.0:8765", None, True),
        ("10.1.2.3:8765", None, True),
        ("0.0.0.0:8765", TOKEN, False),
        ("127.0.0.1:8765", None, False),
        ("[::1]:8765", None, False),
        ("localhost:8765", None, False),
        ("127.0.0.2:8765", None, False),
        ("[0:0:0:0:0:0:0:1]:8765", None, False),
        ("[::ffff:127.0.0.1]:8765", None, False),
        ("[::]:8765", None, True),
        ("build-host.example:8765", None, True),
    ],
)
def test_a_public_address_without_a_token_is_warned_about(
    stored: tuple[Path, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    address: str,
    token: str | None,
    warned: bool,
) -> None:
    from budgetware.cli.main import main
    from budgetware.integrations import mcp_server

    served: list[dict[str, object]] = []

    async def fake_serve(server: object, **kwargs: object) -> None:
        served.append(kwargs)  # nothing is bound: the test only reads what would be served

    monkeypatch.setattr(mcp_server, "serve_http", fake_serve)
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", str(stored[0]))
    if token is None:
        monkeypatch.delenv("BUDGETWARE_MCP_SERVER_TOKEN", raising=False)
    else:
        monkeypatch.setenv("BUDGETWARE_MCP_SERVER_TOKEN", token)
    assert main(["mcp-server", "--http", address]) == 0
    assert served[0]["token"] == token
    err = capsys.readouterr().err
    assert ("without BUDGETWARE_MCP_SERVER_TOKEN" in err) is warned
    if warned:
        assert err.count("\n") == 1


def test_an_untrusted_store_on_the_command_line_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from budgetware.cli.main import main

    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o777)
    assert main(["mcp-server", "--store", str(tmp_path / "open")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "other users can write into it" in err


def test_a_bad_address_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from budgetware.cli.main import main

    assert main(["mcp-server", "--http", "localhost"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "not HOST:PORT" in err


def test_without_the_mcp_package_it_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from budgetware.cli.main import main

    monkeypatch.setitem(sys.modules, "mcp_types", None)
    assert main(["mcp-server"]) == 1
    assert 'pip install "budgetware[mcp-server]"' in capsys.readouterr().err


# A line that ``^(a|aa)+$`` backtracks on until the search's time limit (10 s).
SLOW = "a" * 5000 + "b\n" + "the end of the output\n"
SLOW_PATTERN = "^(a|aa)+$"


def default_threads() -> int:
    """The threads of asyncio's default executor in the server process (this machine's)."""
    count = getattr(os, "process_cpu_count", os.cpu_count)() or 1
    return min(32, count + 4)


async def test_slow_searches_never_hold_a_small_read(tmp_path: Path) -> None:
    directory = tmp_path / "artifacts"
    ref = LocalArtifactStore(directory).put(SLOW)
    searches_sent = default_threads() + 2  # more than every thread the server once read in
    with mcp_http_server(server_env(directory)) as url:
        async with (
            streamable_http_client(url) as (read_a, write_a),
            ClientSession(read_a, write_a) as searcher,
            streamable_http_client(url) as (read_b, write_b),
            ClientSession(read_b, write_b) as reader,
        ):
            await searcher.initialize()
            await reader.initialize()
            slow = {"ref": ref, "pattern": SLOW_PATTERN}
            searches = [
                asyncio.create_task(searcher.call_tool("read_tool_output", slow))
                for _ in range(searches_sent)
            ]
            try:
                await asyncio.sleep(1.0)  # the searches reach the server and start
                small = {"ref": ref, "offset": 5001, "limit": 10}
                # Another client's read, its quick search, and the searching client's read.
                for session, arguments in (
                    (reader, small),
                    (reader, {"ref": ref, "pattern": "the end"}),
                    (searcher, small),
                ):
                    result = await session.call_tool("read_tool_output", arguments)
                    assert not result.is_error, result.content[0].text
                    assert "the end" in result.content[0].text
                    # Answered while every slow search still runs (or waits its turn).
                    assert not any(search.done() for search in searches)
            finally:
                for search in searches:
                    search.cancel()
                await asyncio.gather(*searches, return_exceptions=True)
