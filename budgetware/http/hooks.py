"""The response-hook registry: features that rewrite what comes back (the MCP boundary)
register here, so the HTTP layer knows none by name. Imports neither httpx nor pydantic
(``import budgetware`` imports it). While rewriters run, ``entry_config()`` is the
delivering entry point's configuration.
"""

from __future__ import annotations

import _thread
import contextvars
from collections.abc import Callable

TYPE_CHECKING = False  # without importing typing (import budgetware)
if TYPE_CHECKING:
    from typing import Any

    from budgetware.core.config import BudgetConfig

__all__ = [
    "RESPONSE_REWRITERS",
    "entry_config",
    "load_before_first_response",
    "load_features",
    "register_response_rewriter",
    "response_may_wait",
    "rewrite_response",
]

# (request, response) -> the response to deliver (the same object when nothing changes).
RESPONSE_REWRITERS: list[Callable[[Any, Any], Any]] = []
# (request, response, entry point's config) -> whether rewriting this read response may
# wait for a store over the network.
_RESPONSE_WAITS: list[Callable[[Any, Any, BudgetConfig | None], bool]] = []


def register_response_rewriter(
    rewriter: Callable[[Any, Any], Any],
    *,
    may_wait: Callable[[Any, Any, BudgetConfig | None], bool] | None = None,
) -> None:
    """Apply ``rewriter`` to every response the HTTP layer delivers (in this order).
    ``may_wait`` tells the async paths whether a rewrite may wait for a store over the
    network: such a rewrite runs in a worker thread."""
    RESPONSE_REWRITERS.append(rewriter)
    if may_wait is not None:
        _RESPONSE_WAITS.append(may_wait)


def response_may_wait(
    request: Any, response: Any, config: BudgetConfig | None = None, load: bool = True
) -> bool:
    """Whether a rewriter may wait for a store over the network on this read response (when
    undecidable, it may: a thread hop costs far less than a blocked loop)."""
    token = _ENTRY_CONFIG.set(config)
    try:
        if load and _loaders:
            load_features()
        return any(wait(request, response, config) for wait in _RESPONSE_WAITS)
    except Exception:
        return True
    finally:
        _ENTRY_CONFIG.reset(token)


_loaders: list[Callable[[], object]] = []
_loaders_lock = _thread.allocate_lock()  # threading.Lock, without importing threading


def load_before_first_response(load: Callable[[], object]) -> None:
    """Run ``load`` (an import that registers rewriters) before the next response is
    rewritten, so a feature is imported only once a response needs it."""
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
    """Apply every rewriter in order; the same response when none applies. ``config`` is
    the delivering entry point's (``entry_config()``); ``load=False`` (a request without a
    body) loads no feature."""
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
