# ruff: noqa: F401  (every import here is a public name, re-exported by budgetware)
"""Every public name, imported: ``budgetware/__init__.py`` loads this module lazily.

Importing ``budgetware`` alone stays cheap (``budgetware run``, the CLI, a ``sitecustomize``
start in milliseconds); the first public name a program touches loads all of them, as one
``import budgetware`` did before. A new public name is imported here and listed in
``budgetware.__all__``.
"""

from budgetware.core.allocate import allocate
from budgetware.core.artifacts import ArtifactNotFound, ArtifactStore, ArtifactStoreError
from budgetware.core.config import BudgetConfig, ConfigError, ToolPolicy, budget
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
from budgetware.mcp import http as _mcp_http  # registers its response rewriter
from budgetware.mcp.bound import McpServerBudget, McpToolPolicy
from budgetware.retrieval.errors import InvalidPattern, InvalidReadArgument, SearchTimeout
from budgetware.retrieval.grep import GrepLine, GrepMatch, grep_artifact
from budgetware.retrieval.read import read_artifact
from budgetware.store.lifecycle import StoreUsage
from budgetware.store.local import LocalArtifactStore
from budgetware.wire.body import finalize_body
from budgetware.wire.payload import bound_payload
