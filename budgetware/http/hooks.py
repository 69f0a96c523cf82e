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

import contextvars
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from budgetware.core.config import BudgetConfig

__all__ = [
    "RESPONSE_REWRITERS",
    "ResponseRewriter",
    "entry_config",
    "load_before_first_response",
    "register_response_rewriter",
    "rewrite_response",
]

# (request, response) -> the response to deliver (the same object when nothing changes).
ResponseRewriter = Callable[[Any, Any], Any]

RESPONSE_REWRITERS: list[ResponseRewriter] = []


def register_response_rewriter(rewriter: ResponseRewriter) -> None:
    """Apply ``rewriter`` to every response the HTTP layer delivers (once, in this order)."""
    if rewriter not in RESPONSE_REWRITERS:
        RESPONSE_REWRITERS.append(rewriter)


_loaders: list[Callable[[], object]] = []
_loaders_lock = threading.Lock()


def load_before_first_response(load: Callable[[], object]) -> None:
    """Run ``load`` (an import that registers rewriters) before the next response is
    rewritten: a feature registers without being imported until a response needs it."""
    with _loaders_lock:
        _loaders.append(load)


def _run_loaders() -> None:
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


def rewrite_response(request: Any, response: Any, config: BudgetConfig | None = None) -> Any:
    """Apply every rewriter in order; the same response when none applies.

    ``config`` is the delivering entry point's configuration (None: the environment and
    ``budget(...)`` blocks only); rewriters read it with ``entry_config()``.
    """
    if _loaders:
        _run_loaders()
    if not RESPONSE_REWRITERS:
        return response
    token = _ENTRY_CONFIG.set(config)
    try:
        for rewriter in RESPONSE_REWRITERS:
            response = rewriter(request, response)
    finally:
        _ENTRY_CONFIG.reset(token)
    return response
