"""The classes of what the front door returns, for annotations: ``Instrumentation``
(``instrument()``), ``GrepMatch`` and ``GrepLine`` (``grep_artifact()``)."""

from budgetware.http.instrument import Instrumentation
from budgetware.retrieval.grep import GrepLine, GrepMatch

__all__ = ["GrepLine", "GrepMatch", "Instrumentation"]
