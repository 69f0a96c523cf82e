"""Per-request settings from ``x-budgetware-*`` headers, removed before a request leaves."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from budgetware.core.config import UNIT_NAMES, ConfigError, check_overrides
from budgetware.core.errors import BudgetwareWarning

__all__ = ["REQUEST_HEADER_PREFIX", "header_overrides", "split_headers"]

REQUEST_HEADER_PREFIX = "x-budgetware-"

# The headers that carry a setting, and the setting: their values follow the setting's own
# rules, as in the environment (``inf`` or 0 disables a batch budget).
_SETTING_HEADERS = {"batch-budget": "batch_budget", "unit": "unit"}
_EXPECTED = (
    "expected x-budgetware-batch-budget: <integer, or inf; 0 or less disables>, "
    "x-budgetware-disable: 1, "
    f"x-budgetware-unit: {'|'.join(UNIT_NAMES)}"
)


def _is_truthy(value: str) -> bool | None:
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    return None


@functools.lru_cache(maxsize=256)
def _setting(setting: str, value: str) -> tuple[tuple[str, Any], ...] | None:
    """The validated setting a header value stands for (None if invalid); the same few
    values recur on every request, so each is validated once."""
    try:
        return tuple(check_overrides({setting: value.strip()}).items())
    except ConfigError:
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
        elif setting in _SETTING_HEADERS:
            # A long value is no setting: validated without filling the cache.
            check = _setting if len(value) <= 64 else _setting.__wrapped__
            checked = check(_SETTING_HEADERS[setting], value)
            parsed = None if checked is None else dict(checked)
        if parsed is None:
            message = (
                f"budgetware: ignoring request header {lowered!r}: invalid or unknown value "
                f"{value[:40]!r} ({_EXPECTED})"
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
