"""The core's one seam for observers: the finalizer and the guard report each batch here.

The core imports nothing above it, so boundary diagnostics (``budgetware.diagnostics``)
subscribe by setting ``batch_observer`` while they are on. Off, the cost at a boundary is
one attribute read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from budgetware.core.models import ToolResult

__all__ = ["BatchObserver", "batch_observer"]

BatchObserver = Callable[[str, Sequence[ToolResult], Sequence[ToolResult]], None]
"""``(boundary, entries before, entries after)``: ``boundary`` is ``finalizer`` or ``guard``.

It must never raise and never change a value."""

batch_observer: BatchObserver | None = None
