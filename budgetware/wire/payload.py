"""Bounding a decoded request body (a dict), for SDK hooks that run before serialization."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from budgetware.core import observe
from budgetware.core.config import BudgetConfig, resolve_config
from budgetware.core.errors import fail_open
from budgetware.core.jsonio import dumps_bytes
from budgetware.wire.body import _Seen, bound_batches, read_threshold
from budgetware.wire.detect import SNIFF, format_for_url, sniff_format
from budgetware.wire.splice import with_values

__all__ = ["bound_payload", "bound_payload_reported"]


def bound_payload(
    url: str,
    payload: Any,
    *,
    config: BudgetConfig | None = None,
    request_overrides: Mapping[str, Any] | None = None,
) -> Any:
    """``payload`` itself when nothing changes, else a new payload with bounded tool results.

    ``url`` (or just its path, like ``/v1/messages``) picks the wire format. ``config``
    is resolved like the transports' (environment < config < budget() < overrides). The
    new payload shares every object outside the changed tool results with ``payload``,
    which is left as it was.
    """
    return bound_payload_reported(
        url, payload, config=config, request_overrides=request_overrides
    )[0]


def bound_payload_reported(
    url: str,
    payload: Any,
    *,
    config: BudgetConfig | None = None,
    request_overrides: Mapping[str, Any] | None = None,
) -> tuple[Any, observe.RequestReport | None]:
    """``bound_payload``, and the report it delivered (None while nothing watches), for an
    entry point that links the response's usage to it (the LiteLLM callback)."""
    observe.entry_setup(config)
    if not isinstance(payload, dict):
        return payload, None
    effective = resolve_config(config, request_overrides=request_overrides, lenient=True)
    if not effective.enabled:
        return payload, None
    start = time.perf_counter()
    seen = _Seen() if observe.watching() else None
    error: str | None = None
    out = payload
    try:
        out = _bound(url, payload, effective, seen)
    except Exception as exc:
        error = type(exc).__name__
        fail_open("bound a request payload", config=effective)
    if seen is None:
        return out, None
    seconds = time.perf_counter() - start
    before = seen.size if seen.size is not None else _size(payload)
    after = before if out is payload else _size(out)
    report = seen.report(url, effective, max(before, 0), max(after, 0), seconds, error, "payload")
    observe.deliver_request(report)  # now: the caller's span is current
    return out, report


def _bound(url: str, payload: dict[str, Any], config: BudgetConfig, seen: _Seen | None) -> Any:
    # As for bodies: a payload whose JSON is within the budget holds no batch over it.
    size = _size(payload)
    if seen is not None:
        seen.size = size
    threshold = read_threshold(config)
    if threshold is None or 0 <= size <= threshold:
        return payload
    fmt = format_for_url(url, config)
    if fmt is SNIFF:
        fmt = sniff_format(payload) or SNIFF
    if seen is not None:
        seen.fmt = fmt
    if fmt is None or fmt is SNIFF:
        return payload
    changes = bound_batches(fmt.batches(payload), config, seen, url=url, body=payload)
    if not changes:
        return payload
    return with_values(payload, {path: new for path, (_, new) in changes.items()})


def _size(payload: Any) -> int:
    """The payload's size as compact JSON (-1 when it is not JSON: size unknown)."""
    try:
        return len(dumps_bytes(payload))
    except (TypeError, ValueError, RecursionError):
        return -1
