"""The finalizer as a library: bound tool results you hold yourself (a batch of
``ToolResult``, a request body, a decoded payload) without httpx, and the artifact stores
they persist to."""

from budgetware.core.allocate import allocate
from budgetware.core.artifacts import ArtifactStore
from budgetware.core.finalize import finalize_batch, guard_batch
from budgetware.core.fit import fit_text
from budgetware.core.measure import json_string_bytes, measure
from budgetware.core.models import ToolResult
from budgetware.store.lifecycle import StoreUsage
from budgetware.store.local import LocalArtifactStore
from budgetware.wire.body import finalize_body
from budgetware.wire.payload import bound_payload

__all__ = [
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
]
