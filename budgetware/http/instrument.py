"""Process-wide drop-in: patch ``Client.send`` / ``AsyncClient.send`` of httpx and httpx2."""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType, TracebackType
from typing import Any

import wrapt

from budgetware.core.config import BudgetConfig, check_settings
from budgetware.core.errors import BudgetwareWarning
from budgetware.http.context import bounded_above
from budgetware.http.delivery import settle
from budgetware.http.hooks import rewrite_response
from budgetware.http.transport import (
    _TransportBase,
    is_handled,
    mark_handled,
    off_loop,
    prepare_request,
)
from budgetware.store.select import check_store

__all__ = ["PATCH_TARGETS", "Instrumentation", "instrument", "is_instrumented", "uninstrument"]


@dataclass(frozen=True)
class PatchTarget:
    """One method ``instrument()`` wraps: ``module.cls.method``, sync or async."""

    module: str
    cls: str
    method: str
    wrapper: Callable[[Callable[..., Any], Any, Any, Any], Any]

    @property
    def name(self) -> str:
        return f"{self.module}.{self.cls}.{self.method}"


class _State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.active = False
        self.config: BudgetConfig | None = None
        # target -> the exact attribute found in the class __dict__ before patching
        self.originals: dict[PatchTarget, Any] = {}
        self.hooked: set[str] = set()


_STATE = _State()


def _client_transport(client: Any, request: Any) -> Any:
    # Private in both libraries, hence the guard: a miss only costs a second, idempotent pass.
    pick = getattr(client, "_transport_for_url", None)
    try:
        return pick(request.url) if pick is not None else None
    except Exception:
        return None


def _outgoing(client: Any, request: Any, asynchronous: bool) -> tuple[Any, bool]:
    """The request to send and whether this layer handles it (False: a layer below will)."""
    if is_handled(request) or isinstance(_client_transport(client, request), _TransportBase):
        return request, False
    if bounded_above():  # an SDK hook bounded it: deliver its response, leave the request
        mark_handled(request)
        return request, True
    lib = sys.modules.get(type(request).__module__.partition(".")[0])
    if lib is None:
        return request, False
    outgoing = prepare_request(request, lib, _STATE.config, client, asynchronous=asynchronous)
    if outgoing is request:
        mark_handled(request)
    else:
        mark_handled(outgoing)
    return outgoing, True


def _bind(
    instance: Any, args: Any, kwargs: Any, asynchronous: bool = False
) -> tuple[Any, Any, Any, bool]:
    # send(request, *, stream=..., auth=..., follow_redirects=...): the request may be a keyword.
    if args:
        request, handled = _outgoing(instance, args[0], asynchronous)
        return (request, *args[1:]), kwargs, request, handled
    if "request" in kwargs:
        request, handled = _outgoing(instance, kwargs["request"], asynchronous)
        return args, {**kwargs, "request": request}, request, handled
    return args, kwargs, None, False


def _sync_send(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
    if not _STATE.active:
        return wrapped(*args, **kwargs)
    config = _STATE.config
    args, kwargs, request, handled = _bind(instance, args, kwargs)
    if not handled:
        return wrapped(*args, **kwargs)
    try:
        response = wrapped(*args, **kwargs)
    finally:
        settle(request)
    return rewrite_response(request, response, config)


async def _async_send(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
    if not _STATE.active:
        return await wrapped(*args, **kwargs)
    config = _STATE.config
    first = args[0] if args else kwargs.get("request")
    args, kwargs, request, handled = await off_loop(first, _bind, instance, args, kwargs, True)
    if not handled:
        return await wrapped(*args, **kwargs)
    try:
        response = await wrapped(*args, **kwargs)
    finally:
        settle(request)
    return rewrite_response(request, response, config)


def _genai_use_aiohttp(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
    # google-genai's async client calls aiohttp directly when it is installed, out of reach
    # of any httpx patch; while instrumented, it uses its own httpx2 AsyncClient instead
    # (always built, except for Vertex mTLS through google-auth, which keeps aiohttp).
    if _STATE.active and getattr(instance, "_async_httpx_client", None) is not None:
        return False
    return wrapped(*args, **kwargs)


PATCH_TARGETS: tuple[PatchTarget, ...] = (
    PatchTarget("httpx", "Client", "send", _sync_send),
    PatchTarget("httpx", "AsyncClient", "send", _async_send),
    PatchTarget("httpx2", "Client", "send", _sync_send),
    PatchTarget("httpx2", "AsyncClient", "send", _async_send),
    PatchTarget("google.genai._api_client", "BaseApiClient", "_use_aiohttp", _genai_use_aiohttp),
)


def _patch_module(module: ModuleType) -> None:
    with _STATE.lock:
        if not _STATE.active:
            return
        for target in PATCH_TARGETS:
            if target.module != module.__name__ or target in _STATE.originals:
                continue
            cls = getattr(module, target.cls, None)
            original = None if cls is None else cls.__dict__.get(target.method)
            if original is None:
                warnings.warn(
                    f"budgetware: cannot instrument {target.name}: it no longer exists in this "
                    f"version of {target.module}; requests sent through it are not bounded",
                    BudgetwareWarning,
                    stacklevel=3,
                )
                continue
            setattr(cls, target.method, wrapt.FunctionWrapper(original, target.wrapper))
            _STATE.originals[target] = original


def _on_import(module: ModuleType) -> None:
    _patch_module(module)


class Instrumentation:
    """What ``instrument()`` returns: a context manager that uninstruments on exit."""

    def __enter__(self) -> Instrumentation:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        uninstrument()

    @property
    def patched(self) -> tuple[str, ...]:
        """The names of the methods currently wrapped (``"httpx2.Client.send"``, ...)."""
        with _STATE.lock:
            return tuple(t.name for t in _STATE.originals)


def instrument(*, config: BudgetConfig | None = None) -> Instrumentation:
    """Bound the tool results of every request sent by httpx and httpx2 clients in this process.

    Patches ``Client.send`` and ``AsyncClient.send`` of whichever library is imported now,
    and of the other one when it is imported later. google-genai's async client, which
    would call aiohttp directly, is switched to its httpx2 client while instrumented.
    Calling it again patches nothing twice (a new ``config`` replaces the previous one).
    ``config`` sits between the environment and ``budget(...)`` blocks. The result is a
    context manager that undoes the patch.
    """
    # A configuration mistake (or an unusable store) fails here, not on a request.
    check_store(check_settings(config))
    with _STATE.lock:
        _STATE.config = config
        _STATE.active = True
        for name in {t.module for t in PATCH_TARGETS}:
            module = sys.modules.get(name)
            if module is not None:
                _patch_module(module)
            if name not in _STATE.hooked:
                # Fires at once if the module is imported by then, else when it is imported.
                wrapt.register_post_import_hook(_on_import, name)
                _STATE.hooked.add(name)
    return Instrumentation()


def uninstrument() -> None:
    """Restore the exact original ``send`` methods; requests are no longer bounded."""
    with _STATE.lock:
        _STATE.active = False
        _STATE.config = None
        for target, original in _STATE.originals.items():
            cls = getattr(sys.modules[target.module], target.cls)
            setattr(cls, target.method, original)
        _STATE.originals.clear()


def is_instrumented() -> bool:
    """Whether ``instrument()`` is in effect."""
    return _STATE.active
