"""The response-hook registry: features that rewrite what comes back register here.

The HTTP layer (transports and ``instrument()``) calls ``rewrite_response`` on every
response it delivers. It knows no feature by name: the MCP producer boundary
(``budgetware.mcp.http``) registers its rewriter when it is imported, as
``import budgetware`` does. Rewriters receive the library's own request and response
objects (httpx or httpx2); this module imports neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "RESPONSE_REWRITERS",
    "ResponseRewriter",
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


def rewrite_response(request: Any, response: Any) -> Any:
    """Apply every rewriter in order; the same response when none applies."""
    for rewriter in RESPONSE_REWRITERS:
        response = rewriter(request, response)
    return response
