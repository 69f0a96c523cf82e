"""A litellm ``CustomLogger`` bounding tool results in the LiteLLM Proxy and async SDK calls,
and reporting the provider's token counters of the requests it reported."""

from __future__ import annotations

import functools
import logging
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from litellm.caching.dual_cache import DualCache
from litellm.integrations.custom_logger import CustomLogger
from litellm.proxy._types import UserAPIKeyAuth
from litellm.types.utils import CallTypes, CallTypesLiteral

from budgetware.core import observe
from budgetware.core.config import AUTO, BudgetConfig, check_settings, resolve_config
from budgetware.core.environment import version
from budgetware.core.errors import BudgetwareWarning, fail_open
from budgetware.http.headers import header_overrides, metadata_overrides
from budgetware.http.transport import off_loop_for_size
from budgetware.http.usage import counters
from budgetware.store.select import check_store
from budgetware.wire.detect import format_for_path
from budgetware.wire.history import input_window
from budgetware.wire.payload import bound_payload_reported

from .. import _sdk
from . import _passthrough

__all__ = ["BudgetCallback"]

logger = logging.getLogger("budgetware")

_CHAT = ("/chat/completions", "messages")
_GEMINI = ("/models/litellm:generateContent", "contents")

# The wire format of each call type's request (sync, and async with an "a" before it), and
# the field that holds its conversation. Call types not listed (embeddings, images, audio,
# batches, ...) carry no tool results; a text completion may carry ``messages`` anyway.
_FORMATS: dict[str, tuple[str, str]] = {
    prefix + name: wire
    for name, wire in (
        ("completion", _CHAT),
        ("text_completion", _CHAT),
        ("anthropic_messages", ("/v1/messages", "messages")),
        ("responses", ("/responses", "input")),
        ("generate_content", _GEMINI),
        ("generate_content_stream", _GEMINI),
    )
    for prefix in ("", "a")
}


@functools.lru_cache(maxsize=1024)
def log_warning(message: str) -> None:
    """A ``BudgetwareWarning`` as a log line, once per message and process (the last 1,024
    kept): the LiteLLM Proxy replaces ``warnings.showwarning`` with one that prints nothing."""
    logger.warning("BudgetwareWarning: %s", message)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def request_headers(data: Mapping[str, Any]) -> dict[str, str]:
    """The client's ``x-budgetware-*`` headers as the proxy records them in ``data`` (or
    copies them into its metadata, for guardrails), and those it put in the body's
    ``extra_headers`` (the real headers win)."""
    found = _mapping(data.get("proxy_server_request")).get("headers")
    for field in ("metadata", "litellm_metadata"):
        if not isinstance(found, Mapping):
            found = _mapping(data.get(field)).get("headers")
    own: dict[str, str] = {}
    for headers in (data.get("extra_headers"), found):
        own.update(_passthrough.own_headers(_mapping(headers)))
    return own


def without_own_headers(data: dict[Any, Any]) -> dict[Any, Any]:
    """``data`` without ``x-budgetware-*`` entries in the headers litellm sends to the
    provider: those the proxy forwards (``forward_client_headers_to_llm_api``) and the
    body's ``extra_headers``. They are settings for the gateway."""
    for field in ("headers", "extra_headers"):
        forwarded = data.get(field)
        if isinstance(forwarded, Mapping) and any(map(_passthrough.is_own, forwarded)):
            kept = {k: v for k, v in forwarded.items() if not _passthrough.is_own(k)}
            data = {**data, field: kept}
    return data


# (a client's unit, the operator's unit) -> f: a text measuring n in the first measures at
# most f * n in the second (chars <= UTF-8 bytes <= 4 chars; an estimated token is 4 bytes,
# rounded up). Exact token units convert to none of them.
_UNIT_FACTORS = {
    ("utf8_bytes", "chars"): 1,
    ("tokens", "chars"): 4,
    ("chars", "utf8_bytes"): 4,
    ("tokens", "utf8_bytes"): 4,
    ("chars", "tokens"): 1,
    ("utf8_bytes", "tokens"): 1,
}
_CLAMPED = (
    "budgetware: holding a client's x-budgetware-* headers to the operator's bounds "
    "(client_overrides is 'clamp'): it asked for a larger budget, none, or a unit that "
    "cannot be compared"
)


