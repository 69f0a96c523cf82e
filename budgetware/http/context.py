"""Who bounded a request already: the context flag an SDK-level hook sets for the HTTP layer."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["bounded_above", "upper_layer_bounded"]

# True while an SDK-level hook sends a request it has bounded.
_BOUNDED_ABOVE: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "budgetware_bounded_above", default=False
)


def bounded_above() -> bool:
    """Whether the request being sent was already bounded by an SDK-level hook."""
    return _BOUNDED_ABOVE.get()


@contextmanager
def upper_layer_bounded() -> Iterator[None]:
    """Mark the requests sent inside the block as bounded (the HTTP layer skips them)."""
    token = _BOUNDED_ABOVE.set(True)
    try:
        yield
    finally:
        _BOUNDED_ABOVE.reset(token)
