"""budgetware: keep the tool results inside LLM requests within a budget, losing nothing."""

# The public API, one flat namespace; the layers below are private (docs/architecture.md).
from budgetware.core.allocate import allocate
from budgetware.core.artifacts import ArtifactStore, ArtifactStoreError
from budgetware.core.config import BudgetConfig, ConfigError, budget
from budgetware.core.errors import BudgetwareWarning
from budgetware.core.finalize import finalize_batch, guard_batch
from budgetware.core.fit import fit_text
from budgetware.core.measure import json_string_bytes, measure
from budgetware.core.models import ToolResult
from budgetware.diagnostics.recorder import Recorder, set_recorder
from budgetware.display.headless import HeadlessWriter
from budgetware.display.projection import (
    project_acp_frame,
    project_acp_update,
    project_headless_message,
)
from budgetware.http.instrument import Instrumentation, instrument, is_instrumented, uninstrument
from budgetware.http.transport import AsyncBudgetTransport, BudgetTransport
from budgetware.mcp import http as _mcp_http  # noqa: F401  (registers its response rewriter)
from budgetware.mcp.bound import McpBudget, McpServerBudget
from budgetware.store.lifecycle import StoreUsage
from budgetware.store.local import LocalArtifactStore
from budgetware.wire.body import finalize_body
from budgetware.wire.payload import bound_payload

# The one place the version is written: pyproject.toml reads it when the package is built.
__version__ = "0.1.0"

__all__ = [
    "ArtifactStore",
    "ArtifactStoreError",
    "AsyncBudgetTransport",
    "BudgetConfig",
    "BudgetTransport",
    "BudgetwareWarning",
    "ConfigError",
    "HeadlessWriter",
    "Instrumentation",
    "LocalArtifactStore",
    "McpBudget",
    "McpServerBudget",
    "Recorder",
    "StoreUsage",
    "ToolResult",
    "__version__",
    "allocate",
    "bound_payload",
    "budget",
    "finalize_batch",
    "finalize_body",
    "fit_text",
    "guard_batch",
    "instrument",
    "is_instrumented",
    "json_string_bytes",
    "measure",
    "project_acp_frame",
    "project_acp_update",
    "project_headless_message",
    "set_recorder",
    "uninstrument",
]
