"""Bounding a decoded request body (a dict), for SDK hooks that run before serialization."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from budgetware.core import observe
from budgetware.core.config import BudgetConfig, resolve_config
from budgetware.core.errors import fail_open
from budgetware.core.jsonio import dumps_faithful, loads
from budgetware.wire.body import finalize_body, observed_finalize_body

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
    While something watches requests, its report is delivered at once (the caller's span
    is current: no HTTP request exists yet).
    """
    if not isinstance(payload, dict):
        return payload
    # A setting that turned bad since setup is left out (logged once): never a broken call.
    effective = resolve_config(config, request_overrides=request_overrides, lenient=True)
    if not effective.enabled:
        return payload
    try:
        # Written as the standard library would (NaN, Infinity, big integers) so that
        # reading it back gives every value outside the tool results as it was.
        body = dumps_faithful(payload)
        if observe.watching():
            new_body, report = observed_finalize_body(url, body, config=effective, entry="payload")
            observe.deliver_request(report)
        else:
            new_body = finalize_body(url, body, config=effective)
        return payload if new_body is body else loads(new_body)
    except Exception:
        fail_open("bound a request payload", config=effective)
        return payload
