"""MCP integration: bound tool results where they enter the agent (the producer boundary).

Three ways in, all bounding ``tools/call`` results the same way (``McpBudget``):

- ``budgetware.instrument()``: every httpx2 client in the process, so the streamable HTTP
  transport of any ``mcp`` client, with the process-wide budget (``configure``);
- ``budget_http_client()``: one ``streamable_http_client(url, http_client=...)``;
- ``BoundedTransport(transport)`` / ``bound_streams(read, write)``: any transport, stdio
  included, at the message level.

``mcp`` and ``httpx2`` are imported only when used (``pip install "budgetware[mcp]"``).
"""

from __future__ import annotations

from budgetware.mcp.bound import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_RESULT_BUDGET,
    META_ARTIFACTS,
    BoundResult,
    McpBudget,
    McpServerBudget,
    McpToolPolicy,
    bound_tool_result,
)
from budgetware.mcp.http import configure_mcp as configure
from budgetware.mcp.http import current_mcp_budget, rewrite_mcp_response

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
    "McpBudget",
    "McpServerBudget",
    "McpToolPolicy",
    "bound_streams",
    "bound_tool_result",
    "budget_http_client",
    "configure",
    "current_mcp_budget",
    "rewrite_mcp_response",
]
