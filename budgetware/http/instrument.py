"""Process-wide drop-in: patch ``Client.send`` / ``AsyncClient.send`` of httpx and httpx2.

Cheap to set up: settings are validated at once, but the bounding layer
(``http/transport.py``) is imported by the first request with a body or headers to handle.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple

import wrapt

from budgetware.core import observe
from budgetware.http.context import bounded_above
from budgetware.http.delivery import settle
from budgetware.http.hooks import rewrite_response
from budgetware.store.files import default_plainly_private, plainly_accepted

if TYPE_CHECKING:
    from budgetware.core.config import BudgetConfig

__all__ = ["PATCH_TARGETS", "Instrumentation", "instrument", "is_instrumented", "uninstrument"]


class PatchTarget(NamedTuple):
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
        # target -> the class its method was found on (and wrapped on)
        self.patched: dict[PatchTarget, type] = {}
        self.hooked: set[str] = set()


_STATE = _State()

# Set on a request that one layer already bounded (http/transport.HANDLED_EXTENSION).
_HANDLED = "budgetware.handled"
_OWN_HEADERS = "x-budgetware-"


def _client_transport(client: Any, request: Any) -> Any:
    # Private in both libraries: a miss only costs a second, idempotent pass.
    pick = getattr(client, "_transport_for_url", None)
    try:
        return pick(request.url) if pick is not None else None
    except Exception:
        return None


def _nothing_to_do(request: Any) -> bool:
    """A request without a body or ``x-budgetware-*`` headers: nothing to bound or remove."""
    try:
        if request.content:
            return False
    except Exception:  # a streaming body (RequestNotRead): the layer decides
        return False
    return not any(name.lower().startswith(_OWN_HEADERS) for name in request.headers)


def _outgoing(client: Any, request: Any, asynchronous: bool) -> tuple[Any, bool]:
    """The request to send and whether this layer handles it (False: a layer below will)."""
    if request.extensions.get(_HANDLED):
        return request, False
    body = not _nothing_to_do(request)
    # The bounding layer loads at the first body; no BudgetTransport exists before it.
    transport: Any = sys.modules.get("budgetware.http.transport")
    if body:
        transport = importlib.import_module("budgetware.http.transport")
    if transport is not None and isinstance(
        _client_transport(client, request), transport._TransportBase
    ):
        return request, False
    if body and not bounded_above():
        lib = transport.library_of_class(type(request))
        if lib is None:  # not an httpx or httpx2 request: nothing to rebuild it with
            return request, False
        request = transport.prepare_request(
            request, lib, _STATE.config, client, asynchronous=asynchronous
        )
    # Nothing to bound, or an SDK hook bounded it: delivered, the request left alone.
    request.extensions[_HANDLED] = True
    return request, True


def _bind(
    instance: Any, args: Any, kwargs: Any, asynchronous: bool = False
) -> tuple[Any, Any, Any, bool]:
    # send(request, *, stream=..., ...): the request may be a keyword.
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
    return rewrite_response(request, response, config, load=not _nothing_to_do(request))


async def _async_send(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
    if not _STATE.active:
        return await wrapped(*args, **kwargs)
    config = _STATE.config
    first = args[0] if args else kwargs.get("request")
    if first is None or _nothing_to_do(first):  # no body to bound: nothing to take off the loop
        args, kwargs, request, handled = _bind(instance, args, kwargs, True)
    else:
        from budgetware.http.transport import off_loop

        args, kwargs, request, handled = await off_loop(
            first, _bind, instance, args, kwargs, True, config=config
        )
    if not handled:
        return await wrapped(*args, **kwargs)
    try:
        response = await wrapped(*args, **kwargs)
    finally:
        settle(request)
    load = not _nothing_to_do(request)
    content = getattr(response, "_content", None)  # set once an httpx/httpx2 body is read
    if not load and not (isinstance(content, bytes) and len(content) >= _OFFLOAD_FLOOR):
        return rewrite_response(request, response, config, load=False)
    from budgetware.http.transport import rewrite_response_off_loop

    return await rewrite_response_off_loop(request, response, config, load=load)


# The answer to a request without a body is rewritten on the loop below this size.
_OFFLOAD_FLOOR = 64 * 1024


def _genai_use_aiohttp(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
    # google-genai's async client calls aiohttp directly when it is installed: while
    # instrumented, it uses its own httpx2 AsyncClient instead (Vertex mTLS keeps aiohttp).
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


def _defining_class(cls: type, target: PatchTarget) -> type | None:
    """The class to wrap ``target.method`` on: ``cls``, or the first base from ``target``'s
    library that defines it (aws-xray-sdk replaces ``httpx.Client`` with a subclass)."""
    if target.method in cls.__dict__:
        return cls
    library = target.module.partition(".")[0]
    for klass in cls.__mro__[1:]:
        if klass.__module__.partition(".")[0] == library and target.method in klass.__dict__:
            return klass
    return None


def _patch_module(module: ModuleType) -> None:
    with _STATE.lock:
        if not _STATE.active:
            return
        for target in PATCH_TARGETS:
            if target.module != module.__name__ or target in _STATE.patched:
                continue
            named = getattr(module, target.cls, None)
            cls = _defining_class(named, target) if isinstance(named, type) else None
            if cls is None:
                from budgetware.core.errors import BudgetwareWarning

                warnings.warn(
                    f"budgetware: cannot instrument {target.name}: it no longer exists in this "
                    f"version of {target.module}; requests sent through it are not bounded",
                    BudgetwareWarning,
                    stacklevel=3,
                )
                continue
            current = cls.__dict__[target.method]
            _STATE.patched[target] = cls
            # Our layer may still be in the chain, under a wrapper that could not unlink it.
            if not any(_is_own(node, target) for _, node in _chain(current)):
                setattr(cls, target.method, wrapt.FunctionWrapper(current, target.wrapper))


# wrapt proxies, whose __wrapped__ can be relinked (wrapt 2: BaseObjectProxy).
_PROXIES: tuple[type, ...] = (getattr(wrapt, "BaseObjectProxy", wrapt.ObjectProxy),)


def _is_own(obj: Any, target: PatchTarget) -> bool:
    return (
        isinstance(obj, wrapt.FunctionWrapper)
        and getattr(obj, "_self_wrapper", None) is target.wrapper
    )


def _chain(obj: Any) -> Iterator[tuple[Any, Any]]:
    """(the wrapper above or None, the wrapper) down a chain of wrappers starting at
    ``obj``; a chain is short, and a cycle must not hang us."""
    above = None
    for _ in range(64):
        if obj is None:
            return
        yield above, obj
        above, obj = obj, getattr(obj, "__wrapped__", None)


def _unwrap_own(cls: type, target: PatchTarget) -> None:
    """Take budgetware's layer out of the chain on ``cls``, wherever it sits: a wrapt proxy
    above it is relinked; under a plain function it stays, inert."""
    for above, node in _chain(cls.__dict__.get(target.method)):
        if _is_own(node, target):
            if above is None:
                setattr(cls, target.method, node.__wrapped__)
            elif isinstance(above, _PROXIES):
                above.__wrapped__ = node.__wrapped__  # type: ignore[attr-defined]
            return


class Instrumentation:
    """What ``instrument()`` returns: a context manager that restores, on exit, exactly the
    state before the call (uninstrumented, or an outer ``instrument()`` with its config)."""

    def __init__(
        self, active_before: bool = False, config_before: BudgetConfig | None = None
    ) -> None:
        self._active_before = active_before
        self._config_before = config_before

    def __enter__(self) -> Instrumentation:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with _STATE.lock:
            if self._active_before and _STATE.active:
                _STATE.config = self._config_before
                return
        uninstrument()

    @property
    def patched(self) -> tuple[str, ...]:
        """The names of the methods currently wrapped (``"httpx2.Client.send"``, ...)."""
        with _STATE.lock:
            return tuple(t.name for t in _STATE.patched)


_PREFIX = "BUDGETWARE_"
_RUN_PREFIX = _PREFIX + "RUN_"  # budgetware run's own variables, not settings


# The BUDGETWARE_* variables looked at already: an unknown one is warned about once.
_SEEN_VARIABLES: set[str] = set()


def _check_setup(config: BudgetConfig | None) -> None:
    """A bad setting or unusable store is a ``ConfigError`` now, not on a request; without
    any setting only the default directory is checked, cheaply. A ``BudgetwareWarning``
    names each ``BUDGETWARE_*`` variable budgetware does not read (``budgetware run``
    named them already)."""
    names = [key for key in os.environ if key.startswith(_PREFIX)]
    variables = [key for key in names if not key.startswith(_RUN_PREFIX)]
    if config is None and not variables and default_plainly_private():
        return
    from budgetware.core.config import check_settings
    from budgetware.store.select import check_store

    resolved = check_settings(config)
    if len(variables) == len(names):
        from budgetware.core.environment import ignored_variables
        from budgetware.core.errors import BudgetwareWarning

        fresh = [key for key in variables if key not in _SEEN_VARIABLES]
        _SEEN_VARIABLES.update(fresh)
        for said in ignored_variables(fresh):
            warnings.warn(f"budgetware: {said}", BudgetwareWarning, stacklevel=3)
    if not plainly_accepted(resolved, s3_later=False):
        check_store(resolved)


def instrument(*, config: BudgetConfig | None = None) -> Instrumentation:
    """Bound the tool results of every request sent by httpx and httpx2 clients in this process.

    Patches ``Client.send`` and ``AsyncClient.send`` of either library, now or when it is
    imported; calling it again patches nothing twice. ``config`` sits between the
    environment and ``budget(...)`` blocks. The result is a context manager that restores
    the state before the call (an outer ``instrument()`` with its config) on exit.
    """
    _check_setup(config)
    observe.entry_setup(config)
    with _STATE.lock:
        handle = Instrumentation(_STATE.active, _STATE.config)
        _STATE.config = config
        _STATE.active = True
        for name in {t.module for t in PATCH_TARGETS}:
            module = sys.modules.get(name)
            if module is not None:
                _patch_module(module)
            if name not in _STATE.hooked:
                # Fires at once if the module is imported by then, else when it is imported.
                wrapt.register_post_import_hook(_patch_module, name)
                _STATE.hooked.add(name)
    return handle


def uninstrument() -> None:
    """Take budgetware's layer off every ``send`` it wrapped; other libraries' wrappers stay."""
    with _STATE.lock:
        _STATE.active = False
        _STATE.config = None
        for target, cls in _STATE.patched.items():
            _unwrap_own(cls, target)
        _STATE.patched.clear()


def is_instrumented() -> bool:
    """Whether ``instrument()`` is in effect."""
    return _STATE.active
