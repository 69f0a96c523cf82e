"""The response-hook registry: features that rewrite what comes back register here.

The HTTP layer (transports and ``instrument()``) calls ``rewrite_response`` on every
response it delivers. It knows no feature by name: the MCP producer boundary
(``budgetware.mcp.http``) registers its rewriter when it is imported, which
``import budgetware`` arranges for the first response (``load_before_first_response``).
Rewriters receive the library's own request and response objects (httpx or httpx2); this
module imports neither (nor pydantic: ``import budgetware`` imports it and stays cheap).
While they run, ``entry_config()`` is the configuration of the entry point that delivers
the response (``instrument(config=)``, a transport's ``config``), so every boundary an
entry point installs uses its settings.
"""

from __future__ import annotations

import _thread
import contextvars
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (import budgetware)
if TYPE_CHECKING:
    from typing import Any

    from budgetware.core.config import BudgetConfig

__all__ = [
    "RESPONSE_REWRITERS",
    "ResponseRewriter",
    "entry_config",
    "load_before_first_response",
    "load_features",
    "register_response_rewriter",
    "response_may_wait",
    "rewrite_response",
]

# (request, response) -> the response to deliver (the same object when nothing changes).
if TYPE_CHECKING:
    ResponseRewriter = Callable[[Any, Any], Any]
else:
    ResponseRewriter = Callable

RESPONSE_REWRITERS: list[ResponseRewriter] = []
# (request, response, entry point's config) -> whether rewriting this read response may
# wait for a store over the network (an S3 PUT: seconds, if the endpoint hangs).
if TYPE_CHECKING:
    ResponseWait = Callable[[Any, Any, "BudgetConfig | None"], bool]
else:
    ResponseWait = Callable
_RESPONSE_WAITS: list[ResponseWait] = []


def register_response_rewriter(
    rewriter: ResponseRewriter, *, may_wait: ResponseWait | None = None
) -> None:
    """Apply ``rewriter`` to every response the HTTP layer delivers (once, in this order).

    ``may_wait`` tells the async paths, before the rewrite, whether it may wait for a store
    over the network: only the feature knows (the MCP boundary: a result over its budget,
    persisted to S3), and such a rewrite runs in a worker thread, never on the event loop.
    """
    if rewriter not in RESPONSE_REWRITERS:
        RESPONSE_REWRITERS.append(rewriter)
    if may_wait is not None and may_wait not in _RESPONSE_WAITS:
        _RESPONSE_WAITS.append(may_wait)


def response_may_wait(
    request: Any, response: Any, config: BudgetConfig | None = None, *, load: bool = True
) -> bool:
    """Whether a registered rewriter may wait for a store over the network rewriting this
    (read) response; ``config`` and ``load`` as for ``rewrite_response``."""
    if load and _loaders:
        load_features()
    token = _ENTRY_CONFIG.set(config)
    try:
        return any(wait(request, response, config) for wait in _RESPONSE_WAITS)
    finally:
        _ENTRY_CONFIG.reset(token)


_loaders: list[Callable[[], object]] = []
_loaders_lock = _thread.allocate_lock()  # threading.Lock, without importing threading


def load_before_first_response(load: Callable[[], object]) -> None:
    """Run ``load`` (an import that registers rewriters) before the next response is
    rewritten: a feature registers without being imported until a response needs it."""
    with _loaders_lock:
        _loaders.append(load)


def load_features() -> None:
    """Run the pending loaders now (features register their rewriters and setting checks)."""
    with _loaders_lock:
        pending = list(_loaders)
        _loaders.clear()
        for load in pending:
            load()


_ENTRY_CONFIG: contextvars.ContextVar[BudgetConfig | None] = contextvars.ContextVar(
    "budgetware_entry_config", default=None
)


def entry_config() -> BudgetConfig | None:
    """The configuration of the entry point whose response the rewriters are handling."""
    return _ENTRY_CONFIG.get()


def rewrite_response(
    request: Any, response: Any, config: BudgetConfig | None = None, *, load: bool = True
) -> Any:
    """Apply every rewriter in order; the same response when none applies.

    ``config`` is the delivering entry point's configuration (None: the environment and
    ``budget(...)`` blocks only); rewriters read it with ``entry_config()``. ``load=False``
    (the answer to a request without a body, which no feature rewrites: MCP answers POSTed
    JSON-RPC) applies the rewriters registered so far without loading any feature.
    """
    if load and _loaders:
        load_features()
    if not RESPONSE_REWRITERS:
        return response
    token = _ENTRY_CONFIG.set(config)
    try:
        for rewriter in RESPONSE_REWRITERS:
            response = rewriter(request, response)
    finally:
        _ENTRY_CONFIG.reset(token)
    return response
