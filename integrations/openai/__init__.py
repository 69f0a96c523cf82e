"""budgetware for the openai SDK: ready ``http_client`` objects that bound tool results.

``instrument()`` already covers every openai client; these helpers bound one client only::

    from budgetware.integrations.openai import budget_http_client

    client = openai.OpenAI(http_client=budget_http_client())
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from budgetware.core.config import BudgetConfig
from budgetware.http.transport import AsyncBudgetTransport, BudgetTransport, sdk_http_library

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
    """``openai.DefaultHttpxClient`` (the SDK's timeout, limits, redirects) with a budget.

    Built on the HTTP library the installed openai uses (httpx for openai 2.x, httpx2 for
    3.x). ``kwargs`` go to ``DefaultHttpxClient``. Pass the result as
    ``OpenAI(http_client=...)``.
    """
    openai = _openai()
    from openai._constants import DEFAULT_CONNECTION_LIMITS

    library = sdk_http_library(openai.DefaultHttpxClient, "openai")
    # DefaultHttpxClient hands its limits to the transport it builds; ours needs them too.
    inner = library.HTTPTransport(limits=kwargs.get("limits", DEFAULT_CONNECTION_LIMITS))
    client: DefaultHttpxClient = openai.DefaultHttpxClient(
        transport=BudgetTransport(inner, config=config), **kwargs
    )
    return client


def budget_async_http_client(
    *, config: BudgetConfig | None = None, **kwargs: Any
) -> DefaultAsyncHttpxClient:
    """``openai.DefaultAsyncHttpxClient`` with a budget, for ``AsyncOpenAI(http_client=...)``
    (httpx or httpx2, as the installed openai uses)."""
    openai = _openai()
    from openai._constants import DEFAULT_CONNECTION_LIMITS

    library = sdk_http_library(openai.DefaultAsyncHttpxClient, "openai")
    inner = library.AsyncHTTPTransport(limits=kwargs.get("limits", DEFAULT_CONNECTION_LIMITS))
    client: DefaultAsyncHttpxClient = openai.DefaultAsyncHttpxClient(
        transport=AsyncBudgetTransport(inner, config=config), **kwargs
    )
    return client


_AIOHTTP_2X = (
    "budget_aiohttp_client on openai 2.x needs the httpx-aiohttp package, which openai's "
    'aiohttp extra installs: pip install "openai[aiohttp]"'
)


def budget_aiohttp_client(
    *, config: BudgetConfig | None = None, **kwargs: Any
) -> DefaultAioHttpClient:
    """``openai.DefaultAioHttpClient`` (aiohttp on the wire) with a budget.

    openai 3.x ships its aiohttp transport (httpx2); openai 2.x (classic httpx) uses the
    ``httpx-aiohttp`` package, installed with ``openai[aiohttp]``: without it this raises
    ``ImportError`` saying so, as openai's own client would fail on its first use.
    """
    openai = _openai()
    from openai._constants import DEFAULT_CONNECTION_LIMITS

    transport_class = _aiohttp_transport(sdk_http_library(openai.DefaultAioHttpClient, "openai"))
    inner = transport_class(limits=kwargs.get("limits", DEFAULT_CONNECTION_LIMITS))
    client: DefaultAioHttpClient = openai.DefaultAioHttpClient(
        transport=AsyncBudgetTransport(inner, config=config), **kwargs
    )
    return client


def _aiohttp_transport(library: Any) -> Any:
    """The aiohttp transport class for the HTTP library the installed openai uses."""
    if library.__name__ == "httpx2":
        from openai._vendor.httpx_aiohttp import AiohttpTransport

        return AiohttpTransport
    try:  # openai 2.x: the package its DefaultAioHttpClient is built on
        from httpx_aiohttp import AiohttpTransport as Classic
    except ImportError as exc:
        raise ImportError(_AIOHTTP_2X) from exc
    return Classic
