"""``budgetware mcp-server``: serve ``read_tool_output`` over MCP (stdio, or streamable HTTP
with ``--http HOST:PORT``), reading the store the ``BUDGETWARE_*`` settings name."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from typing import Any

from budgetware.cli.errors import ArgumentParser, CliError
from budgetware.core.config import BudgetConfig, check_overrides, check_settings
from budgetware.core.environment import version
from budgetware.store.base import ContentStore
from budgetware.store.select import check_store, store_for_config

__all__ = ["main", "parse_address"]


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8765`` for IPv6; ``:8765`` for 127.0.0.1)."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text!r} (example: 127.0.0.1:8765)")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def main(argv: list[str]) -> int:
    """Run ``budgetware mcp-server`` until its client (stdio) goes or it is interrupted."""
    parser = ArgumentParser(
        prog="budgetware mcp-server",
        description=(
            "Serve the read_tool_output tool over MCP: agents read the full outputs that "
            "previews name (paging or searching), from the configured artifact store "
            "(BUDGETWARE_ARTIFACT_STORE / BUDGETWARE_ARTIFACT_DIR). Stdio by default."
        ),
    )
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=parse_address,
        help=(
            "serve streamable HTTP on HOST:PORT (at /mcp) instead of stdio; with "
            "BUDGETWARE_MCP_SERVER_TOKEN set, requests need that bearer token"
        ),
    )
    parser.add_argument(
        "--store", metavar="URL", help="the artifact store (a path, file:// or s3://bucket/prefix)"
    )
    args = parser.parse_args(argv)
    # A bad setting or an unusable store is one line now, not an error on every call.
    given = None if args.store is None else check_overrides({"artifact_store": args.store})
    config = None if given is None else BudgetConfig(**given)
    resolved = check_settings(config)
    check_store(resolved)
    if not resolved.persist:
        raise CliError("persist is off (BUDGETWARE_PERSIST): there is no store to read")
    # By name: integrations/ ships as budgetware.integrations, which mypy does not map.
    mcp_server: Any = importlib.import_module("budgetware.integrations.mcp_server")
    try:
        server = mcp_server.build_server(config=config)
    except ImportError as exc:
        raise CliError(str(exc)) from None
    import anyio

    if args.http is None:
        anyio.run(mcp_server.serve_stdio, server)
        return 0
    host, port = args.http
    token = mcp_server.token_from_env()
    if token is None and not mcp_server.is_loopback(host):
        print(
            f"budgetware mcp-server: warning: serving {host}:{port} without "
            f"{mcp_server.TOKEN_ENV}: anyone who reaches it can read every artifact",
            file=sys.stderr,
        )

    literal = f"[{host}]" if ":" in host else host
    store = store_for_config(resolved)
    where = store.location if isinstance(store, ContentStore) else "none"

    def ready() -> None:
        print(
            f"budgetware mcp-server {version()}: listening on "
            f"http://{literal}:{port}/mcp (store {where})",
            file=sys.stderr,
            flush=True,
        )

    async def serve() -> None:
        await mcp_server.serve_http(server, host=host, port=port, token=token, on_ready=ready)

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(serve)
    return 0
