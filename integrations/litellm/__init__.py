"""budgetware for litellm: per-call ``client=`` handlers whose transport bounds tool results,
and ``budget_callback()``, the ``CustomLogger`` for the Router and the Proxy
(docs/litellm-proxy.md). ``instrument()`` already covers litellm's default clients::

    from budgetware.integrations.litellm import budget_http_handler

    litellm.completion(model="anthropic/...", messages=..., client=budget_http_handler())
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from budgetware.core.config import BudgetConfig

from .._sdk import with_budget

if TYPE_CHECKING:
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler, HTTPHandler

    from ._callback import BudgetCallback

__all__ = ["BudgetCallback", "budget_async_http_handler", "budget_callback", "budget_http_handler"]

_INSTALL = 'the litellm integration needs litellm: pip install "budgetware[litellm]"'


def _handlers() -> Any:
    try:
        from litellm.llms.custom_httpx import http_handler
    except ImportError as exc:
        raise ImportError(_INSTALL) from exc
    return http_handler


def _callback_module() -> Any:
    """``_callback``, imported on demand: importing this package must not import litellm."""
    try:
        from . import _callback
    except ImportError as exc:
        raise ImportError(_INSTALL) from exc
    return _callback


def budget_callback(*, config: BudgetConfig | None = None) -> BudgetCallback:
    """A ``BudgetCallback``: the litellm ``CustomLogger`` that bounds tool results.

    Register it with ``litellm.callbacks = [budget_callback()]`` (async SDK and Router
    calls) or name ``budgetware.integrations.litellm.proxy.handler`` in the proxy config.
    """
    callback: BudgetCallback = _callback_module().BudgetCallback(config)
    return callback


if not TYPE_CHECKING:  # type checkers read the import above

    def __getattr__(name: str) -> Any:
        if name == "BudgetCallback":
            return _callback_module().BudgetCallback
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def budget_http_handler(*, config: BudgetConfig | None = None) -> HTTPHandler:
    """A litellm ``HTTPHandler``, made as litellm makes its own (TLS, proxies, headers), whose
    client's transports bound tool results.

    Pass it as ``client=`` to ``litellm.completion`` (any provider but openai/azure: those
    take ``openai.OpenAI(http_client=budgetware.integrations.openai.budget_http_client())``);
    ``handler.close()`` closes its connections.
    """
    handler: HTTPHandler = _handlers().HTTPHandler()
    with_budget(handler.client, "litellm", config)
    return handler


def budget_async_http_handler(*, config: BudgetConfig | None = None) -> AsyncHTTPHandler:
    """A litellm ``AsyncHTTPHandler`` whose client's transports (litellm's own aiohttp-backed
    one, or classic httpx's) bound tool results."""
    handler: AsyncHTTPHandler = _handlers().AsyncHTTPHandler()
    with_budget(handler.client, "litellm", config)
    return handler
