"""What the per-SDK helpers share: the SDK's own client with its transports bounded, and the
JSON size of a body that is not serialized yet."""

from __future__ import annotations

from typing import Any, TypeVar

from budgetware.core.config import BudgetConfig
from budgetware.core.jsonio import dumps_bytes
from budgetware.http.transport import AsyncBudgetTransport, BudgetTransport, sdk_http_library

__all__ = ["json_size", "with_budget"]

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


def json_size(value: Any) -> int:
    """``value``'s size as compact JSON: what decides whether it is bounded off the event
    loop; 0 when it is not JSON as it is (the SDK serializes some values itself)."""
    try:
        return len(dumps_bytes(value))
    except (TypeError, ValueError, RecursionError):
        return 0
