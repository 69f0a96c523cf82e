"""``budgetware mcp-server``: the real mcp client reads full outputs over stdio and over
streamable HTTP, from the store the BUDGETWARE_* settings name."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from budgetware import LocalArtifactStore

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

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


async def exercise(session: ClientSession, ref: str) -> None:
    await session.initialize()
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


async def test_over_stdio(stored: tuple[Path, str]) -> None:
    directory, ref = stored
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "budgetware", "mcp-server"], env=server_env(directory)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await exercise(session, ref)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(stored: tuple[Path, str]) -> Iterator[str]:
    directory, _ = stored
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "budgetware", "mcp-server", "--http", f"127.0.0.1:{port}"],
        env=server_env(directory),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the MCP server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def test_over_streamable_http(stored: tuple[Path, str], http_server: str) -> None:
    _, ref = stored
    async with (
        streamable_http_client(http_server) as (read, write),
        ClientSession(read, write) as session,
    ):
        await exercise(session, ref)


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