def client_settings(
    client: Mapping[str, Any], operator: Mapping[str, Any], config: BudgetConfig | None
) -> dict[str, Any]:
    """The request's settings from the client's headers and the operator's key and team
    metadata, by the ``client_overrides`` policy in effect. Under ``clamp`` a client may
    tighten the operator's budgets (smaller, fewer kept batches, in a comparable unit),
    never loosen or turn them off; a history budget of ``auto`` is held as it is."""
    if not client:
        return dict(operator)
    bounds = resolve_config(config, request_overrides=operator, lenient=True)
    if bounds.client_overrides == "allow":
        return {**client, **operator}
    if bounds.client_overrides == "ignore":
        log_warning("budgetware: ignoring clients' x-budgetware-* headers (client_overrides)")
        return dict(operator)
    kept = dict(client)
    unit = kept.get("unit", bounds.unit)
    factor = 1 if unit == bounds.unit else _UNIT_FACTORS.get((unit, bounds.unit))
    if factor is None:
        del kept["unit"]
        factor = 1
        log_warning(_CLAMPED)
    for name in ("batch_budget", "mcp_result_budget", "history_budget"):
        bound = getattr(bounds, name)
        if bound is None or (isinstance(bound, int) and bound <= 0):
            continue  # the operator set no bound: any budget is within it
        most = bound if bound == AUTO else max(bound // factor, 1)
        asked = kept.get(name, bound)
        within = asked == most if most == AUTO else isinstance(asked, int) and 0 < asked <= most
        if not within:
            kept[name] = most
            log_warning(_CLAMPED)
    if kept.get("history_keep_batches", 0) > bounds.history_keep_batches:
        kept["history_keep_batches"] = bounds.history_keep_batches
        log_warning(_CLAMPED)
    return {**operator, **kept}


def _request_size(data: Mapping[str, Any]) -> int:
    """The client's request body size, as its ``content-length`` header says (0: unknown)."""
    headers = _mapping(data.get("proxy_server_request")).get("headers")
    return _passthrough.content_length(_mapping(headers))


def _plain(value: Any) -> Any:
    """``value`` with pydantic objects (litellm's ``Message`` in a history) as their dumps."""
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
    """``{field: value}`` to bound, or None; what cannot be read is left as it is, with a
    warning naming its shape (types only, never content)."""
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


def _deployed_model(alias: str) -> str:
    """For "auto": the model behind a proxy model name with the smallest known input window."""
    router = getattr(sys.modules.get("litellm.proxy.proxy_server"), "llm_router", None)
    if router is None:
        return alias
    registry = getattr(router, "registry", None)  # litellm 1.110 on; get_model_list before
    found = registry().deployments(alias) if registry else router.get_model_list(alias)
    models = [_mapping(_mapping(d).get("litellm_params")).get("model") for d in found or ()]
    known = [(w, m) for m in models if isinstance(m, str) and (w := input_window(m))]
    return min(known)[1] if known else alias


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


def _bound_conversation(
    path: str,
    payload: dict[str, Any],
    config: BudgetConfig | None,
    overrides: Mapping[str, Any],
) -> tuple[Any, observe.RequestReport | None]:
    """The bounded value of the payload's one field (None when unchanged), and its report."""
    bounded, report = bound_payload_reported(
        path, payload, config=config, request_overrides=overrides
    )
    if bounded is payload:
        return None, report
    field = next(iter(payload))  # the conversation, before the context beside it
    return bounded[field], report


# The reports of requests whose response is still to come, by litellm call id: their
# usage is reported with them (bounded: past it, the oldest are forgotten).
_REPORTS: dict[str, observe.RequestReport] = {}
_REPORTS_MAX = 4096


def _remember(call_id: object, report: observe.RequestReport | None) -> None:
    if report is None or not isinstance(call_id, str):
        return
    if len(_REPORTS) >= _REPORTS_MAX:
        del _REPORTS[next(iter(_REPORTS))]
    _REPORTS[call_id] = report


def _usage_of(response: Any) -> Mapping[str, Any] | None:
    """The usage object of a litellm response (a model or a dict), as a mapping."""
    for name in ("usage", "usageMetadata"):
        found = (
            response.get(name) if isinstance(response, Mapping) else getattr(response, name, None)
        )
        if found is not None:
            dump = getattr(found, "model_dump", None)
            found = dump() if callable(dump) else found
            return found if isinstance(found, Mapping) else None
    return None


def _announce(config: BudgetConfig) -> None:
    """One line in the LiteLLM Proxy's log at start: budgetware is loaded, and how (the
    proxy configures no logging for it: then on stderr)."""
    budget = f"{config.batch_budget:,} {config.unit}" if config.enabled else "off"
    line = (
        f"budgetware {version()} loaded: bounding tool results of this LiteLLM Proxy's "
        f"requests, batch budget {budget}; clients' x-budgetware-* headers: "
        f"{config.client_overrides} (client_overrides)"
    )
    if logger.hasHandlers():
        logger.info(line)
    else:
        print(line, file=sys.stderr, flush=True)


class BudgetCallback(CustomLogger):
    """Bounds the tool results of each request before litellm sends it.

    In the LiteLLM Proxy ``async_pre_call_hook`` bounds the client's request with settings
    from ``config`` < team metadata < key metadata, and the client's ``x-budgetware-*``
    headers as ``client_overrides`` says (``client_settings``); for async
    SDK and Router calls ``async_pre_call_deployment_hook`` does, with ``config``. Neither
    ever fails a request: an internal error sends it unchanged.
    """

    def __init__(self, config: BudgetConfig | None = None) -> None:
        super().__init__()
        # A bad setting or an unusable store fails here, not on a request.
        resolved = check_settings(config)
        check_store(resolved)
        self.config = config
        # Pass-through routes forward the client's headers before any hook runs.
        _passthrough.guard_forwarded_headers()
        if "litellm.proxy.proxy_server" in sys.modules:
            _announce(resolved)

    async def async_pre_call_hook(
        self,
        user_api_key_dict: UserAPIKeyAuth,
        cache: DualCache,
        data: dict[Any, Any],
        call_type: CallTypesLiteral,
    ) -> dict[Any, Any]:
        given = data  # the client's x-budgetware-* headers are read from it
        try:
            data = without_own_headers(data)
        except Exception:
            fail_open(
                "remove x-budgetware-* headers from a LiteLLM Proxy request", config=self.config
            )
        try:
            if call_type == _passthrough.CALL_TYPE:
                headers, size = _passthrough.take_client_request()
                route = getattr(user_api_key_dict, "request_route", None)
                wire = _passthrough.route_wire(route)
            else:
                wire = _FORMATS.get(call_type)
                headers, size = request_headers(given), _request_size(data)
            if wire is None:
                return data
            team = getattr(user_api_key_dict, "team_metadata", None)
            key = getattr(user_api_key_dict, "metadata", None)
            operator = metadata_overrides(team, "team metadata", warn=log_warning)
            operator.update(metadata_overrides(key, "key metadata", warn=log_warning))
            asked = header_overrides(headers, warn=log_warning)
            overrides = client_settings(asked, operator, self.config)
            path, field = wire
            payload = _conversation(data, path, field, log_warning)
            if payload is None:
                return data
            if "model" in payload:
                payload["model"] = _deployed_model(payload["model"])
            # A large request (by its content-length) is bounded off the proxy's event loop.
            bounded, report = await off_loop_for_size(
                size,
                _bound_conversation,
                path,
                payload,
                self.config,
                overrides,
                config=self.config,
                overrides=overrides,
            )
            _remember(data.get("litellm_call_id"), report)
            if bounded is None:
                return data
            return {**data, field: bounded}
        except Exception:
            fail_open("bound a LiteLLM Proxy request", config=self.config)
            return data

    async def async_pre_call_deployment_hook(
        self, kwargs: dict[str, Any], call_type: CallTypes | None
    ) -> dict[Any, Any] | None:
        # A proxy request was bounded by async_pre_call_hook with its own settings.
        if isinstance(kwargs.get("proxy_server_request"), Mapping):
            return kwargs
        try:
            wire = _FORMATS.get(call_type or "")
            if wire is None:
                return kwargs
            path, field = wire
            payload = _conversation(kwargs, path, field, _warn)
            if payload is None:
                return kwargs
            # No content-length here: its JSON size decides whether bounding leaves the loop.
            bound = functools.partial(_bound_conversation, config=self.config, overrides={})
            bounded, report = await off_loop_for_size(
                _sdk.json_size(payload), bound, path, payload, config=self.config
            )
            _remember(kwargs.get("litellm_call_id"), report)
            if bounded is None:
                return kwargs
            return {**kwargs, field: bounded}
        except Exception:
            fail_open("bound a litellm request", config=self.config)
            return kwargs

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        """Report the provider's counters of a request this callback reported."""
        report = _REPORTS.pop(kwargs.get("litellm_call_id"), None)
        if report is None or report.api is None:
            return
        try:
            usage = _usage_of(response_obj)
            found = counters(report.api, usage) if usage is not None else None
            if found is not None:
                observe.deliver_usage(observe.UsageReport(report.api, *found, request=report))
        except Exception:
            fail_open("report a litellm response's usage", config=self.config)

    async def async_log_failure_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        _REPORTS.pop(kwargs.get("litellm_call_id"), None)
