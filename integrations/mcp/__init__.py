"""MCP integration: bound ``tools/call`` results where they enter the agent (docs/mcp.md).

``budget_http_client()`` for one streamable HTTP client (``instrument()`` covers them all),
``BoundedTransport`` / ``bound_streams`` for any transport, stdio included. ``mcp`` and
``httpx2`` are imported only when used.
"""

from __future__ import annotations

from budgetware.mcp.bound import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_RESULT_BUDGET,
    META_ARTIFACTS,
    BoundResult,
    McpServerBudget,
    McpToolPolicy,
    bound_tool_result,
)
from budgetware.mcp.http import rewrite_mcp_response

from ._client import (
    BoundedTransport,
    McpBoundTransport,
    bound_streams,
    budget_http_client,
)

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_RESULT_BUDGET",
    "META_ARTIFACTS",
    "BoundResult",
    "BoundedTransport",
    "McpBoundTransport",
    "McpServerBudget",
    "McpToolPolicy",
    "bound_streams",
    "bound_tool_result",
    "budget_http_client",
    "rewrite_mcp_response",
]
