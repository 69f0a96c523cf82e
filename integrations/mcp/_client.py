"""The mcp client side of the producer boundary: an httpx2 transport and stream wrappers.

Nothing here imports ``mcp`` or ``httpx2`` until it is used; ``budgetware.integrations.mcp``
is the public face.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx2
    from typing_extensions import Self

from budgetware.core import observe
from budgetware.core.artifacts import ArtifactStore
from budgetware.core.config import BudgetConfig, check_settings, current_overrides, resolve_config
from budgetware.mcp.bound import bound_tool_result, result_budget_for
from budgetware.mcp.http import bound_arguments, rewrite_mcp_response
from budgetware.store.select import check_store

from .. import require

__all__ = [
    "BoundedTransport",
    "McpBoundTransport",
    "bound_streams",
    "budget_http_client",
]

# The mcp SDK's own client defaults (create_mcp_http_client): a stream may idle for minutes.
_TIMEOUT = 30.0
_SSE_READ_TIMEOUT = 300.0

if TYPE_CHECKING:
    _Base = httpx2.AsyncBaseTransport
else:
    _Base = object  # httpx2's, given to each instance's class when it is made


class McpBoundTransport(_Base):
    """Wraps an async httpx2 (or httpx) transport; bounds the ``tools/call`` results it returns."""

    def __new__(cls, *args: Any, **kwargs: Any) -> McpBoundTransport:
        return super().__new__(_with_httpx2_base() if cls is McpBoundTransport else cls)

    def __init__(
        self,
        inner: Any = None,
        *,
        server: str | None = None,
        store: ArtifactStore | None = None,
        config: BudgetConfig | None = None,
    ) -> None:
        check_store(check_settings(config))  # a bad setting fails here, not on a call
        observe.entry_setup(config)
        if inner is None:
            inner = require("httpx2", "mcp").AsyncHTTPTransport()
        self.inner = inner
        self.server = server
        self.store = store
        self.config = config

    async def handle_async_request(self, request: Any) -> Any:
        """Send through the inner transport; bound the result of a ``tools/call``."""
        response = await self.inner.handle_async_request(request)
        return rewrite_mcp_response(
            request,
            response,
            server=self.server,
            store=self.store,
            config=self.config,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __repr__(self) -> str:
        return f"McpBoundTransport({self.inner!r})"


@functools.cache
def _with_httpx2_base() -> type[McpBoundTransport]:
    """``McpBoundTransport`` deriving from ``httpx2.AsyncBaseTransport`` (its context manager
    methods), made on first use: importing this module imports no httpx2."""
    base = require("httpx2", "mcp").AsyncBaseTransport
    return type("McpBoundTransport", (McpBoundTransport, base), {"__module__": __name__})


def budget_http_client(
    *,
    server: str | None = None,
    store: ArtifactStore | None = None,
    config: BudgetConfig | None = None,
    transport: Any = None,
    **client_kwargs: Any,
) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` for ``streamable_http_client(url, http_client=...)`` whose
    ``tools/call`` results arrive bounded by the ``mcp_*`` settings.

    ``server`` names the server for per-server overrides (default: matched by URL);
    ``transport`` is the one to wrap; other keyword arguments go to the client, whose
    timeouts default to the mcp SDK's.
    """
    library = require("httpx2", "mcp")
    client_kwargs.setdefault("timeout", library.Timeout(_TIMEOUT, read=_SSE_READ_TIMEOUT))
    bounded = McpBoundTransport(transport, server=server, store=store, config=config)
    client: httpx2.AsyncClient = library.AsyncClient(transport=bounded, **client_kwargs)
    return client


class _State:
    """What the two directions share: pending ``tools/call`` ids and the server's name."""

    def __init__(
        self, server: str | None, store: ArtifactStore | None, config: BudgetConfig | None
    ) -> None:
        self.config = config
        self.server = server
        self.named = server is not None
        self.store = store
        # id -> (tool name, the budget() block the call was sent in)
        self.calls: dict[tuple[type, Any], tuple[str | None, Mapping[str, Any]]] = {}
        self.initialize: set[tuple[type, Any]] = set()


