"""Seams between the HTTP layer and the features that rewrite what comes back (MCP results).

The HTTP layer (transports and ``instrument()``) calls ``rewrite_response`` on every
response it delivers; response-side features register a rewriter here. Kept free of any
HTTP library import: rewriters receive the library's own request and response objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["RESPONSE_REWRITERS", "ResponseRewriter", "rewrite_response"]

# (request, response) -> the response to deliver (the same object when nothing changes).
ResponseRewriter = Callable[[Any, Any], Any]

RESPONSE_REWRITERS: list[ResponseRewriter] = []


def rewrite_response(request: Any, response: Any) -> Any:
    """Apply every registered rewriter in order; the same response when none applies."""
    for rewriter in RESPONSE_REWRITERS:
        response = rewriter(request, response)
    return response
