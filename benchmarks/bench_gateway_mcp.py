"""Reading a full output through the LiteLLM Proxy's MCP gateway: what each way costs.

Run: .venv/bin/python benchmarks/bench_gateway_mcp.py [--calls 30]

One real proxy (``litellm --config``) names budgetware's MCP server twice in its
``mcp_servers``: over HTTP (``budgetware mcp-server --http`` running beside the proxy,
requiring its bearer token, ``BUDGETWARE_MCP_SERVER_TOKEN``, as the guide recommends: the
proxy sends it) and over stdio (the proxy starts ``budgetware mcp-server`` itself). A real
``mcp`` client, connected to the proxy's ``/mcp`` with a proxy key, calls
``read_tool_output`` on a stored 300 KB output (a 20,000-character window, the tool's
default), first through each way, then straight to the HTTP server without the proxy, with
the token (the baseline). Reported per way: the median and p90 latency of a call and its
ratio to the baseline (all measured in the same run).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The suite's local servers (tests/testing).
sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "tests"))

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx
from _harness import print_table
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from testing.litellm_proxy import LiteLLMProxy

from budgetware.store.local import LocalArtifactStore
from budgetware.tools import TOOL_NAME

OUTPUT = "".join(f"tests/test_{n:06d}.py::test_case PASSED\n" for n in range(8_000))[:300_000]


@contextmanager
def mcp_http_server(store: str, token: str) -> Iterator[str]:
    """``budgetware mcp-server --http`` on a free port, reading ``store``, answering only
    requests that carry ``token``."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETWARE_")}
    env["BUDGETWARE_ARTIFACT_STORE"] = store
    env["BUDGETWARE_MCP_SERVER_TOKEN"] = token
    server = subprocess.Popen(
        [sys.executable, "-m", "budgetware", "mcp-server", "--http", f"127.0.0.1:{port}"],
        env=env,
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
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the MCP server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=10)


async def call_times(
    url: str, tool: str, ref: str, calls: int, headers: dict[str, str]
) -> list[float]:
    """Seconds per ``tool`` call, over one MCP session (after one warm-up call)."""
    times = []
    async with (
        httpx.AsyncClient(headers=headers, trust_env=False, timeout=120) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for i in range(calls + 1):
            start = time.perf_counter()
            result = await session.call_tool(tool, {"ref": ref, "offset": 1000 * i})
            elapsed = time.perf_counter() - start
            if result.is_error:
                raise RuntimeError(result.content)
            if i:
                times.append(elapsed)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30, help="calls per way over HTTP")
    parser.add_argument("--stdio-calls", type=int, default=8, help="calls over stdio")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="budgetware-bench-gateway-mcp-"))
    store = str(work / "artifacts")
    ref = LocalArtifactStore(store).put(OUTPUT)
    token = secrets.token_hex(16)
    try:
        with mcp_http_server(store, token) as direct:
            stdio = {
                "transport": "stdio",
                "command": sys.executable,
                "args": ["-m", "budgetware", "mcp-server"],
                "env": {"BUDGETWARE_ARTIFACT_STORE": store},
            }
            config = {
                "model_list": [],
                "mcp_servers": {
                    "http": {
                        "url": direct,
                        "transport": "http",
                        "auth_type": "bearer_token",
                        "authentication_token": "os.environ/BUDGETWARE_MCP_SERVER_TOKEN",
                        "allow_all_keys": True,
                    },
                    "stdio": {**stdio, "allow_all_keys": True},
                },
            }
            env = {"LITELLM_ENABLE_MCP_STDIO": "true", "BUDGETWARE_MCP_SERVER_TOKEN": token}
            with LiteLLMProxy(config, env=env, workdir=work / "proxy") as proxy:
                gateway = proxy.url + "/mcp"
                # The server requires the token: without it, 401.
                refused = httpx.post(direct, json={}, timeout=30, trust_env=False)
                if refused.status_code != 401:
                    raise RuntimeError(f"the MCP server answered {refused.status_code}, not 401")
                to_server = {"authorization": f"Bearer {token}"}
                to_proxy = {"x-litellm-api-key": f"Bearer {proxy.master_key}"}
                ways = [
                    ("HTTP server, no proxy (baseline)", direct, TOOL_NAME, args.calls, to_server),
                    (
                        "proxy /mcp -> HTTP server",
                        gateway,
                        f"http-{TOOL_NAME}",
                        args.calls,
                        to_proxy,
                    ),
                    (
                        "proxy /mcp -> stdio server",
                        gateway,
                        f"stdio-{TOOL_NAME}",
                        args.stdio_calls,
                        to_proxy,
                    ),
                ]
                measured = [
                    (name, asyncio.run(call_times(url, tool, ref, calls, headers)))
                    for name, url, tool, calls, headers in ways
                ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = statistics.median(measured[0][1])
    rows = []
    for name, times in measured:
        p50 = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        rows.append(
            (
                name,
                str(len(times)),
                f"{p50 * 1000:.1f} ms",
                f"{p90 * 1000:.1f} ms",
                f"{p50 / base:.1f}x",
            )
        )
    print_table(
        "read_tool_output through the LiteLLM Proxy's MCP gateway (20,000-char window)",
        rows,
        ("way", "calls", "p50", "p90", "p50 / baseline"),
    )


if __name__ == "__main__":
    main()
