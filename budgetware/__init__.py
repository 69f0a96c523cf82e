"""budgetware: keep the tool results inside LLM requests within a budget, losing nothing."""

from budgetware._allocate import allocate
from budgetware._body import finalize_body
from budgetware._config import BudgetConfig, ConfigError, budget
from budgetware._finalize import finalize_batch, guard_batch
from budgetware._fit import fit_text
from budgetware._headless import HeadlessWriter
from budgetware._instrument import Instrumentation, instrument, is_instrumented, uninstrument
from budgetware._mcp_bound import McpBudget, McpServerBudget
from budgetware._measure import json_string_bytes, measure
from budgetware._models import ToolResult
from budgetware._payload import bound_payload
from budgetware._projection import project_acp_frame, project_acp_update, project_headless_message
from budgetware._recorder import Recorder, set_recorder
from budgetware._store import ArtifactStore, ArtifactStoreError, LocalArtifactStore, StoreUsage
from budgetware._transport import AsyncBudgetTransport, BudgetTransport, BudgetwareWarning

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
