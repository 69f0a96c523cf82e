"""``read_tool_output`` as a ready-made tool for the OpenAI Agents SDK, LangChain / LangGraph,
pydantic-ai, and as a plain typed function any other framework can wrap.

Every tool runs the same executor, so a mistake reaches the model as one ``error:`` line,
never an exception in the agent loop. Each framework is imported only when its tool is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from budgetware.core.config import BudgetConfig
from budgetware.store.base import ContentStore
from budgetware.tools import (
    DEFAULT_LIMIT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    arun_read_tool_output,
    read_tool_output_parameters,
    run_read_tool_output,
)

if TYPE_CHECKING:
    from agents import FunctionTool
    from langchain_core.tools import StructuredTool
    from pydantic_ai import Tool

__all__ = [
    "aread_tool_output",
    "langchain_tool",
    "openai_agents_tool",
    "pydantic_ai_tool",
    "read_tool_output",
]


def read_tool_output(
    ref: str,
    offset: int = 0,
    limit: int = DEFAULT_LIMIT,
    pattern: str | None = None,
    context: int = 0,
) -> str:
    """Read the full output of a tool result that was truncated.

    A truncated result starts with a line like
    '[Tool output truncated: ... Full output: <ref>]': pass that <ref>. Without pattern,
    returns `limit` characters from character `offset`; the answer's first line says which
    and where to page on. With pattern (a regular expression; escape . ( [ to match them
    literally), returns the matching lines as 'line:offset: text', with `context` lines
    around each.

    Args:
        ref: The reference after 'Full output:' in the truncated result.
        offset: The character to start reading at (0: the beginning).
        limit: How many characters to return (at most 100,000).
        pattern: A regular expression: return the matching lines instead of a window.
        context: With pattern, lines to show before and after each match (at most 10).
    """
    return run_read_tool_output(
        {"ref": ref, "offset": offset, "limit": limit, "pattern": pattern, "context": context}
    )


async def aread_tool_output(
    ref: str,
    offset: int = 0,
    limit: int = DEFAULT_LIMIT,
    pattern: str | None = None,
    context: int = 0,
) -> str:
    """The same as ``read_tool_output``, for event loops (the read runs in a thread)."""
    return await arun_read_tool_output(
        {"ref": ref, "offset": offset, "limit": limit, "pattern": pattern, "context": context}
    )


# Frameworks name a tool after its function: the name previews give the model.
aread_tool_output.__doc__ = read_tool_output.__doc__
aread_tool_output.__name__ = aread_tool_output.__qualname__ = TOOL_NAME


def _require(module: str, extra: str) -> None:
    try:
        __import__(module)
    except ImportError as exc:
        raise ImportError(
            f'the {extra} tool needs {module}: pip install "budgetware[{extra}]"'
        ) from exc


def openai_agents_tool(
    *, store: ContentStore | None = None, config: BudgetConfig | None = None
) -> FunctionTool:
    """``read_tool_output`` as an OpenAI Agents SDK ``FunctionTool``:
    ``Agent(..., tools=[openai_agents_tool()])``."""
    _require("agents", "openai-agents")
    from agents import FunctionTool

    async def invoke(context: Any, arguments: str) -> str:
        return await arun_read_tool_output(arguments, store=store, config=config)

    return FunctionTool(
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
        params_json_schema=read_tool_output_parameters(),
        on_invoke_tool=invoke,
        # Optional parameters: strict mode would make every one of them required.
        strict_json_schema=False,
    )


def langchain_tool(
    *, store: ContentStore | None = None, config: BudgetConfig | None = None
) -> StructuredTool:
    """``read_tool_output`` as a LangChain ``StructuredTool`` (LangGraph's ``ToolNode`` and
    ``create_react_agent`` take it): ``model.bind_tools([langchain_tool()])``."""
    _require("langchain_core", "langchain")
    from langchain_core.tools import StructuredTool

    def run(**arguments: Any) -> str:
        return run_read_tool_output(arguments, store=store, config=config)

    async def arun(**arguments: Any) -> str:
        return await arun_read_tool_output(arguments, store=store, config=config)

    return StructuredTool(
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
        # A JSON Schema, not a model: the executor checks the arguments and answers a
        # mistake with one line, where a model would raise a validation error first.
        args_schema=read_tool_output_parameters(),
        func=run,
        coroutine=arun,
    )


def pydantic_ai_tool(
    *, store: ContentStore | None = None, config: BudgetConfig | None = None
) -> Tool[Any]:
    """``read_tool_output`` as a pydantic-ai ``Tool``:
    ``Agent(..., tools=[pydantic_ai_tool()])``."""
    _require("pydantic_ai", "pydantic-ai")
    from pydantic_ai import Tool

    async def run(**arguments: Any) -> str:
        return await arun_read_tool_output(arguments, store=store, config=config)

    tool: Tool[Any] = Tool.from_schema(
        run,
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
        json_schema=read_tool_output_parameters(),
        takes_ctx=False,
    )
    return tool
