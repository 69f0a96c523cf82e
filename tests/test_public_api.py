"""The public surface: the front door, the public modules beside it, each name exported from
exactly one of them (docs/architecture.md, "The public surface")."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import budgetware

ROOT = Path(__file__).resolve().parent.parent

# Every public module and its __all__. A name added to the API is added here, in one place.
PUBLIC: dict[str, set[str]] = {
    "budgetware": {
        "ArtifactNotFound",
        "ArtifactStoreError",
        "AsyncBudgetTransport",
        "BudgetConfig",
        "BudgetTransport",
        "BudgetwareWarning",
        "ConfigError",
        "InvalidPattern",
        "InvalidReadArgument",
        "SearchTimeout",
        "ToolPolicy",
        "__version__",
        "budget",
        "grep_artifact",
        "instrument",
        "is_instrumented",
        "read_artifact",
        "uninstrument",
    },
    "budgetware.finalizer": {
        "ArtifactStore",
        "LocalArtifactStore",
        "StoreUsage",
        "ToolResult",
        "allocate",
        "bound_payload",
        "finalize_batch",
        "finalize_body",
        "fit_text",
        "guard_batch",
        "json_string_bytes",
        "measure",
    },
    "budgetware.types": {"GrepLine", "GrepMatch", "Instrumentation"},
    "budgetware.display": {
        "HeadlessWriter",
        "project_acp_frame",
        "project_acp_update",
        "project_headless_message",
    },
    "budgetware.diagnostics": {"Recorder", "set_recorder"},
    "budgetware.tools": {
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
    },
    "budgetware.testing": {
        "ApiName",
        "FakeProvider",
        "RecordedRequest",
        "Reply",
        "ReplyPolicy",
        "ToolCall",
        "Usage",
        "scripted_tool_calls",
    },
    "budgetware.integrations.acp": {
        "NdjsonStreamTransport",
        "ProjectingTransport",
        "TransportLike",
        "run_agent",
        "stdio_transport",
    },
    "budgetware.integrations.anthropic": {
        "budget_async_http_client",
        "budget_http_client",
        "budget_middleware",
    },
    "budgetware.integrations.google_genai": {"budget_http_options"},
    "budgetware.integrations.litellm": {
        "BudgetCallback",
        "budget_async_http_handler",
        "budget_callback",
        "budget_http_handler",
    },
    "budgetware.integrations.litellm.proxy": {"handler"},
    "budgetware.integrations.mcp": {
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
    },
    "budgetware.integrations.mcp_server": {
        "SERVER_NAME",
        "TOKEN_ENV",
        "build_server",
        "http_app",
        "is_loopback",
        "serve_http",
        "serve_stdio",
        "token_from_env",
    },
    "budgetware.integrations.opentelemetry": {"BudgetwareInstrumentor"},
    "budgetware.integrations.openai": {
        "budget_aiohttp_client",
        "budget_async_http_client",
        "budget_http_client",
    },
    "budgetware.integrations.pytest_plugin": {"BudgetwareCapture", "budgetware_capture"},
    "budgetware.integrations.tools": {
        "aread_tool_output",
        "langchain_tool",
        "openai_agents_tool",
        "pydantic_ai_tool",
        "read_tool_output",
    },
}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_each_public_module_exports_exactly_its_names(name: str) -> None:
    module = importlib.import_module(name)
    assert set(module.__all__) == PUBLIC[name]  # (ruff keeps each __all__ sorted: RUF022)
    for public in module.__all__:
        assert getattr(module, public) is not None


def test_every_public_module_is_listed() -> None:
    """A new public module (an integration, a folder with an ``__all__`` of its own) is
    added to PUBLIC, or is private (under a layer folder, or named with ``_``)."""
    found = {
        f"budgetware.integrations.{path.parent.name}"
        for path in (ROOT / "integrations").glob("*/__init__.py")
    }
    assert found <= set(PUBLIC)


def test_each_object_is_exported_from_one_place() -> None:
    homes: dict[int, list[str]] = {}
    for name in PUBLIC:
        module = importlib.import_module(name)
        for public in module.__all__:
            value = getattr(module, public)
            if isinstance(value, (str, int, float, bytes, tuple, frozenset)):
                continue  # a constant: equal values are not one name exported twice
            homes.setdefault(id(value), []).append(f"{name}.{public}")
    twice = [places for places in homes.values() if len(places) > 1]
    assert not twice, f"exported from more than one place: {twice}"


def test_the_front_door_holds_only_its_names() -> None:
    budgetware.instrument  # noqa: B018  (the first public name loads them all)
    public = {name for name in vars(budgetware) if not name.startswith("_")}
    # Submodules imported as attributes (budgetware.core, ...) are not names of the door.
    modules = {name for name in public if type(getattr(budgetware, name)).__name__ == "module"}
    assert set(budgetware.__all__) - {"__version__"} == public - modules
    assert set(budgetware.__all__) <= set(dir(budgetware))


def _imports(path: Path, *, under_type_checking: bool) -> set[tuple[str, str]]:
    """(module, name) of every ``from module import name`` in ``path`` (only those inside
    ``if TYPE_CHECKING:`` with ``under_type_checking``), private names aside."""
    tree = ast.parse(path.read_text())
    nodes: list[ast.stmt] = tree.body
    if under_type_checking:
        (block,) = (
            node
            for node in tree.body
            if isinstance(node, ast.If)
            and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING"
        )
        nodes = block.body
    return {
        (node.module or "", alias.asname or alias.name)
        for node in nodes
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if not (alias.asname or alias.name).startswith("_")
    }


def test_type_checkers_see_the_names_the_door_loads() -> None:
    """The imports type checkers read (``if TYPE_CHECKING:`` in budgetware/__init__.py) are
    the ones that run on first use (budgetware/_api.py), and both are ``__all__``."""
    static = _imports(ROOT / "budgetware" / "__init__.py", under_type_checking=True)
    loaded = _imports(ROOT / "budgetware" / "_api.py", under_type_checking=False)
    assert static == loaded
    assert {name for _, name in static} == set(budgetware.__all__) - {"__version__"}


def _run(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split("\n")


def test_import_pulls_in_no_sdk_and_no_http_library() -> None:
    code = (
        "import sys, budgetware\n"
        "bad = [m for m in ('httpx', 'httpx2', 'openai', 'anthropic', 'google.genai', 'litellm',"
        " 'mcp', 'acp', 'mistralai', 'ollama', 'cohere', 'aiohttp') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    assert _run(code)[0] == ""


def test_import_alone_loads_no_public_name_no_pydantic_and_no_typing() -> None:
    # `budgetware run` imports budgetware in every Python process it starts: the names load
    # on first use, and typing (about 2 ms) is not imported for the type checkers' sake.
    code = (
        "import sys, budgetware\n"
        "print(sorted(m for m in ('typing', 'pydantic', 'budgetware._api',"
        " 'budgetware.core.config') if m in sys.modules))\n"
        "budgetware.read_artifact\n"
        "print('budgetware._api' in sys.modules)\n"
    )
    assert _run(code)[:2] == ["[]", "True"]


def test_misspelled_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'instrumnet'"):
        budgetware.instrumnet  # type: ignore[attr-defined]  # noqa: B018
    diagnostics = importlib.import_module("budgetware.diagnostics")
    with pytest.raises(AttributeError, match="no attribute 'Recordr'"):
        diagnostics.Recordr  # noqa: B018


def test_the_diagnostics_package_imports_no_pydantic() -> None:
    # `budgetware diagnose` reads a log, and display and MCP report events, without pydantic.
    code = (
        "import sys\n"
        "import budgetware.diagnostics.diagnose\n"
        "print('pydantic' in sys.modules)\n"
        "from budgetware.diagnostics import Recorder, set_recorder\n"
        "from budgetware.diagnostics.recorder import Recorder as Defined\n"
        "print(Recorder is Defined, 'pydantic' in sys.modules)\n"
    )
    assert _run(code)[:2] == ["False", "True False"]
