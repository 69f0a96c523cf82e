"""Seams between the HTTP layer and the features that rewrite what comes back (MCP results).

The HTTP layer (transports and ``instrument()``) calls ``rewrite_response`` on every
response it delivers; response-side features register a rewriter here. Kept free of any
HTTP library import: rewriters receive the library's own request and response objects.
budgetware's own rewriter (the MCP producer boundary) is imported at the first response,
so ``import budgetware`` stays light.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

__all__ = ["RESPONSE_REWRITERS", "ResponseRewriter", "builtin_rewriters", "rewrite_response"]

# (request, response) -> the response to deliver (the same object when nothing changes).
ResponseRewriter = Callable[[Any, Any], Any]

RESPONSE_REWRITERS: list[ResponseRewriter] = []


@cache
def builtin_rewriters() -> tuple[ResponseRewriter, ...]:
    """budgetware's own rewriters, applied before the registered ones."""
    from budgetware._mcp_http import rewrite_mcp_response

    return (rewrite_mcp_response,)


def rewrite_response(request: Any, response: Any) -> Any:
    """Apply every rewriter in order; the same response when none applies."""
    for rewriter in builtin_rewriters():
        response = rewriter(request, response)
    for rewriter in RESPONSE_REWRITERS:
        response = rewriter(request, response)
    return response
