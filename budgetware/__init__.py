# ruff: noqa: F405  (the public names come from budgetware._api, loaded on first use)
"""budgetware: keep the tool results inside LLM requests within a budget, losing nothing."""

# The public API, one flat namespace; the layers below are private (docs/architecture.md).
# The names are imported from budgetware/_api.py on first use, so that ``import budgetware``
# (the CLI, ``budgetware run``'s start-up hook) costs almost nothing: it imports neither
# ``typing`` nor anything of the layers but two small registries.
import _thread

from budgetware.core import observe as _observe
from budgetware.http import hooks as _hooks

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from budgetware._api import *  # noqa: F403
del TYPE_CHECKING

# The one place the version is written: pyproject.toml reads it when the package is built.
__version__ = "0.1.0"

__all__ = [
    "ArtifactNotFound",
    "ArtifactStore",
    "ArtifactStoreError",
    "AsyncBudgetTransport",
    "BudgetConfig",
    "BudgetTransport",
    "BudgetwareWarning",
    "ConfigError",
    "GrepLine",
    "GrepMatch",
    "HeadlessWriter",
    "Instrumentation",
    "InvalidPattern",
    "InvalidReadArgument",
    "LocalArtifactStore",
    "McpServerBudget",
    "McpToolPolicy",
    "Recorder",
    "SearchTimeout",
    "StoreUsage",
    "ToolPolicy",
    "ToolResult",
    "__version__",
    "allocate",
    "bound_payload",
    "budget",
    "finalize_batch",
    "finalize_body",
    "fit_text",
    "grep_artifact",
    "guard_batch",
    "instrument",
    "is_instrumented",
    "json_string_bytes",
    "measure",
    "project_acp_frame",
    "project_acp_update",
    "project_headless_message",
    "read_artifact",
    "set_recorder",
    "uninstrument",
]


_load_lock = _thread.allocate_lock()


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module 'budgetware' has no attribute {name!r}")
    with _load_lock:
        from budgetware import _api

        namespace = globals()
        for public in __all__:
            if public not in namespace:
                namespace[public] = getattr(_api, public)
    return namespace[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _load_mcp_boundary() -> None:
    from budgetware.mcp import http  # noqa: F401  (registers its response rewriter)


def _enable_telemetry() -> None:
    from budgetware.telemetry import otel

    otel.enable_if_available()


# With opentelemetry-api installed, every request is reported to it (docs/observability.md),
# from the moment the first entry point is set up (instrument(), a transport, bound_payload).
_observe.on_entry_setup(_enable_telemetry)

# Every response the HTTP layer delivers passes the MCP boundary, also for programs that
# reach the transports without touching a public name (budgetware.integrations.*).
_hooks.load_before_first_response(_load_mcp_boundary)
