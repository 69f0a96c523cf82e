"""Transports that bound the tool results in each outgoing request, for httpx and httpx2 alike."""

from __future__ import annotations

import enum
import logging
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Mapping
from functools import partial
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, cast, overload

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
from budgetware.wire.body import finalize_body, observed_finalize_body
from budgetware.wire.signing import signed_header_names

if TYPE_CHECKING:
    import httpx
    import httpx2
    from typing_extensions import Self

__all__ = [
    "HANDLED_EXTENSION",
    "AsyncBudgetTransport",
    "BudgetTransport",
    "is_handled",
    "library_of",
    "library_of_class",
    "mark_handled",
    "off_loop",
    "off_loop_for_size",
    "prepare_request",
    "rewrite_response_off_loop",
    "sdk_http_library",
]

logger = logging.getLogger("budgetware")

# Set on a request that one layer already bounded, so a lower layer leaves it alone.
HANDLED_EXTENSION = "budgetware.handled"
_LIBRARIES = ("httpx", "httpx2")


class HttpLibrary(Protocol):
    """What budgetware uses of an HTTP library module: httpx and httpx2 both provide it."""

    Request: Any
    RequestNotRead: type[Exception]


# --- the one code path shared by the transports and instrument() ---------------------------


def library_of(obj: object) -> ModuleType | None:
    """The httpx or httpx2 module that ``obj``'s class comes from, without importing any."""
    return library_of_class(type(obj))


def library_of_class(cls: type) -> ModuleType | None:
    """The httpx or httpx2 module ``cls`` derives from (an SDK's client class), if any."""
    for klass in cls.__mro__:
        root = klass.__module__.partition(".")[0]
        if root in _LIBRARIES:
            return sys.modules.get(root)
    return None


def sdk_http_library(client_class: type, sdk: str) -> ModuleType:
    """The HTTP library (httpx or httpx2) an SDK's client class is built on.

    openai 2.x (which llama-index and instructor pin) uses classic httpx, openai 3.x httpx2:
    the transport must come from the same library as the client, or every request fails.
    """
    library = library_of_class(client_class)
    if library is None:
        raise RuntimeError(
            f"budgetware: {sdk}'s {client_class.__name__} is built on neither httpx nor "
            "httpx2, so no budget transport fits it; use budgetware.instrument() instead"
        )
    return library


_WARNED_LOCK = threading.Lock()
_WARNED: weakref.WeakSet[Any] = weakref.WeakSet()
# Owners that cannot be weakly referenced, by id: bounded (past it, a warning may repeat).
_WARNED_IDS: set[int] = set()
_WARNED_IDS_MAX = 1024


def _warn_signed_once(owner: object, host: str) -> None:
    with _WARNED_LOCK:
        try:
            if owner in _WARNED:
                return
            _WARNED.add(owner)
        except TypeError:  # an owner that cannot be weakly referenced: remember its id
            if id(owner) in _WARNED_IDS:
                return
            if len(_WARNED_IDS) >= _WARNED_IDS_MAX:
                _WARNED_IDS.clear()
            _WARNED_IDS.add(id(owner))
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
    lib: ModuleType,
    base: BudgetConfig | None,
    owner: object,
    *,
    asynchronous: bool = False,
) -> Any:
    """The request to send instead of ``request``: bounded, without ``x-budgetware-*`` headers.

    Returns ``request`` itself when nothing changes. ``owner`` (a transport or a client)
    is who warns once about signed requests. While something watches requests
    (``core.observe.watching()``), the returned request carries its report, delivered
    when it reaches the network (``http/delivery.py``; ``asynchronous`` picks the kind of
    callback httpcore expects); the caller calls ``settle`` after sending it.
    """
    library = cast(HttpLibrary, lib)
    headers = request.headers
    url = str(request.url)
    own = [name for name in headers if name.lower().startswith(REQUEST_HEADER_PREFIX)]
    signed = signed_header_names(headers, url)
    if signed is not None:
        _warn_signed_once(owner, request.url.host)
        # Removing a header the signature covers would break it as surely as a new body.
        strip = [name for name in own if name.lower() not in signed]
        if not strip:
            return request
        try:
            return _rebuild(library, request, request.content, strip)
        except library.RequestNotRead:
            return _rebuild_headers_only(request, strip)
    overrides = header_overrides(headers) if own else {}
    try:
        body = request.content
    except library.RequestNotRead:  # a streaming body: not ours to buffer
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
    # http_wire diagnostic and record; off: two checks
    _recorder.submitted(url, new_body, config=config)
    outgoing = (
        request if new_body is body and not own else _rebuild(library, request, new_body, own)
    )
    if overrides:  # for the response side (the MCP boundary), once the headers are gone
        outgoing.extensions[OVERRIDES_EXTENSION] = overrides
    if report is not None:
        attach_report(outgoing, report, asynchronous=asynchronous)
    return outgoing


