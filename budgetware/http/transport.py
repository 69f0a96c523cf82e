"""Transports that bound the tool results in each outgoing request, for httpx and httpx2 alike."""

from __future__ import annotations

import functools
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Mapping
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from budgetware.core import observe
from budgetware.core.config import (
    BudgetConfig,
    ConfigError,
    check_settings,
    current_overrides,
    resolve_config,
)
from budgetware.core.errors import BudgetwareWarning, fail_open
from budgetware.diagnostics import recorder as _recorder
from budgetware.http.context import bounded_above
from budgetware.http.delivery import attach_report, settle
from budgetware.http.headers import OVERRIDES_EXTENSION, REQUEST_HEADER_PREFIX, header_overrides
from budgetware.http.hooks import response_may_wait, rewrite_response
from budgetware.store.select import check_store, remote_store_in_use
from budgetware.wire.body import finalize_body, observed_finalize_body, read_threshold
from budgetware.wire.signing import signed_header_names

if TYPE_CHECKING:
    import httpx
    import httpx2
    from typing_extensions import Self

__all__ = [
    "HANDLED_EXTENSION",
    "AsyncBudgetTransport",
    "BudgetTransport",
    "library_of_class",
    "off_loop",
    "off_loop_for_size",
    "prepare_request",
    "rewrite_response_off_loop",
    "sdk_http_library",
]

# Set on a request that one layer already bounded, so a lower layer leaves it alone.
HANDLED_EXTENSION = "budgetware.handled"
_LIBRARIES = ("httpx", "httpx2")


# --- the one code path shared by the transports and instrument() ---------------------------


def library_of_class(cls: type) -> ModuleType | None:
    """The httpx or httpx2 module ``cls`` derives from (an SDK's client class), if any."""
    for klass in cls.__mro__:
        root = klass.__module__.partition(".")[0]
        if root in _LIBRARIES:
            return sys.modules.get(root)
    return None


def sdk_http_library(client_class: type, sdk: str) -> ModuleType:
    """The HTTP library (httpx or httpx2) an SDK's client class is built on: its transport
    must come from the same library."""
    library = library_of_class(client_class)
    if library is None:
        raise RuntimeError(
            f"budgetware: {sdk}'s {client_class.__name__} is built on neither httpx nor "
            "httpx2, so no budget transport fits it; use budgetware.instrument() instead"
        )
    return library


_WARNED_LOCK = threading.Lock()
_WARNED: weakref.WeakSet[Any] = weakref.WeakSet()  # the transports and clients warned


def _warn_signed_once(owner: object, host: str) -> None:
    with _WARNED_LOCK:
        if owner in _WARNED:
            return
        _WARNED.add(owner)
    warnings.warn(
        f"budgetware: requests to {host} are signed (AWS SigV4) and pass through unbounded: "
        "changing a signed body would break its signature. Bound them before they are signed: "
        "anthropic.AnthropicBedrock(middleware=[budgetware.integrations.anthropic."
        "budget_middleware()]), or your SDK's own request hook (see docs/sdks.md).",
        BudgetwareWarning,
        stacklevel=3,
    )


def prepare_request(
    request: Any,
    lib: Any,
    base: BudgetConfig | None,
    owner: object,
    *,
    asynchronous: bool = False,
) -> Any:
    """The request to send instead of ``request`` (itself when nothing changes): bounded,
    without ``x-budgetware-*`` headers, carrying its report while something watches (the
    caller calls ``settle`` after sending it). ``owner`` warns once about signed requests.
    """
    headers = request.headers
    url = str(request.url)
    own = [name for name in headers if name.lower().startswith(REQUEST_HEADER_PREFIX)]
    signed = signed_header_names(headers, url)
    if signed is not None:
        _warn_signed_once(owner, request.url.host)
        # A header the signature covers stays.
        strip = [name for name in own if name.lower() not in signed]
        if not strip:
            return request
        try:
            return _rebuild(lib, request, request.content, strip)
        except lib.RequestNotRead:
            return _rebuild_headers_only(request, strip)
    overrides = header_overrides(headers) if own else {}
    try:
        body = request.content
    except lib.RequestNotRead:  # a streaming body: not ours to buffer
        if overrides:
            request.extensions[OVERRIDES_EXTENSION] = overrides
        return _rebuild_headers_only(request, own) if own else request
    config = _effective_config(base, overrides)
    new_body = body
    report = None
    if config is not None and config.enabled and body:
        try:
            if observe.watching():
                new_body, report = observed_finalize_body(
                    url, body, headers=headers, config=config
                )
            else:
                new_body = finalize_body(url, body, headers=headers, config=config)
        except Exception:
            fail_open("bound a request", config=config)
            new_body = body
    _recorder.submitted(url, new_body, config=config)
    outgoing = request if new_body is body and not own else _rebuild(lib, request, new_body, own)
    if overrides:  # for the response side (the MCP boundary), once the headers are gone
        outgoing.extensions[OVERRIDES_EXTENSION] = overrides
    if report is not None:
        attach_report(outgoing, report, asynchronous=asynchronous)
    return outgoing


