"""Servers the tests start on 127.0.0.1: a free port for one, a standard-library server in a
thread that stops at once, and ``budgetware mcp-server`` over streamable HTTP in a
subprocess (read directly by an MCP client, or reached through a LiteLLM Proxy's MCP
gateway)."""

from __future__ import annotations

import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

__all__ = ["free_port", "mcp_http_server", "serving"]


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(server: socketserver.BaseServer) -> Iterator[socketserver.BaseServer]:
    """``server`` answering in a daemon thread for the block, then shut down and closed.

    ``serve_forever`` looks for a shutdown request between ``select`` calls of its poll
    interval: with the default (0.5 s), each ``shutdown()`` waited about half a second
    (some 30 tests, 12 s of waiting a run).
    """
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def mcp_http_server(
    env: Mapping[str, str], *, timeout: float = 30.0, host: str = "127.0.0.1"
) -> Iterator[str]:
    """``budgetware mcp-server --http`` on ``host`` (a loopback address) with the environment
    ``env`` (whose ``BUDGETWARE_*`` settings name the store it reads); yields its endpoint
    URL, stops it after."""
    port = free_port()
    literal = f"[{host}]" if ":" in host else host
    process = subprocess.Popen(
        [sys.executable, "-m", "budgetware", "mcp-server", "--http", f"{literal}:{port}"],
        env=dict(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection((host, port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the MCP server did not start") from None
                time.sleep(0.05)
        yield f"http://{literal}:{port}/mcp"
    finally:
        # It only reads (the index it may write beside an artifact goes through a temp file).
        process.kill()
        process.wait()