class _StreamProxy:
    """Delegates everything a memory stream offers to the stream it wraps (``last_context``,
    the sender's context mcp reads from the stream it receives from, too)."""

    def __init__(self, inner: Any, state: _State) -> None:
        self._inner = inner
        self._state = state

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result


class _ObservedWrite(_StreamProxy):
    """The write stream, noting each outgoing ``tools/call`` (and ``initialize``) by id."""

    async def send(self, item: Any, /) -> None:
        message: Any = getattr(item, "message", None)
        method = getattr(message, "method", None)
        if method == "tools/call" and hasattr(message, "id"):
            params = getattr(message, "params", None)
            name = params.get("name") if isinstance(params, dict) else None
            # The answer is read in the session's own task: the block around the call is
            # taken here, where the call is sent.
            self._state.calls[(type(message.id), message.id)] = (
                name if isinstance(name, str) else None,
                current_overrides(),
            )
        elif method == "initialize" and hasattr(message, "id"):
            self._state.initialize.add((type(message.id), message.id))
        await self._inner.send(item)


class _BoundingRead(_StreamProxy):
    """The read stream, bounding the response to each noted ``tools/call``."""

    async def receive(self) -> Any:
        return await self._process(await self._inner.receive())

    def __aiter__(self) -> _BoundingRead:
        return self

    async def __anext__(self) -> Any:
        return await self._process(await self._inner.__anext__())

    async def _process(self, item: Any) -> Any:
        message: Any = getattr(item, "message", None)
        result = getattr(message, "result", None)
        if not isinstance(result, dict):
            if message is not None and hasattr(message, "error") and hasattr(message, "id"):
                self._state.calls.pop((type(message.id), message.id), None)
            return item
        key = (type(message.id), message.id)
        state = self._state
        if key in state.initialize:
            state.initialize.discard(key)
            info = result.get("serverInfo")
            if not state.named and isinstance(info, dict) and isinstance(info.get("name"), str):
                state.server = info["name"]
            return item
        if key not in state.calls:
            return item
        tool, block = state.calls.pop(key)
        config = resolve_config(state.config, request_overrides=block, lenient=True)
        limit = result_budget_for(config, state.server, tool)
        if limit <= 0 and config.mcp_max_message_bytes <= 0:
            return item
        import anyio.to_thread

        # Bounding may write an artifact: off the event loop.
        bounded = await anyio.to_thread.run_sync(self._bound, result, config, limit)
        if bounded is result:
            return item
        types = require("mcp_types", "mcp")
        new_message = types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=bounded)
        return type(item)(message=new_message, metadata=getattr(item, "metadata", None))

    def _bound(self, result: dict[str, Any], config: BudgetConfig, limit: int) -> Any:
        arguments = bound_arguments(config, self._state.store, limit)
        return bound_tool_result(result, **arguments).result


def bound_streams(
    read_stream: Any,
    write_stream: Any,
    *,
    server: str | None = None,
    store: ArtifactStore | None = None,
    config: BudgetConfig | None = None,
) -> tuple[Any, Any]:
    """Wrap a transport's (read, write) stream pair for ``ClientSession`` so ``tools/call``
    results arrive bounded; ``server`` defaults to the name the server gives itself.
    """
    check_store(check_settings(config))
    observe.entry_setup(config)  # an entry point: a budget() block here is not unread
    state = _State(server, store, config)
    return _BoundingRead(read_stream, state), _ObservedWrite(write_stream, state)


class BoundedTransport:
    """An MCP client transport whose ``tools/call`` results arrive bounded: wraps any async
    context manager yielding ``(read, write)``, e.g. ``BoundedTransport(stdio_client(p))``.
    """

    def __init__(
        self,
        transport: Any,
        *,
        server: str | None = None,
        store: ArtifactStore | None = None,
        config: BudgetConfig | None = None,
    ) -> None:
        check_store(check_settings(config))  # a bad setting fails here, not on a call
        self._transport = transport
        self._bound = functools.partial(bound_streams, server=server, store=store, config=config)

    async def __aenter__(self) -> tuple[Any, Any]:
        return self._bound(*await self._transport.__aenter__())

    async def __aexit__(self, *exc_info: object) -> bool | None:
        result: bool | None = await self._transport.__aexit__(*exc_info)
        return result
