"""budgetware for litellm: per-call ``client=`` handlers whose transport bounds tool results.

``instrument()`` covers litellm's default clients (classic httpx, sync and async). To bound
one call only, pass a handler::

    from budgetware.integrations.litellm import budget_http_handler

    litellm.completion(model="anthropic/...", messages=..., client=budget_http_handler())

litellm's openai and azure providers take an ``openai.OpenAI`` client as ``client=``
instead: build one with ``http_client=httpx.Client(transport=BudgetTransport(...))``.
"""

from __future__ import annotations

from typing import Any

from budgetware._config import BudgetConfig
from budgetware._transport import AsyncBudgetTransport, BudgetTransport

__all__ = ["budget_async_http_handler", "budget_http_handler"]

_INSTALL = 'the litellm integration needs litellm: pip install "budgetware[litellm]"'


def _handlers() -> Any:
    try:
        from litellm.llms.custom_httpx import http_handler
    except ImportError as exc:
        raise ImportError(_INSTALL) from exc
    return http_handler


def budget_http_handler(*, config: BudgetConfig | None = None) -> Any:
    """A litellm ``HTTPHandler`` around a classic ``httpx.Client`` with a budget transport.

    Pass it as ``client=`` to ``litellm.completion`` (any provider but openai/azure);
    ``handler.close()`` closes its connections.
    """
    http_handler = _handlers()
    import httpx

    transport: Any = BudgetTransport(httpx.HTTPTransport(), config=config)
    client = httpx.Client(transport=transport, follow_redirects=True)
    handler = http_handler.HTTPHandler(client=client)
    # The handler did not create this client but is its only user: close() should close it.
    if hasattr(handler, "_owns_client"):
        handler._owns_client = True
    return handler


def budget_async_http_handler(*, config: BudgetConfig | None = None) -> Any:
    """A litellm ``AsyncHTTPHandler`` whose transport (litellm's own aiohttp-backed one,
    or classic httpx's) is wrapped in a budget transport."""
    http_handler = _handlers()
    import httpx

    inner = http_handler.AsyncHTTPHandler.create_async_transport() or httpx.AsyncHTTPTransport()
    return http_handler.AsyncHTTPHandler(transport=AsyncBudgetTransport(inner, config=config))
