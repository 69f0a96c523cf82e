"""budgetware for the openai SDK: ready ``http_client`` objects that bound tool results.

``instrument()`` already covers every openai client; these helpers bound one client only::

    from budgetware.integrations.openai import budget_http_client

    client = openai.OpenAI(http_client=budget_http_client())
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from budgetware.core.config import BudgetConfig

from .._sdk import with_budget

if TYPE_CHECKING:
    from openai import DefaultAioHttpClient, DefaultAsyncHttpxClient, DefaultHttpxClient

__all__ = ["budget_aiohttp_client", "budget_async_http_client", "budget_http_client"]

_INSTALL = 'the openai integration needs the openai SDK: pip install "budgetware[openai]"'


def _openai() -> Any:
    try:
        import openai
    except ImportError as exc:
        raise ImportError(_INSTALL) from exc
    return openai


def budget_http_client(*, config: BudgetConfig | None = None, **kwargs: Any) -> DefaultHttpxClient:
    """``openai.DefaultHttpxClient(**kwargs)``, as the SDK makes it (its timeout, limits,
    redirects, proxies), with a budget. Pass the result as ``OpenAI(http_client=...)``."""
    client: DefaultHttpxClient = with_budget(
        _openai().DefaultHttpxClient(**kwargs), "openai", config
    )
    return client


def budget_async_http_client(
    *, config: BudgetConfig | None = None, **kwargs: Any
) -> DefaultAsyncHttpxClient:
    """``openai.DefaultAsyncHttpxClient(**kwargs)`` with a budget, for
    ``AsyncOpenAI(http_client=...)``."""
    client: DefaultAsyncHttpxClient = with_budget(
        _openai().DefaultAsyncHttpxClient(**kwargs), "openai", config
    )
    return client


def budget_aiohttp_client(
    *, config: BudgetConfig | None = None, **kwargs: Any
) -> DefaultAioHttpClient:
    """``openai.DefaultAioHttpClient(**kwargs)`` (aiohttp on the wire) with a budget: its
    aiohttp transport is kept, inside the budget transport."""
    client: DefaultAioHttpClient = with_budget(
        _openai().DefaultAioHttpClient(**kwargs), "openai", config
    )
    return client