def _effective_config(base: BudgetConfig | None, overrides: dict[str, Any]) -> BudgetConfig | None:
    # Mistakes surface at set-up; a value that turns bad later is left out and logged.
    try:
        return resolve_config(base, request_overrides=overrides, lenient=True)
    except ConfigError:  # pragma: no cover - only environment values can turn bad
        fail_open("resolve the configuration of a request", config=base)
        return None


def _rebuild(library: Any, request: Any, body: bytes, drop: list[str]) -> Any:
    dropped = {name.lower() for name in drop} | {"content-length"}
    headers = [
        (key, value)
        for key, value in request.headers.raw
        if key.decode("latin-1").lower() not in dropped
    ]
    # The library adds the Content-Length of the new body itself.
    return library.Request(
        request.method,
        request.url,
        headers=headers,
        content=body,
        extensions=dict(request.extensions),
    )


def _rebuild_headers_only(request: Any, drop: list[str]) -> Any:
    # A streaming body cannot be read twice: edit the headers in place.
    for name in drop:
        del request.headers[name]
    return request


# --- the transports ------------------------------------------------------------------------


@functools.cache
def _concrete(cls: Any, lib: ModuleType) -> type:
    """``cls`` deriving from ``lib``'s base transport class too."""
    base = getattr(lib, cls._library_base)
    return type(cls.__name__, (cls, base), {"lib": lib, "__module__": cls.__module__})


class _TransportBase:
    """State shared by the sync and async transports. An instance is of a subclass that also
    derives from the inner transport's library base class, so ``isinstance`` checks pass.
    """

    lib: ModuleType | None = None
    """The HTTP library module (httpx or httpx2), learned from the inner transport."""
    _library_base = "BaseTransport"

    def __new__(cls, inner: Any, *, config: BudgetConfig | None = None) -> Any:
        lib = library_of_class(type(inner))
        if lib is None or cls.lib is not None:
            return super().__new__(cls)
        return super().__new__(_concrete(cast(type, cls), lib))

    def __init__(self, inner: Any, *, config: BudgetConfig | None = None) -> None:
        check_store(check_settings(config))
        observe.entry_setup(config)
        self.inner = inner
        self.config = config

    _asynchronous = False

    def _prepare(self, request: Any) -> Any:
        if request.extensions.get(HANDLED_EXTENSION) or bounded_above():
            return request
        lib = self.lib or library_of_class(type(request))
        if lib is None:  # not an httpx or httpx2 request: nothing we can rebuild
            return request
        return prepare_request(request, lib, self.config, self, asynchronous=self._asynchronous)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"


class BudgetTransport(_TransportBase):
    """A sync transport of httpx or httpx2 that bounds tool results, then calls ``inner``."""

    @overload
    def __new__(
        cls, inner: httpx2.BaseTransport, *, config: BudgetConfig | None = None
    ) -> _Httpx2BudgetTransport: ...
    @overload
    def __new__(
        cls, inner: httpx.BaseTransport, *, config: BudgetConfig | None = None
    ) -> _HttpxBudgetTransport: ...
    @overload
    def __new__(cls, inner: Any, *, config: BudgetConfig | None = None) -> Self: ...
    def __new__(cls, inner: Any, *, config: BudgetConfig | None = None) -> Any:
        return super().__new__(cls, inner, config=config)

    def handle_request(self, request: Any) -> Any:
        """Bound the request body, send it through the inner transport."""
        if request.extensions.get(HANDLED_EXTENSION):
            return self.inner.handle_request(request)
        outgoing = self._prepare(request)
        try:
            response = self.inner.handle_request(outgoing)
        finally:
            settle(outgoing)
        return rewrite_response(outgoing, response, self.config)

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> Self:
        self.inner.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        self.inner.__exit__(exc_type, exc_value, traceback)


# From this size the async paths bound a body in a worker thread, not on the event loop.
OFFLOAD_BYTES = 1 << 20
T = TypeVar("T")


def _remote_store_possible() -> bool:
    """Whether bounding here may reach a store over the network: one was set up in this
    process, or the active ``budget(...)`` block names a store."""
    return remote_store_in_use() or "artifact_store" in current_overrides()


