"""The ``BudgetCallback`` instance that a LiteLLM Proxy config names in its callbacks."""

from __future__ import annotations

from ._callback import BudgetCallback

__all__ = ["handler"]

# Settings come from the proxy's environment (BUDGETWARE_BATCH_BUDGET, ...), then from key
# and team metadata, then from each request's x-budgetware-* headers.
handler = BudgetCallback()
