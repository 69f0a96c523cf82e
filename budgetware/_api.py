# ruff: noqa: F401  (every import here is a name of the front door, re-exported by budgetware)
"""The front door's names, imported: ``budgetware/__init__.py`` loads this module on first use.

The first public name a program touches loads all of them (and the MCP boundary's
response rewriter). A name added here is added to ``budgetware.__all__`` and to the
``TYPE_CHECKING`` imports there; tests/test_public_api.py holds the three together.
"""

from budgetware.core.artifacts import ArtifactNotFound, ArtifactStoreError
from budgetware.core.config import BudgetConfig, ConfigError, ToolPolicy, budget
from budgetware.core.errors import BudgetwareWarning
from budgetware.http.instrument import instrument, is_instrumented, uninstrument
from budgetware.http.transport import AsyncBudgetTransport, BudgetTransport
from budgetware.mcp import http as _mcp_http  # registers its response rewriter
from budgetware.retrieval.errors import InvalidPattern, InvalidReadArgument, SearchTimeout
from budgetware.retrieval.grep import grep_artifact
from budgetware.retrieval.read import read_artifact
