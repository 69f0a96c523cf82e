"""The ``BudgetCallback`` instance that a LiteLLM Proxy config names in its callbacks."""

from __future__ import annotations

from ._callback import BudgetCallback

__all__ = ["handler"]

# Settings: the proxy's environment, then key and team metadata, then request headers.
handler = BudgetCallback()