def _effective_config(base: BudgetConfig | None, overrides: dict[str, Any]) -> BudgetConfig | None:
    # Configuration mistakes surface when a transport or instrument() is set up; a value
    # that turns bad later (the environment changed) is left out and logged once.
    try:
        return resolve_config(base, request_overrides=overrides, lenient=True)
    except ConfigError:  # pragma: no cover - only environment values can turn bad
        fail_open("resolve the configuration of a request", config=base)
        return None


def _rebuild(library: HttpLibrary, request: Any, body: bytes, drop: list[str]) -> Any:
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
    # A streaming body cannot be read twice: the only way left is to edit the headers.
    for name in drop:
        del request.headers[name]
    return request


def is_handled(request: Any) -> bool:
    """Whether a layer above already bounded ``request``."""
    return bool(request.extensions.get(HANDLED_EXTENSION))


def mark_handled(request: Any) -> None:
    """Tell the layers below that ``request`` is bounded already."""
    request.extensions[HANDLED_EXTENSION] = True


# --- the transports ------------------------------------------------------------------------


_CONCRETE_LOCK = threading.Lock()
_CONCRETE: dict[tuple[type, str], type] = {}


class _TransportBase:
    """State and forwarding shared by the sync and async transports.

    ``BudgetTransport(inner)`` returns an instance of a subclass that also derives from the
    inner transport's library base class (``httpx.BaseTransport`` or
    ``httpx2.AsyncBaseTransport``, ...), built the first time that library is seen: code
    that checks ``isinstance(transport, httpx2.BaseTransport)`` accepts it, and neither
    library is imported by budgetware itself.
    """

    lib: ModuleType | None = None
    """The HTTP library module (httpx or httpx2), learned from the inner transport."""
    _library_base = "BaseTransport"

    def __new__(cls, inner: Any, *, config: BudgetConfig | None = None) -> Any:
        lib = library_of(inner)
        if lib is None or cls.lib is not None:
            return super().__new__(cls)
        key = (cls, lib.__name__)
        with _CONCRETE_LOCK:
            concrete = _CONCRETE.get(key)
            if concrete is None:
                base = getattr(lib, cls._library_base)
                namespace = {"lib": lib, "__module__": cls.__module__}
                concrete = type(cls.__name__, (cls, base), namespace)
                _CONCRETE[key] = concrete
        return super().__new__(concrete)

    def __init__(self, inner: Any, *, config: BudgetConfig | None = None) -> None:
        # A configuration mistake (or an unusable store) fails here, not on a request.
        check_store(check_settings(config))
        observe.entry_setup()
        self.inner = inner
        self.config = config

    _asynchronous = False

    def _prepare(self, request: Any) -> Any:
        if is_handled(request) or bounded_above():
            return request
        lib = self.lib or library_of(request)
        if lib is None:  # not an httpx or httpx2 request: nothing we can rebuild
            return request
        prepared = prepare_request(
            request, lib, self.config, self, asynchronous=self._asynchronous
        )
        return prepared

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"


class BudgetTransport(_TransportBase):
    """A sync transport of httpx or httpx2 that bounds tool results, then calls ``inner``."""

    # Around a transport of httpx or httpx2 it is one of that library too (_TransportBase).
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
        handled = is_handled(request)
        if handled:
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


# Bounding a large body parses it, hashes each cut output and may write (and fsync)
# artifacts: milliseconds to tens of milliseconds that must not stall an event loop serving
# other requests. Above this size the async paths do it in a worker thread (a thread hop
# costs tens of microseconds, far below a parse of this size).
OFFLOAD_BYTES = 1 << 20


class _Unset(enum.Enum):
    UNSET = "unset"


_UNSET: Final = _Unset.UNSET
"""``config`` not given: the caller did not say which configuration bounds the body."""


def _offload(
    size: int,
    config: BudgetConfig | _Unset | None = _UNSET,
    overrides: Mapping[str, Any] | None = None,
) -> bool:
    """Whether bounding a request body of ``size`` bytes goes to a worker thread.

    Always from ``OFFLOAD_BYTES`` (the CPU). Below, only when bounding it may wait for a
    store over the network: a store on S3 in this process, persistence on, and a body
    longer than its batch budget (``config`` with ``overrides``, as the request is
    bounded: every string of a JSON text takes at least as many bytes there as it
    measures, so a body no longer than its budget is sent as it is and writes nothing).
    A caller that gives no ``config`` cannot be told which budget applies: with an S3
    store in the process, every body goes to a worker thread. Small requests under their
    budget, and every small request of a process without an S3 store, stay on the loop,
    where bounding costs microseconds and a thread hop more.
    """
    if size >= OFFLOAD_BYTES:
        return True
    if size <= 0 or not _remote_store_possible():
        return False  # no store over the network in this process: nothing to wait for
    if config is _UNSET:
        return True
    try:
        effective = resolve_config(config, request_overrides=overrides, lenient=True)
        if not effective.enabled or not effective.persist or size <= effective.batch_budget:
            return False
        return _names_remote_store(effective)
    except Exception:  # undecidable: a thread hop costs far less than a blocked loop
        return True


