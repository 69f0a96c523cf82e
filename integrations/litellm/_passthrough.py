"""The LiteLLM Proxy's pass-through routes (``/anthropic/...``, ``/openai/...``, ...).

On a pass-through route the proxy sends the client's body to the provider as it is, with
the client's headers: it calls the pre-call hook with ``call_type="pass_through_endpoint"``
and the body alone (no URL, no headers). The route is on the caller's ``UserAPIKeyAuth``
(``request_route``): a route whose path is a known model API has a wire format, and its
conversation field is bounded like the unified routes'.

The headers are another matter: litellm takes the headers it forwards on every
pass-through route from one function, ``BasePassthroughUtils.forward_headers_from_request``,
before any hook runs, and shows them to no callback. ``guard_forwarded_headers()`` wraps
that function (once per process): it keeps the client's ``x-budgetware-*`` headers out of
what is forwarded and leaves them (with the body's size) for the hook of the same request,
in a context variable.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from budgetware.core.errors import fail_open
from budgetware.http.headers import REQUEST_HEADER_PREFIX
from budgetware.wire.detect import format_for_path

__all__ = [
    "CALL_TYPE",
    "ClientRequest",
    "guard_forwarded_headers",
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
# Routes whose body litellm signs itself (SigV4) and sends as the signed bytes, whatever
# a hook returns: bounding it would change nothing that is sent.
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


@dataclass(frozen=True)
class ClientRequest:
    """What the hook of a pass-through request needs of the client's headers."""

    headers: Mapping[str, str] = field(default_factory=dict)
    """The client's ``x-budgetware-*`` headers."""
    size: int = 0
    """The body's ``content-length`` (0: unknown)."""


_NOTHING = ClientRequest()
_CLIENT: ContextVar[ClientRequest | None] = ContextVar("budgetware_pass_through", default=None)


def take_client_request() -> ClientRequest:
    """The client's headers of the pass-through request being served (once: cleared)."""
    found = _CLIENT.get()
    if found is None:
        return _NOTHING
    _CLIENT.set(None)
    return found


def _is_own(name: object) -> bool:
    return isinstance(name, str) and name.lower().startswith(REQUEST_HEADER_PREFIX)


def _size(headers: Mapping[Any, Any]) -> int:
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
                own = {k: v for k, v in client.items() if _is_own(k) and isinstance(v, str)}
                _CLIENT.set(ClientRequest(own, _size(client)))
        except Exception:
            fail_open("read the x-budgetware-* headers of a pass-through request")
        forwarded = original(*args, **kwargs)
        try:
            if isinstance(forwarded, Mapping) and any(map(_is_own, forwarded)):
                return {k: v for k, v in forwarded.items() if not _is_own(k)}
        except Exception:
            fail_open("remove x-budgetware-* headers from a pass-through request")
        return forwarded

    setattr(forward_headers_from_request, _GUARD_MARK, True)
    return forward_headers_from_request


def guard_forwarded_headers() -> bool:
    """Wrap litellm's pass-through header forwarding (idempotent); False when this litellm
    has no such function (then pass-through routes forward ``x-budgetware-*`` headers and
    the hook cannot read them: logged once)."""
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
