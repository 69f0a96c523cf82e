"""The LiteLLM Proxy's pass-through routes (``/anthropic/...``, ``/openai/...``, ...).

The pre-call hook gets the body alone; its route (``request_route``) picks the wire format.
litellm forwards the client's headers before any hook runs and shows them to none:
``guard_forwarded_headers()`` wraps that function to keep ``x-budgetware-*`` headers from
the provider and hand them (with the body's size) to the same request's hook.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

from budgetware.core.errors import fail_open
from budgetware.http.headers import REQUEST_HEADER_PREFIX
from budgetware.wire.detect import format_for_path

__all__ = [
    "CALL_TYPE",
    "content_length",
    "guard_forwarded_headers",
    "is_own",
    "own_headers",
    "route_wire",
    "take_client_request",
]

logger = logging.getLogger("budgetware")

CALL_TYPE = "pass_through_endpoint"

# The conversation field of each wire format a pass-through body may have.
_FIELDS = {
    "openai_chat": "messages",
    "openai_responses": "input",
    "anthropic_messages": "messages",
    "gemini": "contents",
    "cohere_v2": "messages",
    "ollama_chat": "messages",
}
# Routes litellm signs (SigV4) and sends as signed, whatever a hook returns.
_SIGNED_ROUTES = ("/bedrock",)
_GUARD_MARK = "__budgetware_guard__"


def route_wire(route: object) -> tuple[str, str] | None:
    """(the path that picks the format, the conversation field) of a pass-through route,
    or None: not a model API whose requests budgetware bounds."""
    if not isinstance(route, str) or not route.startswith("/"):
        return None
    path = route.split("?", 1)[0].rstrip("/")
    if any(path == prefix or path.startswith(prefix + "/") for prefix in _SIGNED_ROUTES):
        return None
    fmt = format_for_path(path)
    if fmt is None or fmt.name not in _FIELDS:
        return None
    return path, _FIELDS[fmt.name]


# The client's x-budgetware-* headers and body size (content-length, 0: unknown) of the
# pass-through request being served, for its hook.
_CLIENT: ContextVar[tuple[dict[str, str], int] | None] = ContextVar(
    "budgetware_pass_through", default=None
)


def take_client_request() -> tuple[dict[str, str], int]:
    """The client's ``x-budgetware-*`` headers and body size of the pass-through request
    being served (once: cleared)."""
    found = _CLIENT.get()
    _CLIENT.set(None)
    return found or ({}, 0)


def is_own(name: object) -> bool:
    """Whether ``name`` is an ``x-budgetware-*`` header, a setting for the gateway."""
    return isinstance(name, str) and name.lower().startswith(REQUEST_HEADER_PREFIX)


def own_headers(headers: Mapping[Any, Any]) -> dict[str, str]:
    """The ``x-budgetware-*`` headers among ``headers`` (string values only)."""
    return {k: v for k, v in headers.items() if is_own(k) and isinstance(v, str)}


def content_length(headers: Mapping[Any, Any]) -> int:
    """The body's size as its ``content-length`` header says (0: unknown)."""
    for name, value in headers.items():
        if isinstance(name, str) and name.lower() == "content-length":
            try:
                return max(int(value), 0)
            except (TypeError, ValueError):
                return 0
    return 0


def _guarded(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def forward_headers_from_request(*args: Any, **kwargs: Any) -> Any:
        try:
            # Read first: litellm pops names from the client's headers as it merges them.
            client = kwargs.get("request_headers", args[0] if args else None)
            if isinstance(client, Mapping):
                _CLIENT.set((own_headers(client), content_length(client)))
        except Exception:
            fail_open("read the x-budgetware-* headers of a pass-through request")
        forwarded = original(*args, **kwargs)
        try:
            if isinstance(forwarded, Mapping) and any(map(is_own, forwarded)):
                return {k: v for k, v in forwarded.items() if not is_own(k)}
        except Exception:
            fail_open("remove x-budgetware-* headers from a pass-through request")
        return forwarded

    setattr(forward_headers_from_request, _GUARD_MARK, True)
    return forward_headers_from_request


def guard_forwarded_headers() -> bool:
    """Wrap litellm's pass-through header forwarding (idempotent); False, logged once, when
    this litellm has no such function."""
    try:
        from litellm.passthrough.utils import BasePassthroughUtils
    except ImportError:
        return _unguarded()
    current = BasePassthroughUtils.__dict__.get("forward_headers_from_request")
    function = current.__func__ if isinstance(current, staticmethod) else None
    if function is None:
        return _unguarded()
    if getattr(function, _GUARD_MARK, False):
        return True
    BasePassthroughUtils.forward_headers_from_request = staticmethod(  # type: ignore[method-assign]
        _guarded(function)
    )
    return True


@functools.cache
def _unguarded() -> bool:
    logger.warning(
        "BudgetwareWarning: budgetware: this litellm has no "
        "BasePassthroughUtils.forward_headers_from_request: on pass-through routes "
        "(/anthropic/..., /openai/..., ...) x-budgetware-* headers are neither read nor "
        "removed before the request is forwarded"
    )
    return False
