"""The one policy for internal errors (raise under the test suite, else log and fail open),
and the warning budgetware gives when it cannot do something for a request."""

from __future__ import annotations

import logging
import sys

# BudgetwareWarning is defined beside the settings, whose budget() blocks warn too.
from budgetware.core.config import BudgetConfig, BudgetwareWarning, ConfigError, resolve_config

__all__ = ["BudgetwareWarning", "fail_open"]

logger = logging.getLogger("budgetware")


def _raise_errors(config: BudgetConfig | None) -> bool:
    if config is not None:
        return config.raise_errors
    try:
        return resolve_config().raise_errors
    except ConfigError:
        return False


def fail_open(what: str, *, config: BudgetConfig | None = None) -> None:
    """Call from an ``except`` block: re-raise when errors must raise, else log the error's
    type only (its message could quote tool output or prompts)."""
    if _raise_errors(config):
        raise
    exc = sys.exc_info()[1]
    name = type(exc).__name__ if exc is not None else "unknown error"
    logger.error("budgetware could not %s (%s); it goes out unchanged", what, name)
