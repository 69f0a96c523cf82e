"""What the per-SDK helpers share: the SDK's own client, its transports bounded."""

from __future__ import annotations

from typing import Any, TypeVar

from budgetware.core.config import BudgetConfig
from budgetware.http.transport import AsyncBudgetTransport, BudgetTransport, sdk_http_library

__all__ = ["with_budget"]

_Client = TypeVar("_Client")


def with_budget(client: _Client, sdk: str, config: BudgetConfig | None) -> _Client:
    """``client``, made by the SDK as it makes its own (timeout, limits, keep-alive, TLS,
    proxies), with each of its transports, the proxies' too, inside a budget transport."""
    library = sdk_http_library(type(client), sdk)  # refuses a client on neither library
    budget = AsyncBudgetTransport if isinstance(client, library.AsyncClient) else BudgetTransport
    # Private in httpx and httpx2 alike: the default transport and one per proxy pattern.
    http: Any = client
    http._transport = budget(http._transport, config=config)
    http._mounts = {
        pattern: None if transport is None else budget(transport, config=config)
        for pattern, transport in http._mounts.items()
    }
    return client
