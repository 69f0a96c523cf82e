"""A litellm ``CustomLogger`` bounding tool results in the LiteLLM Proxy and async SDK calls."""

from __future__ import annotations

import functools
import logging
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from litellm.caching.dual_cache import DualCache
from litellm.integrations.custom_logger import CustomLogger
from litellm.proxy._types import UserAPIKeyAuth
from litellm.types.utils import CallTypes, CallTypesLiteral

from budgetware.core.config import BudgetConfig, check_settings
from budgetware.core.errors import BudgetwareWarning, fail_open
from budgetware.core.jsonio import dumps_bytes
from budgetware.http.headers import REQUEST_HEADER_PREFIX, header_overrides, metadata_overrides
from budgetware.http.transport import off_loop_for_size
from budgetware.store.select import check_store
from budgetware.wire.detect import format_for_path
from budgetware.wire.payload import bound_payload

from . import _passthrough

__all__ = ["BudgetCallback"]

logger = logging.getLogger("budgetware")

_CHAT = ("/chat/completions", "messages")
_ANTHROPIC = ("/v1/messages", "messages")
_RESPONSES = ("/responses", "input")
_GEMINI = ("/models/litellm:generateContent", "contents")

# The wire format of each call type's request, and the field that holds its conversation.
# Call types not listed (embeddings, images, audio, batches, ...) carry no tool results.
_FORMATS: dict[str, tuple[str, str]] = {
    "completion": _CHAT,
    "acompletion": _CHAT,
    # Text completions take a ``prompt``, never tool messages: listed so a ``messages``
    # field some client sends anyway is bounded like a chat's.
    "text_completion": _CHAT,
    "atext_completion": _CHAT,
    "anthropic_messages": _ANTHROPIC,
    "aanthropic_messages": _ANTHROPIC,
    "responses": _RESPONSES,
    "aresponses": _RESPONSES,
    "generate_content": _GEMINI,
    "agenerate_content": _GEMINI,
    "generate_content_stream": _GEMINI,
    "agenerate_content_stream": _GEMINI,
}


def _call_type_name(call_type: object) -> str:
    if isinstance(call_type, CallTypes):
        return str(call_type.value)
    return call_type if isinstance(call_type, str) else ""


# Messages already logged by log_warning (a bounded set: past it, every one is logged).
_LOGGED: set[str] = set()
_LOGGED_MAX = 1024


def log_warning(message: str) -> None:
    """A ``BudgetwareWarning`` as a log line, once per message and process.

    The LiteLLM Proxy replaces ``warnings.showwarning`` with a function that prints
    nothing: a proxy operator would never see a warning. The log reaches the proxy's log.
    """
    if message in _LOGGED:
        return
    if len(_LOGGED) < _LOGGED_MAX:
        _LOGGED.add(message)
    logger.warning("BudgetwareWarning: %s", message)


def request_headers(data: Mapping[str, Any]) -> dict[str, str]:
    """The client's ``x-budgetware-*`` headers as the proxy records them in ``data``."""
    found: Any = None
    server_request = data.get("proxy_server_request")
    if isinstance(server_request, Mapping):
        found = server_request.get("headers")
    if not isinstance(found, Mapping):
        # The proxy also copies the headers into the request's metadata, for guardrails.
        for field in ("metadata", "litellm_metadata"):
            metadata = data.get(field)
            if isinstance(metadata, Mapping) and isinstance(metadata.get("headers"), Mapping):
                found = metadata["headers"]
                break
    if not isinstance(found, Mapping):
        return {}
    return {
        name: value
        for name, value in found.items()
        if _is_own_header(name) and isinstance(value, str)
    }


def _is_own_header(name: object) -> bool:
    return isinstance(name, str) and name.lower().startswith(REQUEST_HEADER_PREFIX)


def without_own_headers(data: dict[Any, Any]) -> dict[Any, Any]:
    """``data`` without ``x-budgetware-*`` entries in the headers the proxy forwards.

    With ``forward_client_headers_to_llm_api`` the proxy copies a client's ``x-*`` headers
    into ``data["headers"]``, which litellm sends to the provider: budgetware's own are
    settings for the gateway, never for the provider.
    """
    forwarded = data.get("headers")
    if not isinstance(forwarded, Mapping) or not any(map(_is_own_header, forwarded)):
        return data
    kept = {name: value for name, value in forwarded.items() if not _is_own_header(name)}
    return {**data, "headers": kept}


