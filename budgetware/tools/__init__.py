"""``read_tool_output``, the model-facing tool that reads full outputs back: its declaration
for each provider API and its executor (turn on ``preview_tool_hint`` so previews name it).
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
