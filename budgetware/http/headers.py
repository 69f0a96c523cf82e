"""Per-request settings: ``x-budgetware-*`` headers (removed before a request leaves) and,
spelled ``budgetware_*``, LiteLLM key and team metadata."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from budgetware.core.config import UNIT_NAMES, ConfigError, check_overrides
from budgetware.core.errors import BudgetwareWarning

__all__ = [
    "METADATA_PREFIX",
    "OVERRIDES_EXTENSION",
    "REQUEST_HEADER_PREFIX",
    "header_overrides",
    "metadata_overrides",
    "request_settings",
    "split_headers",
]

REQUEST_HEADER_PREFIX = "x-budgetware-"
METADATA_PREFIX = "budgetware_"
# Where a request rebuilt without its x-budgetware-* headers keeps their settings, for the
# response side (the MCP boundary).
OVERRIDES_EXTENSION = "budgetware.overrides"

# What one request may set: the budgets and their unit, never where artifacts go (behind a
# gateway, clients send these). ``disable`` turns every budget off.
_SETTINGS = (
    "batch_budget",
    "mcp_result_budget",
    "unit",
    "history_budget",
    "history_keep_batches",
    "history_step",
)
_DISABLE = "disable"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def _expected(spell: Callable[[str], str]) -> str:
    return (
        f"expected {spell('batch_budget')}: <integer, or inf; 0 or less disables>, "
        f"{spell('mcp_result_budget')}: <integer>, {spell(_DISABLE)}: 1, "
        f"{spell('unit')}: {'|'.join(UNIT_NAMES)}, {spell('history_budget')}: <integer, or "
        f"auto; 0 or less disables>, {spell('history_keep_batches')}: <integer, at least 1>, "
        f"{spell('history_step')}: <number between 0 and 1>"
    )


def _flag(value: object) -> bool | None:
    if isinstance(value, str):
        word = value.strip().lower()
        return True if word in _TRUE else False if word in _FALSE else None
    return value if isinstance(value, bool) else None


def _overrides(
    entries: Mapping[Any, Any],
    *,
    prefix: str,
    separator: str,
    where: str,
    warn: Callable[[str], None] | None,
) -> dict[str, Any]:
    """The settings among ``entries`` whose name is ``prefix`` + a setting (spelled with
    ``separator``); an invalid one is left out with a warning naming it."""
    overrides: dict[str, Any] = {}
    disable = False
    for name, value in entries.items():
        if not isinstance(name, str) or not name.lower().startswith(prefix):
            continue
        lowered = name.lower()
        setting = lowered[len(prefix) :].replace(separator, "_")
        parsed: dict[str, Any] | None = None
        if setting == _DISABLE:
            flag = _flag(value)
            if flag is not None:
                disable = disable or flag
                parsed = {}
        elif setting in _SETTINGS:
            with contextlib.suppress(ConfigError):
                parsed = check_overrides({setting: value})
        if parsed is None:
            expected = _expected(lambda s: prefix + s.replace("_", separator))
            message = (
                f"budgetware: ignoring {where} {lowered!r}: invalid or unknown value "
                f"{str(value)[:40]!r} ({expected})"
            )
            if warn is None:
                warnings.warn(message, BudgetwareWarning, stacklevel=3)
            else:
                warn(message)
            continue
        overrides.update(parsed)
    if disable:  # an explicit off switch wins over a budget beside it
        overrides.update(batch_budget=0, mcp_result_budget=0, history_budget=None)
    return overrides


def header_overrides(
    headers: Mapping[str, str], *, warn: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Settings from ``x-budgetware-*`` headers; an invalid one is ignored with a
    ``BudgetwareWarning`` (or ``warn(message)``)."""
    return _overrides(
        headers, prefix=REQUEST_HEADER_PREFIX, separator="-", where="request header", warn=warn
    )


def metadata_overrides(
    metadata: object, where: str, *, warn: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Settings from the ``budgetware_*`` entries of LiteLLM key or team metadata (``where``
    names which in a warning), by the rules of the headers."""
    if not isinstance(metadata, Mapping):
        return {}
    return _overrides(metadata, prefix=METADATA_PREFIX, separator="_", where=where, warn=warn)


def request_settings(request: Any) -> Mapping[str, Any]:
    """The settings a request's ``x-budgetware-*`` headers carry (kept in its extensions
    once budgetware removed them)."""
    try:
        carried = request.extensions.get(OVERRIDES_EXTENSION)
        if carried is not None:
            return carried  # type: ignore[no-any-return]
        headers = request.headers
    except AttributeError:  # not an httpx or httpx2 request
        return {}
    return header_overrides(headers)


def split_headers(headers: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(settings from x-budgetware-* headers, the other headers)``."""
    own = {k: v for k, v in headers.items() if k.lower().startswith(REQUEST_HEADER_PREFIX)}
    rest = {k: v for k, v in headers.items() if k not in own}
    strings = {k: v for k, v in own.items() if isinstance(v, str)}
    return header_overrides(strings), rest
