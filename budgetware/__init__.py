"""budgetware: keep the tool results inside LLM requests within a budget, losing nothing."""

# The front door's names load on first use (budgetware/_api.py): ``import budgetware``
# (every process under ``budgetware run``) imports neither ``typing`` nor pydantic. Type
# checkers take any name ``TYPE_CHECKING`` as true and read the imports below.
import _thread

from budgetware.core import observe as _observe
from budgetware.http import hooks as _hooks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from budgetware.core.artifacts import ArtifactNotFound, ArtifactStoreError
    from budgetware.core.config import BudgetConfig, ConfigError, ToolPolicy, budget
    from budgetware.core.errors import BudgetwareWarning
    from budgetware.http.instrument import instrument, is_instrumented, uninstrument
    from budgetware.http.transport import AsyncBudgetTransport, BudgetTransport
    from budgetware.retrieval.errors import InvalidPattern, InvalidReadArgument, SearchTimeout
    from budgetware.retrieval.grep import grep_artifact
    from budgetware.retrieval.read import read_artifact

__version__ = "0.1.0"

__all__ = [
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
]


_load_lock = _thread.allocate_lock()

if not TYPE_CHECKING:  # hidden from type checkers: a misspelled name stays an error

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


del TYPE_CHECKING


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _load_mcp_boundary() -> None:
    from budgetware.mcp import http  # noqa: F401  (registers its response rewriter)


def _enable_telemetry(config: "BudgetConfig | None") -> None:
    from budgetware.telemetry import otel

    otel.enable_if_available()


def _start_session_log(config: "BudgetConfig | None") -> None:
    import os

    asked = ("BUDGETWARE_SESSION_LOG", "BUDGETWARE_RUN_SESSION")
    if config is None and not any(os.environ.get(name) for name in asked):
        return  # nothing asks for it

    def first(report: "_observe.RequestReport") -> None:
        # Decided at the first request report: the settings model is loaded by then, and
        # `budgetware run`'s start-up hook stays cheap.
        subscription.close()
        from budgetware.diagnostics import sessionlog

        if sessionlog.start_if_asked(config):
            sessionlog.log_request(report)

    subscription = _observe.subscribe(request=first)


# With opentelemetry-api installed, requests are reported to it from the first entry point;
# the session log starts there when a setting or `budgetware run` asks for it.
_observe.on_entry_setup(_enable_telemetry)
_observe.on_entry_setup(_start_session_log)

# Every response passes the MCP boundary, also when no public name was touched.
_hooks.load_before_first_response(_load_mcp_boundary)
