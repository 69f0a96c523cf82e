"""budgetware: keep the tool results inside LLM requests within a budget, losing nothing."""

from budgetware._allocate import allocate
from budgetware._body import finalize_body
from budgetware._config import BudgetConfig, ConfigError, budget
from budgetware._finalize import finalize_batch, guard_batch
from budgetware._fit import fit_text
from budgetware._measure import json_string_bytes, measure
from budgetware._models import ToolResult
from budgetware._store import ArtifactStore, ArtifactStoreError, LocalArtifactStore

__version__ = "0.1.0"

__all__ = [
    "ArtifactStore",
    "ArtifactStoreError",
    "BudgetConfig",
    "ConfigError",
    "LocalArtifactStore",
    "ToolResult",
    "__version__",
    "allocate",
    "budget",
    "finalize_batch",
    "finalize_body",
    "fit_text",
    "guard_batch",
    "json_string_bytes",
    "measure",
]
