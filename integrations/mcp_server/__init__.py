"""An MCP server exposing ``read_tool_output`` over the configured artifact store
(``budgetware mcp-server``), so any MCP-capable agent or gateway reads full outputs.

Built on the ``mcp`` package's low-level server (imported only when used); every answer is
the executor's text. Reads and searches run in worker threads of their own.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import os
from collections.abc import Callable, Mapping
from typing import Any

from budgetware.core.config import BudgetConfig
from budgetware.core.environment import version
from budgetware.store.base import ContentStore
from budgetware.tools import (
    TOOL_DESCRIPTION,
    TOOL_NAME,
    read_tool_output_parameters,
    run_read_tool_output,
)

from .. import require

__all__ = [
    "SERVER_NAME",
    "TOKEN_ENV",
    "build_server",
    "http_app",
    "is_loopback",
    "serve_http",
    "serve_stdio",
    "token_from_env",
]

SERVER_NAME = "budgetware"
# Set: every HTTP request needs this bearer token (not an option: command lines are public).
TOKEN_ENV = "BUDGETWARE_MCP_SERVER_TOKEN"
_INSTRUCTIONS = (
    "Tool results that were too long reach you as a preview that names the full output "
    "('Full output: <ref>'). Call read_tool_output with that ref to read any part of it "
    "(offset, limit) or the lines matching a pattern."
)
# Reads apart from searches (which may backtrack until their time limit), and at most
# CLIENT_SEARCHES of one client's searches at a time, leaving room for everyone else's.
READ_THREADS = 8
SEARCH_THREADS = 4
CLIENT_SEARCHES = 2


def _mcp() -> tuple[Any, Any]:
    types = require("mcp_types", "mcp-server")
    return require("mcp.server.lowlevel.server", "mcp-server").Server, types


def build_server(
    *,
    store: ContentStore | None = None,
    config: BudgetConfig | None = None,
) -> Any:
    """The MCP server (``mcp.server.lowlevel.Server``) with the one tool, reading ``store``
    (default: the store the configuration names, as it is when a call arrives)."""
    server_class, types = _mcp()
    tool = types.Tool(
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
        inputSchema=read_tool_output_parameters(),
        annotations=types.ToolAnnotations(
            title="Read a truncated tool output",
            readOnlyHint=True,
            destructiveHint=False,
            idempotentHint=True,
            openWorldHint=False,
        ),
    )

    async def list_tools(context: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[tool])

    threads = _Threads()

    async def call_tool(context: Any, params: Any) -> Any:
        if params.name != TOOL_NAME:
            text = f"error: unknown tool {params.name!r} (this server has {TOOL_NAME})"
        else:
            arguments = params.arguments or {}
            read = functools.partial(run_read_tool_output, arguments, store=store, config=config)
            search = isinstance(arguments, Mapping) and arguments.get("pattern") not in (None, "")
            text = await threads.run(read, search=search, client=_client(context))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            isError=text.startswith("error:"),
        )

    return server_class(
        SERVER_NAME,
        version=version(),
        instructions=_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _client(context: Any) -> str | None:
    """The MCP session a call belongs to over HTTP (its ``mcp-session-id``, which the
    transport checked), or None (stdio: one client; stateless HTTP: not known)."""
    headers = getattr(getattr(context, "request", None), "headers", None)
    session = headers.get("mcp-session-id") if headers is not None else None
    return session if isinstance(session, str) and session else None


class _Threads:
    """The worker threads of one server's tool calls: reads and searches in pools of their
    own, and a client's searches at most ``CLIENT_SEARCHES`` at a time; the others wait
    their turn without holding a thread anyone else could use."""

    def __init__(self) -> None:
        self._reads: Any = None  # anyio.CapacityLimiter, made inside the event loop
        self._searches: Any = None
        self._clients: dict[str, Any] = {}  # a client with searches running or waiting

    async def run(self, read: Callable[[], str], *, search: bool, client: str | None) -> str:
        import anyio

        if self._reads is None:
            self._reads = anyio.CapacityLimiter(READ_THREADS)
            self._searches = anyio.CapacityLimiter(SEARCH_THREADS)
        if not search:
            return await anyio.to_thread.run_sync(read, limiter=self._reads)
        if client is None:
            return await anyio.to_thread.run_sync(read, limiter=self._searches)
        turn = self._clients.get(client)
        if turn is None:
            turn = self._clients[client] = anyio.CapacityLimiter(CLIENT_SEARCHES)
        try:
            async with turn:
                return await anyio.to_thread.run_sync(read, limiter=self._searches)
        finally:
            if not turn.borrowed_tokens and not turn.statistics().tasks_waiting:
                self._clients.pop(client, None)


async def serve_stdio(server: Any = None) -> None:
    """Serve over this process's stdin and stdout until the client closes them."""
    _mcp()
    from mcp.server.stdio import stdio_server

    server = server if server is not None else build_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app(server: Any = None, *, host: str = "127.0.0.1", token: str | None = None) -> Any:
    """The streamable HTTP app (ASGI) serving ``server`` at ``/mcp``.

    With ``token``, a request without ``Authorization: Bearer <token>`` gets 401 and never
    reaches the server.
    """
    server = server if server is not None else build_server()
    app = server.streamable_http_app(
        streamable_http_path="/mcp", host=host, transport_security=_rebinding_checks(host)
    )
    return app if not token else _BearerToken(app, token)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only: ``localhost`` or a loopback
    address in any spelling (``127.0.0.2``, ``0:0:0:0:0:0:0:1``, ``::ffff:127.0.0.1``)."""
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return (mapped or address).is_loopback


def _rebinding_checks(host: str) -> Any:
    """mcp's Host and Origin checks for a loopback server, whatever the address's spelling
    (mcp turns them on for ``127.0.0.1``, ``localhost`` and ``::1`` only): a web page whose
    name was made to resolve to this machine (DNS rebinding) sends its own name, and is
    refused. None elsewhere: the names clients use for a public address are not known."""
    if not is_loopback(host):
        return None
    from mcp.server.transport_security import TransportSecuritySettings

    names = {"127.0.0.1", "localhost", "[::1]"}
    if host.lower() != "localhost":
        address = ipaddress.ip_address(host)
        for spelling in (host, address.compressed, address.exploded):
            names.add(f"[{spelling}]" if address.version == 6 else spelling)
    hosts = sorted(names)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*hosts, *(f"{name}:*" for name in hosts)],
        allowed_origins=[
            *(f"http://{name}" for name in hosts),
            *(f"http://{name}:*" for name in hosts),
        ],
    )


def token_from_env() -> str | None:
    """The bearer token ``BUDGETWARE_MCP_SERVER_TOKEN`` sets, or None (unset or blank)."""
    token = os.environ.get(TOKEN_ENV, "").strip()
    return token or None


class _BearerToken:
    """ASGI middleware: HTTP requests need the bearer token (compared in constant time)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and not self._authorized(scope):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"www-authenticate", b'Bearer realm="budgetware"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b"unauthorized\n"})
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Any) -> bool:
        for name, value in scope.get("headers", ()):
            if name.lower() == b"authorization":
                return hmac.compare_digest(bytes(value).strip(), self._expected)
        return False


async def serve_http(
    server: Any = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    on_ready: Callable[[], object] | None = None,
) -> None:
    """Serve over streamable HTTP on ``host:port`` at ``/mcp`` until cancelled (``token``:
    see ``http_app``); ``on_ready()`` once the port is bound."""
    require("uvicorn", "mcp-server")
    import uvicorn

    class Uvicorn(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started and on_ready is not None:
                on_ready()

    app = http_app(server, host=host, token=token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", ws="none")
    await Uvicorn(config).serve()
