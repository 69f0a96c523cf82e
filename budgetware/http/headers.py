"""Per-request settings from ``x-budgetware-*`` headers, removed before a request leaves."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from budgetware.core.config import ConfigError, check_overrides
from budgetware.core.errors import BudgetwareWarning

__all__ = ["REQUEST_HEADER_PREFIX", "header_overrides", "split_headers"]

REQUEST_HEADER_PREFIX = "x-budgetware-"


def _is_truthy(value: str) -> bool | None:
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    return None


def header_overrides(
    headers: Mapping[str, str], *, warn: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Settings from ``x-budgetware-*`` headers; an invalid one is ignored with a warning
    (a ``BudgetwareWarning``, or ``warn(message)`` where warnings go unseen)."""
    overrides: dict[str, Any] = {}
    for name, value in headers.items():
        lowered = name.lower()
        if not lowered.startswith(REQUEST_HEADER_PREFIX):
            continue
        setting = lowered[len(REQUEST_HEADER_PREFIX) :]
        parsed: dict[str, Any] | None = None
        if setting == "disable":
            flag = _is_truthy(value)
            parsed = None if flag is None else ({"batch_budget": 0} if flag else {})
        elif setting == "batch-budget":
            try:
                parsed = {"batch_budget": int(value.strip())}
            except ValueError:
                parsed = None
        elif setting == "unit":
            try:
                parsed = check_overrides({"unit": value.strip()})
            except ConfigError:
                parsed = None
        if parsed is None:
            message = (
                f"budgetware: ignoring request header {lowered!r}: invalid or unknown value "
                f"{value[:40]!r} (expected x-budgetware-batch-budget: <int>, "
                "x-budgetware-disable: 1, x-budgetware-unit: chars|utf8_bytes|tokens)"
            )
            if warn is None:
                warnings.warn(message, BudgetwareWarning, stacklevel=2)
            else:
                warn(message)
            continue
        overrides.update(parsed)
    return overrides


def split_headers(headers: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(settings from x-budgetware-* headers, the other headers)``."""
    own = {k: v for k, v in headers.items() if k.lower().startswith(REQUEST_HEADER_PREFIX)}
    rest = {k: v for k, v in headers.items() if k not in own}
    strings = {k: v for k, v in own.items() if isinstance(v, str)}
    return header_overrides(strings), rest