def _request_size(data: Mapping[str, Any]) -> int:
    """The client's request body size, as its ``content-length`` header says (0: unknown)."""
    server_request = data.get("proxy_server_request")
    headers = server_request.get("headers") if isinstance(server_request, Mapping) else None
    if not isinstance(headers, Mapping):
        return 0
    try:
        return int(headers.get("content-length") or 0)
    except (TypeError, ValueError):
        return 0


def _plain(value: Any) -> Any:
    # An SDK caller may put pydantic objects in its history (litellm's ``Message`` from a
    # previous response): the wire layer reads JSON, so those are bounded as their dumps.
    if isinstance(value, list):
        return [_plain(item) for item in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, (dict, str)):
        return dump(exclude_none=True)
    return value


def _warn(message: str) -> None:
    warnings.warn(message, BudgetwareWarning, stacklevel=4)


# Fields whose value may also be a plain string (a prompt, no tool results): the Responses
# ``input`` and litellm's Gemini ``contents``.
_TEXT_FIELDS = ("input", "contents")


def _conversation(
    fields: Mapping[str, Any], path: str, field: str, warn: Callable[[str], None]
) -> dict[str, Any] | None:
    """``{field: value}`` to bound, or None: no such field, or one of an unexpected shape.

    What budgetware cannot read is left as it is (a tool result it cannot read is not
    bounded), with a warning naming the shape (types only, never content).
    """
    if field not in fields:
        return None
    value = fields[field]
    fmt = format_for_path(path)
    api = fmt.name if fmt is not None else "model"
    if not isinstance(value, list):
        if not (field in _TEXT_FIELDS and isinstance(value, str)):
            warn(
                f"budgetware: leaving a request alone ({api}): its {field!r} is "
                f"{type(value).__name__}, not a list, so no tool result in it is bounded"
            )
        return None
    items = _plain(value)
    if not all(isinstance(item, dict) for item in items):
        warn(
            f"budgetware: some items of a request's {field!r} are not objects ({api}): "
            "they are left as they are"
        )
    odd = _unreadable_tool_result(api, items)
    if odd is not None:
        warn(f"budgetware: in a request ({api}), {odd}: it is left as it is, not bounded")
    payload = {field: items}
    # What the history budget reads besides the conversation: the model ("auto") and
    # whether the provider clears old tool results itself.
    for name, kind in _CONTEXT:
        if isinstance(fields.get(name), kind):
            payload[name] = fields[name]
    return payload


_CONTEXT = (("model", str), ("context_management", dict))


_TEXT = (str, list)
_CHAT_FORMATS = ("openai_chat", "cohere_v2", "ollama_chat")
_CHAT_TOOL_ROLES = ("tool", "function")


def _unreadable_tool_result(fmt: str, items: list[Any]) -> str | None:
    """What makes a tool result of the conversation unreadable (the first one found), or
    None: a tool result's content that is neither text nor a list of parts."""
    for item in items:
        if not isinstance(item, dict):
            continue
        if fmt in _CHAT_FORMATS:
            content = item.get("content")
            if item.get("role") in _CHAT_TOOL_ROLES and not isinstance(content, _TEXT):
                return f"a tool message's content is of type {type(content).__name__}"
        elif fmt == "anthropic_messages":
            blocks = item.get("content")
            if not isinstance(blocks, list):
                continue
            for block in blocks:
                if not isinstance(block, dict):
                    return f"a message's content holds a value of type {type(block).__name__}"
                result = block.get("content", "")
                if block.get("type") == "tool_result" and not isinstance(result, _TEXT):
                    return f"a tool_result's content is of type {type(result).__name__}"
        elif fmt == "openai_responses":
            output = item.get("output")
            if item.get("type") == "function_call_output" and not isinstance(output, _TEXT):
                return f"a function_call_output's output is of type {type(output).__name__}"
    return None


def _json_size(payload: Any) -> int:
    """The payload's size as compact JSON (0 when it is not JSON: left to the bounding)."""
    try:
        return len(dumps_bytes(payload))
    except (TypeError, ValueError, RecursionError):
        return 0


