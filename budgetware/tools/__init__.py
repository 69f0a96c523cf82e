"""The model-facing tool that reads full outputs back, ``read_tool_output``: its
declaration for each provider API and its executor. Public API (``budgetware.tools``).

Give the tool to the model, run its calls with ``run_read_tool_output``, and turn on
``preview_tool_hint`` so previews name it. Framework tools built on it are in
``budgetware.integrations.tools``; ``budgetware mcp-server`` serves it over MCP.
"""

from budgetware.tools.read_tool_output import (
    DEFAULT_LIMIT,
    MAX_CONTEXT,
    MAX_LIMIT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    ToolApi,
    arun_read_tool_output,
    read_tool_output_parameters,
    read_tool_output_schema,
    run_read_tool_output,
)

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_CONTEXT",
    "MAX_LIMIT",
    "TOOL_DESCRIPTION",
    "TOOL_NAME",
    "ToolApi",
    "arun_read_tool_output",
    "read_tool_output_parameters",
    "read_tool_output_schema",
    "run_read_tool_output",
]
