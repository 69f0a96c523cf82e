"""The provider request formats budgetware understands, and picking one for a request."""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Mapping
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
from budgetware.wire.formats import (
    anthropic_messages,
    bedrock_converse,
    cohere_v2,
    gemini,
    ollama_chat,
    openai_chat,
    openai_responses,
)
from budgetware.wire.formats.base import Batch, Found, JsonPath, WireFormat

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
    openai_chat.FORMAT,
    openai_responses.FORMAT,
    anthropic_messages.FORMAT,
    gemini.FORMAT,
    ollama_chat.FORMAT,
    cohere_v2.FORMAT,
    bedrock_converse.FORMAT,
)

# Endpoints whose bodies are never tool-result carriers, even if their shape looks like one:
# Ollama's /api/generate concatenates everything into one prompt (not separable).
PASS_THROUGH_PATHS = ("/api/generate", "/embeddings", "/api/embed", "/api/embeddings")

# Body-shape order for unknown endpoints: the most specific shapes first, OpenAI chat last
# because "a message with role tool" is the loosest test.
_SNIFF_ORDER: tuple[WireFormat, ...] = (
    openai_responses.FORMAT,
    anthropic_messages.FORMAT,
    bedrock_converse.FORMAT,
    gemini.FORMAT,
    openai_chat.FORMAT,
)


def read_body(
    url: str, body: bytes, config: BudgetConfig | None = None
) -> tuple[dict[str, Any], list[Batch]] | None:
    """The decoded body and its tool-result batches, or None when it carries none we handle.

    Only model endpoints are read (``format_for_url``): an endpoint ``config.endpoints``
    declares, else a known model API path; an unknown endpoint only when
    ``config.sniff_unknown_endpoints`` is on and its body looks like a model request.
    A body that is not a JSON object, not UTF-8, too deep or otherwise undecodable is
    robust input, not an error: None.
    """
    return read_body_as(url, body, config)[1]


def read_body_as(
    url: str, body: bytes, config: BudgetConfig | None = None
) -> tuple[WireFormat | None, tuple[dict[str, Any], list[Batch]] | None]:
    """``read_body``, with the wire format of the request: ``format_for_url``'s, or for an
    endpoint whose body shape decides, the shape's (``SNIFF`` while none is known).

    The format is given also when the body is then not read (not JSON, a raw NUL): a
    caller that reports on the request looks nothing up a second time.
    """
    fmt = format_for_url(url, config)
    if fmt is None:
        return None, None
    # A raw NUL never occurs in UTF-8 JSON text; it does in UTF-16/32, which the standard
    # library would decode, but whose byte offsets the splicer cannot use.
    if b"\x00" in body:
        return fmt, None
    if fmt is SNIFF and not any(m in body for f in _SNIFF_ORDER for m in f.sniff_markers):
        # An unknown endpoint whose bytes hold no tool-result marker: not a model request
        # we can bound. Sniffing sees every JSON request of the process; this keeps the
        # cost for the others at a few memory scans instead of a parse.
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
        # Agents that send tool results as user text (smolagents' "Observation:").
        from budgetware.wire.text_results import text_result_batches

        batches += text_result_batches(found.name, decoded, config.text_results)
    return found, (decoded, batches)


class _Sniff:
    """Stands for "an unknown endpoint whose body shape decides" (opt-in)."""

    name = "sniff"


SNIFF: Any = _Sniff()


def format_for_url(url: str, config: BudgetConfig | None = None) -> WireFormat | None:
    """The wire format of a request to ``url``; None: not a model endpoint, leave it alone.

    In order: the first of ``config.endpoints`` whose pattern matches (``"none"`` leaves
    the endpoint alone); the pass-through paths (never rewritten); a known model API path;
    ``SNIFF`` when ``config.sniff_unknown_endpoints`` is on (the body shape decides).
    """
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


_BY_NAME: dict[str, WireFormat] = {}


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
        return True, (None if name == NO_FORMAT else _format_named(name))
    return False, None


def _format_named(name: str) -> WireFormat:
    if not _BY_NAME:
        _BY_NAME.update({fmt.name: fmt for fmt in FORMATS})
    return _BY_NAME[name]


_Rule = tuple["re.Pattern[str] | None", "re.Pattern[str] | None", str]


@functools.lru_cache(maxsize=64)
def _rules(endpoints: tuple[tuple[str, str], ...]) -> list[_Rule]:
    """Compiled endpoint patterns: ``/path-glob``, ``host-glob``, or ``host-glob/path-glob``
    (a leading ``http://`` or ``https://`` is ignored; ``*`` also matches ``/``; ``host/``
    and ``host/*`` are the whole host, like ``host``). In a host glob only ``*`` and ``?``
    are wildcards: brackets are literal, as in an IPv6 address (``[::1]:8000``)."""
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
        host_re = re.compile(_host_glob(host_glob.lower())) if host_glob else None
        whole_host = host_glob and path_glob in ("/", "/*")
        path_re = (
            re.compile(fnmatch.translate(path_glob.rstrip("/") or "/"))
            if path_glob and path_glob != "/*" and not whole_host
            else None
        )
        rules.append((host_re, path_re, name))
    return rules


def _host_glob(glob: str) -> str:
    """A regular expression for a host glob: ``*`` and ``?`` wildcards, all else literal."""
    return (
        "(?s:"
        + "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob)
        + r")\Z"
    )


_ENDPOINTS_VARIABLE = variable_of("endpoints")


def _endpoints_dropped(config: BudgetConfig) -> bool:
    """Whether ``BUDGETWARE_ENDPOINTS`` is set but invalid and so left out of ``config``.

    A value that turns bad after setup is left out of the configuration (logged once)
    like any other; for this one setting that would bound endpoints the user excluded
    (``"none"``), so no request is touched until the value is fixed.
    """
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
    for fmt in FORMATS:
        if fmt.match_path(stripped):
            return fmt
    return None


def sniff_format(body: Mapping[str, Any]) -> WireFormat | None:
    """The format a decoded body of an unknown endpoint looks like, if any."""
    for fmt in _SNIFF_ORDER:
        if fmt.match_body(body):
            return fmt
    return None