def _bound_conversation(
    path: str,
    payload: dict[str, Any],
    config: BudgetConfig | None,
    overrides: Mapping[str, Any],
) -> Any:
    """The bounded value of the payload's one field, or None when unchanged."""
    bounded = bound_payload(path, payload, config=config, request_overrides=overrides)
    if bounded is payload:
        return None
    field = next(iter(payload))  # the conversation, before the context beside it
    return bounded[field]


class BudgetCallback(CustomLogger):
    """Bounds the tool results of each request before litellm sends it.

    In the LiteLLM Proxy ``async_pre_call_hook`` bounds the client's request (on the unified
    routes, and on pass-through routes whose path is a model API), with settings from the
    callback's ``config`` < ``x-budgetware-*`` request headers < team metadata < key
    metadata (what the proxy's admin set wins over what a client asks). For async SDK and
    Router calls ``async_pre_call_deployment_hook``
    bounds the OpenAI-format ``messages`` (and a Responses ``input``) with ``config``.
    Neither hook ever fails a request: an internal error sends it unchanged.
    """

    def __init__(self, config: BudgetConfig | None = None) -> None:
        super().__init__()
        # A configuration mistake (or an unusable store) fails here, not on a request.
        check_store(check_settings(config))
        self.config = config
        # Pass-through routes forward the client's headers before any hook runs.
        _passthrough.guard_forwarded_headers()

    async def async_pre_call_hook(
        self,
        user_api_key_dict: UserAPIKeyAuth,
        cache: DualCache,
        data: dict[Any, Any],
        call_type: CallTypesLiteral,
    ) -> dict[Any, Any]:
        try:
            data = without_own_headers(data)
        except Exception:
            fail_open(
                "remove x-budgetware-* headers from a LiteLLM Proxy request", config=self.config
            )
        try:
            name = _call_type_name(call_type)
            if name == _passthrough.CALL_TYPE:
                client = _passthrough.take_client_request()
                route = getattr(user_api_key_dict, "request_route", None)
                wire = _passthrough.route_wire(route)
                headers, size = client.headers, client.size
            else:
                wire = _FORMATS.get(name)
                if wire is None:
                    return data
                headers, size = request_headers(data), _request_size(data)
            if wire is None:
                return data
            team = getattr(user_api_key_dict, "team_metadata", None)
            key = getattr(user_api_key_dict, "metadata", None)
            # The client's headers, then what the proxy's admin set on its team and key.
            overrides = header_overrides(headers, warn=log_warning)
            overrides.update(metadata_overrides(team, "team metadata", warn=log_warning))
            overrides.update(metadata_overrides(key, "key metadata", warn=log_warning))
            path, field = wire
            payload = _conversation(data, path, field, log_warning)
            if payload is None:
                return data
            # Hashing, cutting and writing artifacts take milliseconds to tens of them (an
            # fsync), an S3 store seconds if it hangs: a large request (by its
            # content-length) is bounded in a worker thread, never on the event loop that
            # serves every other request.
            bounded = await off_loop_for_size(
                size,
                _bound_conversation,
                path,
                payload,
                self.config,
                overrides,
                config=self.config,
                overrides=overrides,
            )
            if bounded is None:
                return data
            return {**data, field: bounded}
        except Exception:
            fail_open("bound a LiteLLM Proxy request", config=self.config)
            return data

    async def async_pre_call_deployment_hook(
        self, kwargs: dict[str, Any], call_type: CallTypes | None
    ) -> dict[Any, Any] | None:
        # A proxy request was bounded by async_pre_call_hook with its own per-request
        # settings (which may disable bounding): bounding it again here would undo them.
        if isinstance(kwargs.get("proxy_server_request"), Mapping):
            return kwargs
        try:
            wire = _FORMATS.get(_call_type_name(call_type))
            if wire is None:
                return kwargs
            path, field = wire
            payload = _conversation(kwargs, path, field, _warn)
            if payload is None:
                return kwargs
            # No content-length here: its JSON size (orjson, 0.15 ms a megabyte) decides
            # whether the bounding (and a store's I/O) leaves the event loop.
            bound = functools.partial(_bound_conversation, config=self.config, overrides={})
            bounded = await off_loop_for_size(
                _json_size(payload), bound, path, payload, config=self.config
            )
            if bounded is None:
                return kwargs
            return {**kwargs, field: bounded}
        except Exception:
            fail_open("bound a litellm request", config=self.config)
            return kwargs
