# ruff: noqa: F401  (every import here is a name of the front door, re-exported by budgetware)
"""The front door's names, loaded by ``budgetware/__init__.py`` on first use; a name added
here goes into ``budgetware.__all__`` and its ``TYPE_CHECKING`` imports too (a test checks)."""

from budgetware.core.artifacts import ArtifactNotFound, ArtifactStoreError
from budgetware.core.config import BudgetConfig, ConfigError, ToolPolicy, budget
from budgetware.core.errors import BudgetwareWarning
from budgetware.http.instrument import instrument, is_instrumented, uninstrument
from budgetware.http.transport import AsyncBudgetTransport, BudgetTransport
from budgetware.retrieval.errors import InvalidPattern, InvalidReadArgument, SearchTimeout
from budgetware.retrieval.grep import grep_artifact
from budgetware.retrieval.read import read_artifact
