"""Bounding a decoded request body (a dict), for SDK hooks that run before serialization."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from budgetware._body import finalize_body
from budgetware._config import BudgetConfig, resolve_config
from budgetware._errors import fail_open
from budgetware._json import dumps_bytes, loads
from budgetware._transport import REQUEST_HEADER_PREFIX, header_overrides

__all__ = ["bound_payload", "bounded_above", "split_headers", "upper_layer_bounded"]


# True while an SDK-level hook (anthropic middleware, ...) sends a request it has bounded:
# the HTTP layer below then leaves that request alone.
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


def split_headers(headers: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(settings from x-budgetware-* headers, the other headers)``."""
    own = {k: v for k, v in headers.items() if k.lower().startswith(REQUEST_HEADER_PREFIX)}
    rest = {k: v for k, v in headers.items() if k not in own}
    strings = {k: v for k, v in own.items() if isinstance(v, str)}
    return header_overrides(strings), rest


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
    """
    if not isinstance(payload, dict):
        return payload
    effective = resolve_config(config, request_overrides=request_overrides)
    if not effective.enabled:
        return payload
    try:
        body = dumps_bytes(payload)
        new_body = finalize_body(url, body, config=effective)
        return payload if new_body is body else loads(new_body)
    except Exception:
        fail_open("bound a request payload", config=effective)
        return payload
