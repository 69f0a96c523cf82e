"""OpenTelemetry's own runner turns budgetware on: ``opentelemetry-instrument python agent.py``
loads ``BudgetwareInstrumentor`` (entry point ``budgetware`` of the
``opentelemetry_instrumentor`` group), which calls ``instrument()`` (docs/observability.md)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from budgetware.http.instrument import instrument, uninstrument

try:
    # Its module is marked ``# type: ignore`` as a whole: its names are Any to mypy.
    from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
        BaseInstrumentor,
    )
except ImportError as exc:
    raise ImportError(
        "BudgetwareInstrumentor needs opentelemetry-instrumentation (it provides "
        "opentelemetry-instrument): pip install opentelemetry-instrumentation"
    ) from exc

__all__ = ["BudgetwareInstrumentor"]


class BudgetwareInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """OpenTelemetry's instrumentor interface over ``instrument()``: ``instrument(config=...)``
    takes an optional ``BudgetConfig``; ``uninstrument()`` takes budgetware off."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return ()  # httpx and httpx2 are patched when they are imported, whichever it is

    def _instrument(self, **kwargs: Any) -> None:
        instrument(config=kwargs.get("config"))

    def _uninstrument(self, **kwargs: Any) -> None:
        uninstrument()
