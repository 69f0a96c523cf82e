"""Bounding a decoded request body (a dict), for SDK hooks that run before serialization."""

from __future__ import annotations

import time
from collections.abc import Mapping
from functools import partial
from typing import Any

from budgetware.core import observe
from budgetware.core.config import BudgetConfig, resolve_config
from budgetware.core.errors import fail_open
from budgetware.core.jsonio import dumps_bytes
from budgetware.core.observe import BatchReport, RequestReport

# The byte path's steps between reading a body and splicing it, shared by the dict path.
from budgetware.wire.body import bound_batches
from budgetware.wire.detect import SNIFF, WireFormat, format_for_url, sniff_format
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
    seen = _Seen()
    error: str | None = None
    out = payload
    try:
        out = _bound(url, payload, effective, seen)
    except Exception as exc:
        error = type(exc).__name__
        fail_open("bound a request payload", config=effective)
    seconds = time.perf_counter() - start
    # Sizes from where bounding had them: the payload's was measured to compare it with
    # the budget; only a payload that changed is measured again (the new, bounded one).
    before = seen.size if seen.size is not None else _size(payload)
    after = before if out is payload else _size(out)
    fmt = seen.fmt
    observe.deliver_request(
        RequestReport(
            api=partial(_api_of_url, url.partition("?")[0], effective)
            if fmt is _UNSEEN
            else _api_name(fmt),
            bytes_before=max(before, 0),
            bytes_after=max(after, 0),
            batch_budget=effective.batch_budget,
            unit=effective.unit,
            seconds=seconds,
            batches=tuple(seen.batches),
            error=error,
            telemetry=effective.telemetry,
            entry="payload",
        )
    )
    return out


_UNSEEN: Any = object()
"""The wire format of a payload ``_bound`` stopped short of looking up."""


class _Seen:
    """What ``_bound`` learns of a payload on its way, for its report."""

    __slots__ = ("batches", "fmt", "size")

    def __init__(self) -> None:
        self.batches: list[BatchReport] = []
        self.fmt: WireFormat | None = _UNSEEN
        self.size: int | None = None


def _api_name(fmt: WireFormat | None) -> str | None:
    return fmt.name if fmt is not None and fmt is not SNIFF else None


def _api_of_url(url: str, config: BudgetConfig) -> str | None:
    """The wire format of ``url`` (given without its query: a key in it, as Gemini's
    ``?key=``, is not kept in the report)."""
    return _api_name(format_for_url(url, config))


def _bound(url: str, payload: dict[str, Any], config: BudgetConfig, seen: _Seen | None) -> Any:
    # As for bodies: every string takes at least as many bytes in the JSON text as it
    # measures, so a payload whose JSON is no longer than the budget holds no batch over it.
    # (orjson writes a few values differently, never a string: the bound holds.)
    size = _size(payload)
    if seen is not None:
        seen.size = size
    if 0 <= size <= config.batch_budget:
        return payload
    fmt = format_for_url(url, config)
    if fmt is SNIFF:
        fmt = sniff_format(payload) or SNIFF
    if seen is not None:
        seen.fmt = fmt
    if fmt is None or fmt is SNIFF:
        return payload
    changes = bound_batches(fmt.batches(payload), config, None if seen is None else seen.batches)
    if not changes:
        return payload
    return with_values(payload, {path: new for path, (_, new) in changes.items()})


def _size(payload: Any) -> int:
    """The payload's size as compact JSON (-1 when it is not JSON: size unknown)."""
    try:
        return len(dumps_bytes(payload))
    except (TypeError, ValueError, RecursionError):
        return -1
