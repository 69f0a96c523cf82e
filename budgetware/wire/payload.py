"""Bounding a decoded request body (a dict), for SDK hooks that run before serialization."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from budgetware.core import observe
from budgetware.core.artifacts import digest_scope
from budgetware.core.config import BudgetConfig, resolve_config
from budgetware.core.errors import fail_open
from budgetware.core.jsonio import dumps_bytes
from budgetware.core.observe import BatchReport, RequestReport

# The byte path's steps between reading a body and splicing it, shared by the dict path.
from budgetware.wire.body import bound_batches
from budgetware.wire.detect import SNIFF, format_for_url, sniff_format
from budgetware.wire.splice import with_values

__all__ = ["bound_payload"]


def bound_payload(
    url: str,
    payload: Any,
    *,
    config: BudgetConfig | None = None,
    request_overrides: Mapping[str, Any] | None = None,
) -> Any:
    """``payload`` itself when nothing changes, else a new payload with bounded tool results.

    ``url`` (or just its path, like ``/v1/messages``) picks the wire format. ``config``
    is resolved like the transports' (environment < config < budget() < overrides).
    The payload is never serialized: the new one shares every object outside the changed
    tool results with ``payload`` (which is left as it was), so every other value stays
    exactly as given. While something watches requests, its report is delivered at once
    (the caller's span is current: no HTTP request exists yet).
    """
    observe.entry_setup()  # the first entry point turns the observers on (OpenTelemetry)
    if not isinstance(payload, dict):
        return payload
    # A setting that turned bad since setup is left out (logged once): never a broken call.
    effective = resolve_config(config, request_overrides=request_overrides, lenient=True)
    if not effective.enabled:
        return payload
    if not observe.watching():
        try:
            return _bound(url, payload, effective, None)
        except Exception:
            fail_open("bound a request payload", config=effective)
            return payload
    start = time.perf_counter()
    batches: list[BatchReport] = []
    error: str | None = None
    out = payload
    try:
        out = _bound(url, payload, effective, batches)
    except Exception as exc:
        error = type(exc).__name__
        fail_open("bound a request payload", config=effective)
    seconds = time.perf_counter() - start
    fmt = format_for_url(url, effective)
    observe.deliver_request(
        RequestReport(
            api=fmt.name if fmt is not None and fmt is not SNIFF else None,
            bytes_before=max(_size(payload), 0),
            bytes_after=max(_size(out), 0),
            batch_budget=effective.batch_budget,
            unit=effective.unit,
            seconds=seconds,
            batches=tuple(batches),
            error=error,
            telemetry=effective.telemetry,
            entry="payload",
        )
    )
    return out


def _bound(
    url: str, payload: dict[str, Any], config: BudgetConfig, reports: list[BatchReport] | None
) -> Any:
    # As for bodies: every string takes at least as many bytes in the JSON text as it
    # measures, so a payload whose JSON is no longer than the budget holds no batch over it.
    # (orjson writes a few values differently, never a string: the bound holds.)
    if 0 <= _size(payload) <= config.batch_budget:
        return payload
    fmt = format_for_url(url, config)
    if fmt is SNIFF:
        fmt = sniff_format(payload)
    if fmt is None:
        return payload
    with digest_scope():  # the digests of this payload's strings, forgotten with them
        changes = bound_batches(fmt.batches(payload), config, reports)
    if not changes:
        return payload
    return with_values(payload, {path: new for path, (_, new) in changes.items()})


def _size(payload: Any) -> int:
    """The payload's size as compact JSON (-1 when it is not JSON: size unknown)."""
    try:
        return len(dumps_bytes(payload))
    except (TypeError, ValueError, RecursionError):
        return -1
