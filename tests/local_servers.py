"""Servers the tests start on 127.0.0.1: a free port for one, and ``budgetware mcp-server``
over streamable HTTP in a subprocess (read directly by an MCP client, or reached through a
LiteLLM Proxy's MCP gateway)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

__all__ = ["free_port", "mcp_http_server"]


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def mcp_http_server(env: Mapping[str, str], *, timeout: float = 30.0) -> Iterator[str]:
    """``budgetware mcp-server --http`` with the environment ``env`` (whose ``BUDGETWARE_*``
    settings name the store it reads); yields its endpoint URL, stops it after."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "budgetware", "mcp-server", "--http", f"127.0.0.1:{port}"],
        env=dict(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + timeout
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
        # It only reads (the index it may write beside an artifact goes through a temp file).
        process.kill()
        process.wait()
