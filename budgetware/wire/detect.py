"""The provider request formats budgetware understands, and picking one for a request."""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, cast
from urllib.parse import urlsplit

from budgetware.core.config import (
    NO_FORMAT,
    BudgetConfig,
    environment_settings,
    variable_of,
    warn_setting_once,
)
from budgetware.core.jsonio import loads
from budgetware.wire.formats import anthropic_messages, bedrock_converse, gemini, openai_responses
from budgetware.wire.formats.base import Batch, Found, JsonPath, WireFormat
from budgetware.wire.formats.chat import COHERE_V2, OLLAMA_CHAT, OPENAI_CHAT

__all__ = [
    "FORMATS",
    "PASS_THROUGH_PATHS",
    "SNIFF",
    "Batch",
    "Found",
    "JsonPath",
    "WireFormat",
    "format_for_path",
    "format_for_url",
    "read_body",
    "read_body_as",
    "sniff_format",
]

# Path order matters only where suffixes overlap: none of these do.
FORMATS: tuple[WireFormat, ...] = (
    OPENAI_CHAT,
    openai_responses.FORMAT,
    anthropic_messages.FORMAT,
    gemini.FORMAT,
    OLLAMA_CHAT,
    COHERE_V2,
    bedrock_converse.FORMAT,
)

_BY_NAME = {fmt.name: fmt for fmt in FORMATS}

# Never tool-result carriers (Ollama's /api/generate joins everything into one prompt).
PASS_THROUGH_PATHS = ("/api/generate", "/embeddings", "/api/embed", "/api/embeddings")

# For unknown endpoints: the most specific shapes first, the loosest (OpenAI chat) last.
_SNIFF_ORDER: tuple[WireFormat, ...] = (
    openai_responses.FORMAT,
    anthropic_messages.FORMAT,
    bedrock_converse.FORMAT,
    gemini.FORMAT,
    OPENAI_CHAT,
)


def read_body(
    url: str, body: bytes, config: BudgetConfig | None = None
) -> tuple[dict[str, Any], list[Batch]] | None:
    """The decoded body and its tool-result batches, or None: not a model endpoint
    (``format_for_url``), or not a decodable JSON object."""
    return read_body_as(url, body, config)[1]


def read_body_as(
    url: str, body: bytes, config: BudgetConfig | None = None
) -> tuple[WireFormat | None, tuple[dict[str, Any], list[Batch]] | None]:
    """``read_body``, with the request's wire format (``SNIFF`` while the body shape is not
    known), also when the body is then not read."""
    fmt = format_for_url(url, config)
    if fmt is None:
        return None, None
    # A raw NUL: UTF-16/32, whose byte offsets the splicer cannot use.
    if b"\x00" in body:
        return fmt, None
    if fmt is SNIFF and not any(m in body for f in _SNIFF_ORDER for m in f.sniff_markers):
        # No tool-result marker: not a model request we can bound, and no parse.
        return fmt, None
    try:
        decoded = loads(body)
    except (ValueError, RecursionError):
        return fmt, None
    if not isinstance(decoded, dict):
        return fmt, None
    found = sniff_format(decoded) if fmt is SNIFF else fmt
    if found is None:
        return fmt, None
    batches = found.batches(decoded)
    if config is not None and config.text_results:
        from budgetware.wire.text_results import text_result_batches

        batches += text_result_batches(found.name, decoded, config.text_results)
    return found, (decoded, batches)


# Stands for "an unknown endpoint whose body shape decides" (opt-in).
SNIFF: Any = SimpleNamespace(name="sniff")


def format_for_url(url: str, config: BudgetConfig | None = None) -> WireFormat | None:
    """The wire format of a request to ``url``, or None (leave it alone): the first
    matching ``config.endpoints`` pattern, else a known model path, else ``SNIFF`` when
    ``sniff_unknown_endpoints`` is on."""
    parts = urlsplit(str(url))
    path = parts.path.rstrip("/")
    if config is not None and _endpoints_dropped(config):
        return None  # fail closed: the endpoints the user excluded are unknown now
    if config is not None and config.endpoints:
        matched, declared = _declared(parts.netloc, path or "/", tuple(config.endpoints.items()))
        if matched:
            return declared
    if path.endswith(PASS_THROUGH_PATHS):
        return None
    fmt = format_for_path(path)
    if fmt is None and config is not None and config.sniff_unknown_endpoints:
        return cast(WireFormat, SNIFF)
    return fmt


def _declared(
    netloc: str, path: str, endpoints: tuple[tuple[str, str], ...]
) -> tuple[bool, WireFormat | None]:
    """(whether a declared pattern matches, its format: None for ``"none"``)."""
    host = netloc.rpartition("@")[2].lower()
    bare_host = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    for host_re, path_re, name in _rules(endpoints):
        if host_re is not None and not (host_re.match(host) or host_re.match(bare_host)):
            continue
        if path_re is not None and not path_re.match(path):
            continue
        return True, (None if name == NO_FORMAT else _BY_NAME[name])
    return False, None


_Rule = tuple["re.Pattern[str] | None", "re.Pattern[str] | None", str]


@functools.lru_cache(maxsize=64)
def _rules(endpoints: tuple[tuple[str, str], ...]) -> list[_Rule]:
    """Compiled endpoint patterns: ``/path-glob``, ``host-glob`` or ``host-glob/path-glob``
    (a scheme is ignored; ``host/`` and ``host/*`` are the whole host)."""
    rules: list[_Rule] = []
    for pattern, name in endpoints:
        text = pattern.strip()
        for scheme in ("https://", "http://"):
            if text.lower().startswith(scheme):
                text = text[len(scheme) :]
        if text.startswith("/"):
            host_glob, path_glob = "", text
        else:
            host_glob, slash, rest = text.partition("/")
            path_glob = slash + rest
        # Brackets in a host are literal (``[::1]:8000``): ``[[]`` is fnmatch's own ``[``.
        host = fnmatch.translate(host_glob.lower().replace("[", "[[]"))
        host_re = re.compile(host) if host_glob else None
        whole_host = host_glob and path_glob in ("/", "/*")
        path_re = (
            re.compile(fnmatch.translate(path_glob.rstrip("/") or "/"))
            if path_glob and path_glob != "/*" and not whole_host
            else None
        )
        rules.append((host_re, path_re, name))
    return rules


_ENDPOINTS_VARIABLE = variable_of("endpoints")


def _endpoints_dropped(config: BudgetConfig) -> bool:
    """Whether ``BUDGETWARE_ENDPOINTS`` is set but invalid: then no request is touched
    (leaving it out would bound the endpoints it excluded)."""
    raw = environment_settings().get("endpoints")
    if raw is None or "endpoints" in config.model_fields_set:
        return False
    return not _valid_endpoints(raw)


@functools.lru_cache(maxsize=16)
def _valid_endpoints(raw: str) -> bool:
    try:
        BudgetConfig.model_validate({"endpoints": raw})
    except ValueError:
        reason = "invalid endpoints; no request is rewritten until it is fixed"
        warn_setting_once(_ENDPOINTS_VARIABLE, reason)
        return False
    return True


def format_for_path(path: str) -> WireFormat | None:
    """The format whose endpoint this URL path is, if any."""
    stripped = path.rstrip("/")
    return next((fmt for fmt in FORMATS if fmt.match_path(stripped)), None)


def sniff_format(body: Mapping[str, Any]) -> WireFormat | None:
    """The format a decoded body of an unknown endpoint looks like, if any."""
    return next((fmt for fmt in _SNIFF_ORDER if fmt.match_body(body)), None)
