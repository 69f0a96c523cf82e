"""budgetware for the anthropic SDK: native middleware (Bedrock, Vertex) and per-client helpers.

The middleware bounds the request body dict before the SDK serializes and signs it, so it
works for ``AnthropicBedrock`` and ``AnthropicVertex`` too, where the HTTP layer must
leave the signed bytes alone::

    from budgetware.integrations.anthropic import budget_middleware

    client = anthropic.AnthropicBedrock(middleware=[budget_middleware()])
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from budgetware.core.config import BudgetConfig, check_settings
from budgetware.http.context import upper_layer_bounded
from budgetware.http.headers import split_headers
from budgetware.http.transport import off_loop_for_size
from budgetware.store.select import check_store
from budgetware.wire.payload import bound_payload

from .._sdk import json_size, with_budget

if TYPE_CHECKING:
    from anthropic import DefaultAioHttpClient, DefaultAsyncHttpxClient, DefaultHttpxClient

__all__ = ["budget_async_http_client", "budget_http_client", "budget_middleware"]

_INSTALL = 'the anthropic integration needs the anthropic SDK: pip install "budgetware[anthropic]"'


def _anthropic() -> Any:
    try:
        import anthropic
    except ImportError as exc:
        raise ImportError(_INSTALL) from exc
    return anthropic


@functools.cache
def _middleware_class() -> type[Any]:
    anthropic = _anthropic()

    class BudgetMiddleware(anthropic.Middleware):  # type: ignore[misc,name-defined]
        """Bounds the tool results of each request body before it is serialized and signed."""

        def __init__(self, config: BudgetConfig | None) -> None:
            self.config = config

        def _bounded(self, request: Any) -> Any:
            overrides, headers = split_headers(request.headers)
            changed_headers = len(headers) != len(request.headers)
            if not (isinstance(request.json, dict) and request.method.lower() == "post"):
                return request.copy(headers=headers) if changed_headers else request
            payload = bound_payload(
                request.url, request.json, config=self.config, request_overrides=overrides
            )
            if payload is request.json and not changed_headers:
                return request
            return request.copy(body=payload, headers=headers)

        def handle(self, request: Any, call_next: Any) -> Any:
            bounded = self._bounded(request)
            with upper_layer_bounded():
                return call_next(bounded)

        async def handle_async(self, request: Any, call_next: Any) -> Any:
            # A large body (or one that may wait for S3) is bounded in a worker thread; its
            # JSON size decides, as the request has no content-length yet.
            size = json_size(request.json) if request.method.lower() == "post" else 0
            overrides = split_headers(request.headers)[0] if size else None
            bounded = await off_loop_for_size(
                size, self._bounded, request, config=self.config, overrides=overrides
            )
            with upper_layer_bounded():
                return await call_next(bounded)

    return BudgetMiddleware


def budget_middleware(*, config: BudgetConfig | None = None) -> Any:
    """An ``anthropic.Middleware`` for sync and async clients that bounds tool results.

    Pass it as ``Anthropic(middleware=[...])`` (also ``AnthropicBedrock``,
    ``AnthropicVertex`` and their async forms). ``x-budgetware-*`` headers given with
    ``extra_headers`` apply to that request and are removed before it is signed. A bad
    setting or an unusable store fails here, not on a request.
    """
    check_store(check_settings(config))
    return _middleware_class()(config)


def budget_http_client(*, config: BudgetConfig | None = None, **kwargs: Any) -> DefaultHttpxClient:
    """``anthropic.DefaultHttpxClient(**kwargs)``, as the SDK makes it (its limits, TCP
    keep-alive, proxies), with a budget: ``Anthropic(http_client=budget_http_client())``."""
    client: DefaultHttpxClient = with_budget(
        _anthropic().DefaultHttpxClient(**kwargs), "anthropic", config
    )
    return client


def budget_async_http_client(
    *, config: BudgetConfig | None = None, aiohttp: bool = False, **kwargs: Any
) -> DefaultAsyncHttpxClient | DefaultAioHttpClient:
    """``anthropic.DefaultAsyncHttpxClient`` (or ``DefaultAioHttpClient`` with ``aiohttp=True``)
    with a budget."""
    anthropic = _anthropic()
    made = (anthropic.DefaultAioHttpClient if aiohttp else anthropic.DefaultAsyncHttpxClient)(
        **kwargs
    )
    client: DefaultAsyncHttpxClient | DefaultAioHttpClient = with_budget(made, "anthropic", config)
    return client