def _names_remote_store(config: BudgetConfig) -> bool:
    return config.persist and config.store_location().scheme == "s3"


def _remote_store_possible() -> bool:
    """Whether bounding here may reach a store over the network: one was set up in this
    process (an entry point or a request named it), or the active ``budget(...)`` block
    names a store (a block sets none up: its first request would, on the loop)."""
    return remote_store_in_use() or "artifact_store" in current_overrides()


def _offload_response(
    request: Any, response: Any, size: int, config: BudgetConfig | None, load: bool
) -> bool:
    """Whether rewriting a read response body of ``size`` bytes goes to a worker thread:
    from ``OFFLOAD_BYTES`` (the CPU), or when a rewriter says it may wait for a store over
    the network (the MCP boundary: a result over its budget, whatever its size, with the
    entry point's store on S3). Below, on the loop: a thread hop would cost more."""
    if size >= OFFLOAD_BYTES:
        return True
    if not _remote_store_possible():
        return False
    try:
        return response_may_wait(request, response, config, load=load)
    except Exception:  # undecidable: a thread hop costs far less than a blocked loop
        return True


def _no_warning(message: str) -> None:
    """Header mistakes are reported once, when the request is bounded, not here too."""


T = TypeVar("T")


async def off_loop(
    request: Any, fn: Callable[..., T], *args: Any, config: BudgetConfig | _Unset | None = _UNSET
) -> T:
    """``fn(*args)``, in a worker thread when bounding ``request`` may take long: a large
    body, or one over its budget with a store over the network (``_offload``).

    ``config`` is the entry point's configuration (the request's ``x-budgetware-*``
    headers apply on top); without it, any body goes to a worker thread while an S3 store
    is in use. The thread sees the caller's context variables (``budget(...)`` blocks), as
    anyio copies the context into it.
    """
    try:
        headers = request.headers
        size = int(headers.get("content-length") or 0)
    except (AttributeError, ValueError):
        return await off_loop_for_size(0, fn, *args, config=config)
    overrides = None
    if config is not _UNSET and size < OFFLOAD_BYTES and _remote_store_possible():
        try:
            if any(name.lower().startswith(REQUEST_HEADER_PREFIX) for name in headers):
                overrides = header_overrides(headers, warn=_no_warning)
        except Exception:
            config = _UNSET  # undecidable: decided as for an unknown configuration
    return await off_loop_for_size(size, fn, *args, config=config, overrides=overrides)


async def off_loop_for_size(
    size: int,
    fn: Callable[..., T],
    *args: Any,
    config: BudgetConfig | _Unset | None = _UNSET,
    overrides: Mapping[str, Any] | None = None,
) -> T:
    """``fn(*args)`` for a body of ``size`` bytes: in a worker thread when it is large, or
    may wait for a store over the network (``_offload``: ``config`` and ``overrides`` are
    the settings the body is bounded with), else at once on the loop.

    For entry points that bound a decoded body, with no request to read a size from (SDK
    hooks, the LiteLLM Proxy's); the thread sees the caller's context variables.
    """
    if not _offload(size, config, overrides):
        return fn(*args)
    import anyio.to_thread  # httpx and httpx2 both depend on anyio

    return await anyio.to_thread.run_sync(fn, *args)


async def rewrite_response_off_loop(
    request: Any, response: Any, config: Any, *, load: bool = True
) -> Any:
    """``rewrite_response`` for the async paths: in a worker thread when the response body
    is already read (a non-streaming ``send``) and large, since a rewriter may parse it,
    bound it and write an artifact, or when the rewrite may wait for a store over the
    network (``_offload_response``); a streamed body is rewritten chunk by chunk, off the
    loop already. Other bodies stay on the loop, where a thread hop would cost more."""
    content = getattr(response, "_content", None)  # set once an httpx/httpx2 body is read
    if not isinstance(content, bytes) or not _offload_response(
        request, response, len(content), config, load
    ):
        return rewrite_response(request, response, config, load=load)
    import anyio.to_thread

    return await anyio.to_thread.run_sync(
        partial(rewrite_response, request, response, config, load=load)
    )


class AsyncBudgetTransport(_TransportBase):
    """An async transport of httpx or httpx2 that bounds tool results, then calls ``inner``."""

    # Around a transport of httpx or httpx2 it is one of that library too (_TransportBase).
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
        if is_handled(request):
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
    # The classes _TransportBase.__new__ builds, as type checkers see them: httpx.Client and
    # httpx2.Client take a BudgetTransport around their own library's transport.
    class _Httpx2BudgetTransport(BudgetTransport, httpx2.BaseTransport): ...

    class _HttpxBudgetTransport(BudgetTransport, httpx.BaseTransport): ...

    class _Httpx2AsyncBudgetTransport(AsyncBudgetTransport, httpx2.AsyncBaseTransport): ...

    class _HttpxAsyncBudgetTransport(AsyncBudgetTransport, httpx.AsyncBaseTransport): ...