def _offload(
    size: int, config: BudgetConfig | None, overrides: Mapping[str, Any] | None = None
) -> bool:
    """Whether bounding a request body of ``size`` bytes goes to a worker thread: from
    ``OFFLOAD_BYTES``, or when it may wait for an S3 store (persistence on and the body
    longer than its smallest budget)."""
    if size >= OFFLOAD_BYTES:
        return True
    if size <= 0 or not _remote_store_possible():
        return False  # no store over the network in this process: nothing to wait for
    try:
        effective = resolve_config(config, request_overrides=overrides, lenient=True)
        threshold = read_threshold(effective)
        if threshold is None or not effective.persist or size <= threshold:
            return False
        return effective.store_location().scheme == "s3"
    except Exception:  # undecidable: a thread hop costs far less than a blocked loop
        return True


async def off_loop(
    request: Any, fn: Callable[..., T], *args: Any, config: BudgetConfig | None = None
) -> T:
    """``fn(*args)``, in a worker thread when bounding ``request`` may take long
    (``_offload``; ``config``: the entry point's, the request's headers on top). The thread
    sees the caller's context variables (``budget(...)`` blocks)."""
    try:
        headers = request.headers
        size = int(headers.get("content-length") or 0)
    except (AttributeError, ValueError):
        headers, size = {}, 0
    overrides = None
    if 0 < size < OFFLOAD_BYTES and _remote_store_possible():
        # A mistake in them is reported once, when the request is bounded.
        overrides = header_overrides(headers, warn=lambda message: None)
    return await off_loop_for_size(size, fn, *args, config=config, overrides=overrides)


async def off_loop_for_size(
    size: int,
    fn: Callable[..., T],
    *args: Any,
    config: BudgetConfig | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> T:
    """``off_loop`` for entry points that bound a decoded body of ``size`` bytes (SDK hooks,
    the LiteLLM Proxy); ``config`` and ``overrides`` are the settings it is bounded with."""
    if not _offload(size, config, overrides):
        return fn(*args)
    import anyio.to_thread  # httpx and httpx2 both depend on anyio

    return await anyio.to_thread.run_sync(fn, *args)


async def rewrite_response_off_loop(
    request: Any, response: Any, config: Any, *, load: bool = True
) -> Any:
    """``rewrite_response`` for the async paths: in a worker thread when the body is read
    already and is ``OFFLOAD_BYTES`` long, or a rewriter says it may wait for a store over
    the network (a streamed body is rewritten off the loop chunk by chunk)."""
    rewrite = functools.partial(rewrite_response, request, response, config, load=load)
    content = getattr(response, "_content", None)  # set once an httpx/httpx2 body is read
    if not isinstance(content, bytes) or (
        len(content) < OFFLOAD_BYTES
        and not (_remote_store_possible() and response_may_wait(request, response, config, load))
    ):
        return rewrite()
    import anyio.to_thread

    return await anyio.to_thread.run_sync(rewrite)


class AsyncBudgetTransport(_TransportBase):
    """An async transport of httpx or httpx2 that bounds tool results, then calls ``inner``."""

    @overload
    def __new__(
        cls, inner: httpx2.AsyncBaseTransport, *, config: BudgetConfig | None = None
    ) -> _Httpx2AsyncBudgetTransport: ...
    @overload
    def __new__(
        cls, inner: httpx.AsyncBaseTransport, *, config: BudgetConfig | None = None
    ) -> _HttpxAsyncBudgetTransport: ...
    @overload
    def __new__(cls, inner: Any, *, config: BudgetConfig | None = None) -> Self: ...
    def __new__(cls, inner: Any, *, config: BudgetConfig | None = None) -> Any:
        return super().__new__(cls, inner, config=config)

    _library_base = "AsyncBaseTransport"
    _asynchronous = True

    async def handle_async_request(self, request: Any) -> Any:
        """Bound the request body, send it through the inner transport."""
        if request.extensions.get(HANDLED_EXTENSION):
            return await self.inner.handle_async_request(request)
        outgoing = await off_loop(request, self._prepare, request, config=self.config)
        try:
            response = await self.inner.handle_async_request(outgoing)
        finally:
            settle(outgoing)
        return await rewrite_response_off_loop(outgoing, response, self.config)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> Self:
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.inner.__aexit__(exc_type, exc_value, traceback)


if TYPE_CHECKING:
    # The classes _TransportBase.__new__ builds, as type checkers see them.
    class _Httpx2BudgetTransport(BudgetTransport, httpx2.BaseTransport): ...

    class _HttpxBudgetTransport(BudgetTransport, httpx.BaseTransport): ...

    class _Httpx2AsyncBudgetTransport(AsyncBudgetTransport, httpx2.AsyncBaseTransport): ...

    class _HttpxAsyncBudgetTransport(AsyncBudgetTransport, httpx.AsyncBaseTransport): ...
