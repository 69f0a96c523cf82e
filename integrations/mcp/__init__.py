"""MCP integration: bound tool results where they enter the agent (the producer boundary).

Three ways in, all bounding ``tools/call`` results the same way (the ``mcp_*`` settings of
``BudgetConfig``):

- ``budgetware.instrument()``: every httpx2 client in the process, so the streamable HTTP
  transport of any ``mcp`` client, with the process-wide settings;
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
