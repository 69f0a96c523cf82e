"""The one settings model, its environment variables, and the layers each request resolves
(``resolve_config``)."""

from __future__ import annotations

import contextvars
import functools
import json
import logging
import math
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args
from urllib.parse import unquote

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from budgetware.core.measure import Unit
from budgetware.core.paths import default_artifact_path

if TYPE_CHECKING:
    from pydantic_settings import BaseSettings

__all__ = [
    "AUTO",
    "DEFAULT_MCP_MESSAGE_BYTES",
    "DEFAULT_MCP_RESULT_BUDGET",
    "ENV_PREFIX",
    "FORMAT_NAMES",
    "NO_FORMAT",
    "UNIT_NAMES",
    "BudgetConfig",
    "BudgetwareWarning",
    "ConfigError",
    "Count",
    "McpServerBudget",
    "McpToolPolicy",
    "Number",
    "Priority",
    "StoreLocation",
    "ToolPolicy",
    "budget",
    "check_overrides",
    "check_settings",
    "config_error",
    "current_overrides",
    "environment_settings",
    "parse_duration",
    "parse_store_url",
    "resolve_config",
    "variable_of",
    "warn_setting_once",
]

logger = logging.getLogger("budgetware")

ENV_PREFIX = "BUDGETWARE_"
# ``history_budget="auto"``: half the input window of the model a request names.
AUTO = "auto"
MIB = 1024 * 1024
HOUR = 3600.0
DAY = 24 * HOUR
# Half the default batch budget: two oversized MCP results of one turn need no second cut.
DEFAULT_MCP_RESULT_BUDGET = 100_000
# mcp.client.streamable_http.DEFAULT_MAX_SSE_EVENT_SIZE (a test pins the two together).
DEFAULT_MCP_MESSAGE_BYTES = MIB

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw]?)")
_DURATION_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": HOUR, "d": DAY, "w": 7 * DAY}
# S3 bucket names: 3-63 lower-case letters, digits, dots and hyphens.
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def parse_duration(text: str) -> float:
    """``"90"``, ``"30m"``, ``"12h"``, ``"7d"``, ``"2w"`` as seconds (ValueError if not)."""
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        raise ValueError(f"not a duration: {text!r} (examples: 90, 30m, 12h, 7d, 2w)")
    return float(match.group(1)) * _DURATION_UNITS[match.group(2)]


@dataclass(frozen=True)
class StoreLocation:
    """Where an ``artifact_store`` URL points: a local directory, or an S3 bucket and prefix
    (``prefix`` is empty or ends with ``/``)."""

    scheme: Literal["file", "s3"]
    path: str = ""
    bucket: str = ""
    prefix: str = ""


def parse_store_url(url: str) -> StoreLocation:
    """A path, ``file://`` URL or ``s3://bucket/prefix`` as a location (ValueError if not)."""
    text = url.strip()
    if text.startswith("s3://"):
        bucket, _, prefix = text[len("s3://") :].partition("/")
        if not _BUCKET.fullmatch(bucket):
            raise ValueError(f"not an S3 bucket name: {bucket!r} (expected s3://bucket/prefix)")
        prefix = prefix.strip("/")
        if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
            raise ValueError("an S3 prefix has no empty, '.' or '..' segments")
        return StoreLocation("s3", bucket=bucket, prefix=prefix + "/" if prefix else "")
    if text.startswith("file://"):
        rest = text[len("file://") :]
        host, slash, path = rest.partition("/")
        if host not in ("", "localhost"):
            raise ValueError(f"a file:// URL names this machine, not {host!r}")
        text = unquote(slash + path)
    elif "://" in text:
        scheme = text.split("://", 1)[0]
        raise ValueError(f"unsupported scheme {scheme!r}: use a path, file:// or s3://")
    if not text:
        raise ValueError("an empty path")
    return StoreLocation("file", path=os.path.abspath(expand_user(text)))


def expand_user(path: str) -> str:
    """``path`` with a leading ``~`` or ``~user`` expanded (ValueError when it names no one)."""
    if not path.startswith("~"):
        return path
    expanded = os.path.expanduser(path)
    if expanded.startswith("~"):  # no home directory, or no such user
        raise ValueError("'~' or '~user' names no home directory on this machine")
    return expanded


# The wire formats an endpoint may be declared as (a test keeps this equal to
# ``budgetware.wire.formats``), and the value that declares none.
FORMAT_NAMES = (
    "openai_chat",
    "openai_responses",
    "anthropic_messages",
    "gemini",
    "ollama_chat",
    "cohere_v2",
    "bedrock_converse",
)
NO_FORMAT = "none"


class ConfigError(ValueError):
    """A setting has an invalid value; the message names the setting."""


class BudgetwareWarning(UserWarning):
    """Something budgetware could not do for a request, and how to get it done."""


Priority = Literal["high", "normal", "low"]

# The budget units a setting takes, as their names (``x-budgetware-unit``, messages).
UNIT_NAMES: tuple[str, ...] = get_args(Unit)


def _not_a_bool(value: Any) -> Any:
    # pydantic's lax int takes True as 1: ``batch_budget=True`` would be one character.
    if isinstance(value, bool):
        raise ValueError("a number, not True/False")
    return value


def _seconds(value: Any) -> Any:
    return parse_duration(value) if isinstance(value, str) else value


# Every number setting of the configuration models is one of these: no booleans.
Count = Annotated[int, BeforeValidator(_not_a_bool)]
Number = Annotated[float, BeforeValidator(_not_a_bool)]
Seconds = Annotated[Number, BeforeValidator(_seconds)]  # also "30m", "12h", "7d"


def check_unit(unit: str) -> str:
    """``unit`` itself, or a ValueError saying what an exact token unit needs installed."""
    if unit.startswith("tokens:"):
        from budgetware.core.tokens import ExactTokensUnavailable, check_available

        try:
            check_available(unit[len("tokens:") :])
        except ExactTokensUnavailable as exc:
            raise ValueError(str(exc)) from None
    return unit


class ToolPolicy(BaseModel):
    """How a tool's results share a batch: ``low`` ones give room first, ``high`` ones are
    cut last; ``min_room`` (in the budget's unit) is kept before others get more than their
    floor. The batch budget always holds.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    priority: Priority = Field(default="normal", description="'high', 'normal' or 'low'.")
    min_room: Count = Field(default=0, ge=0, description="Room a result keeps first, in the unit.")


class McpToolPolicy(ToolPolicy):
    """One tool's settings at the MCP boundary: a result budget, a priority, a floor.

    ``high`` is cut only to the message limit unless ``result_budget`` is set; ``normal``
    and ``low`` get the server's or global budget; ``min_room`` raises it to at least that.
    """

    result_budget: Count | None = Field(
        default=None, description="Per tools/call result of this tool."
    )


def _tool_entries(value: Any) -> Any:
    # A JSON object from the environment; a bare priority stands for {"priority": p}.
    value = _json(value)
    if isinstance(value, dict):
        return {k: {"priority": v} if isinstance(v, str) else v for k, v in value.items()}
    return value


def _json(value: Any) -> Any:
    """A JSON text (from the environment) decoded; anything else as it is."""
    if isinstance(value, str):
        text = value.strip()
        try:
            return json.loads(text) if text else {}
        except ValueError:
            raise ValueError("not valid JSON") from None
    return value


def _json_or(plain: Callable[[str], Any]) -> BeforeValidator:
    """Reads a setting's text (from the environment) as JSON when it opens a list or an
    object, else with ``plain`` (its short form); anything else as it is."""

    def parse(value: Any) -> Any:
        if isinstance(value, str) and value.strip()[:1] not in ("[", "{"):
            return plain(value.strip())
        return _json(value)

    return BeforeValidator(parse)


def _pairs(text: str) -> dict[str, str]:
    # ``pattern=format,pattern=format``; no value in the error: it may reach a log.
    pairs: dict[str, str] = {}
    for item in text.split(",") if text else ():
        pattern, sep, name = item.strip().rpartition("=")
        if not sep or not pattern.strip():
            raise ValueError("expected pattern=format pairs or a JSON object")
        pairs[pattern.strip()] = name.strip()
    return pairs


def _check_patterns(patterns: tuple[str, ...]) -> tuple[str, ...]:
    from budgetware.core.salient import check_patterns

    check_patterns(patterns)
    return patterns


# Per-tool MCP overrides, for the whole boundary and for one server alike.
_McpTools = Annotated[dict[str, Count | McpToolPolicy], BeforeValidator(_tool_entries)]


class McpServerBudget(BaseModel):
    """Overrides for one MCP server: its default result budget and per-tool budgets."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    result_budget: Count | None = Field(
        default=None,
        description="Budget per tools/call result of this server; None: the global one.",
    )
    tools: _McpTools = Field(
        default_factory=dict,
        description="Tool name (or fnmatch pattern) -> result budget, or {'result_budget', "
        "'priority', 'min_room'}.",
    )


class BudgetConfig(BaseModel):
    """Every budgetware setting, validated. Fields left unset in code come from the
    environment (``BUDGETWARE_<SETTING>``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    batch_budget: Count = Field(
        default=200_000,
        description="Budget per batch of tool results, in `unit`; 0 or less, inf or nan disables.",
    )
    unit: Annotated[Unit, AfterValidator(check_unit)] = Field(
        default="chars",
        description=(
            "The unit of every budget: 'chars' (code points), 'utf8_bytes', 'tokens' "
            "(estimated: bytes / 4), or exact tokens 'tokens:o200k_base' / "
            "'tokens:cl100k_base' (extra budgetware[tokens])."
        ),
    )
    persist: bool = Field(default=True, description="Write the full output of a cut result once.")
    artifact_dir: Path | str | None = Field(  # a str is read as a Path (_expand_dir)
        default=None,
        description=(
            "Where artifacts go; unset: the user's cache directory "
            "(~/.cache/budgetware/artifacts on Linux, $XDG_CACHE_HOME when set)."
        ),
    )
    artifact_store: str | None = Field(
        default=None,
        description="The artifact store as a URL: a path or file:// URL (a local directory) "
        "or s3://bucket/prefix (any S3-compatible store); wins over artifact_dir.",
    )
    max_artifact_bytes: Count = Field(
        default=50 * MIB, gt=0, description="Largest single artifact."
    )
    max_store_bytes: Count = Field(
        default=500 * MIB,
        gt=0,
        description="Most bytes the whole store holds: the sweep keeps it at 80% of this "
        "(least recently used first), and a write past it gets no artifact.",
    )
    artifact_min_age: Seconds = Field(
        default=HOUR,
        ge=0,
        description="The sweep never deletes an artifact used more recently than this "
        "(seconds or 1h): one a live conversation still names.",
    )
    artifact_max_age: Seconds = Field(
        default=30 * DAY,
        ge=0,
        description="The sweep deletes artifacts unused this long (seconds or 30d, 12h); "
        "0 keeps them.",
    )
    artifact_sweep_interval: Seconds = Field(
        default=600.0,
        ge=0,
        description="How often a process sweeps the store, off the request path (seconds "
        "or 10m); 0 never.",
    )
    artifact_store_timeout: Seconds = Field(
        default=2.0,
        gt=0,
        description="Seconds an S3 store call may wait to connect or read before the "
        "output is bounded with no reference.",
    )
    raise_errors: bool = Field(
        default=False,
        description="Raise internal errors instead of sending the original request unchanged.",
    )
    endpoints: Annotated[dict[str, str], _json_or(_pairs)] = Field(
        default_factory=dict,
        description=(
            "URL pattern (host and/or path glob) -> wire format, for gateways and "
            "self-hosted servers with their own paths; 'none' leaves an endpoint alone."
        ),
    )
    sniff_unknown_endpoints: bool = Field(
        default=False,
        description="Also bound unknown endpoints whose body looks like a model request.",
    )
    text_results: Annotated[
        tuple[str, ...], _json_or(lambda text: [p.strip() for p in text.split(",") if p.strip()])
    ] = Field(
        default=(),
        description=(
            "Presets for agents that send tool results as plain user text, each such message "
            "a batch of its own: 'smolagents' and 'react' (Observation: messages), 'aider' "
            "(its command output). A comma-separated list in the environment."
        ),
    )
    telemetry: bool = Field(
        default=True,
        description=(
            "Report sizes and counts to OpenTelemetry (metrics, span attributes) when "
            "opentelemetry-api is installed."
        ),
    )
    client_overrides: Literal["clamp", "allow", "ignore"] = Field(
        default="clamp",
        description=(
            "In a gateway (the LiteLLM Proxy callback), what clients' x-budgetware-* headers "
            "may do: 'clamp' lets them tighten the budgets the operator set (environment, "
            "config, key and team metadata), never loosen or disable them; 'allow' lets them "
            "set any (key and team metadata still win); 'ignore' drops them."
        ),
    )
    tool_policies: Annotated[dict[str, ToolPolicy], BeforeValidator(_tool_entries)] = Field(
        default_factory=dict,
        description=(
            "Tool name or fnmatch pattern -> priority ('high', 'normal', 'low') or "
            "{'priority': ..., 'min_room': N}: low-priority results give room first, "
            "high-priority ones are cut last; a min_room counts up to half the budget, "
            "which always holds."
        ),
    )
    history_budget: Count | Literal["auto"] | None = Field(
        default=None,
        description="Budget for the tool results of a whole request (every batch, as sent), "
        "in `unit`; over it, whole results of older batches become one-line stubs naming "
        "their full output. 'auto': half the input window of the model the request names. "
        "Unset, 0 or less: off (docs/history.md).",
    )
    history_keep_batches: Count = Field(
        default=2,
        ge=1,
        description="The newest batches of a request that history_budget never masks.",
    )
    history_step: Number = Field(
        default=0.25,
        gt=0,
        lt=1,
        description="Over history_budget, results are masked until the history is at most "
        "(1 - step) x the budget, so that many turns pass between two steps (each step "
        "changes the prompt prefix once).",
    )
    preview_salient_percent: Count = Field(
        default=25,
        ge=0,
        le=90,
        description="Most of a preview's room for salient lines of the omitted middle; 0: none.",
    )
    preview_tool_hint: bool = Field(
        default=False,
        description="Name the read_tool_output tool in every notice that names a full output "
        "(turn it on once the agent has the tool: docs/retrieval.md).",
    )
    preview_salient_patterns: Annotated[
        tuple[str, ...],
        _json_or(lambda text: (text,) if text else ()),  # a JSON list, or one pattern
        AfterValidator(_check_patterns),
    ] = Field(
        default=(),
        description=(
            "More salient-line patterns: regular expressions matched at a line's start, "
            "against that line alone; refused if they may take unbounded time."
        ),
    )
    session_log: str | None = Field(
        default=None,
        description="Log the sizes budgetware saw, never text, for `budgetware report` and "
        "`budgetware inspect`: 'on' (into ~/.cache/budgetware/sessions on Linux), a "
        "directory, or 'off'. Unset: on under `budgetware run`, else off. Read where a "
        "process's first entry point is set up.",
    )
    mcp_result_budget: Count = Field(
        default=DEFAULT_MCP_RESULT_BUDGET,
        description="MCP boundary: budget per tools/call result (its distinct text), in "
        "`unit`; 0 or less disables.",
    )
    mcp_max_message_bytes: Count = Field(
        default=DEFAULT_MCP_MESSAGE_BYTES,
        description="MCP boundary: largest rewritten result message on the wire, in bytes "
        "(keep it at the mcp client's max_sse_event_size); 0 or less disables.",
    )
    mcp_tools: _McpTools = Field(
        default_factory=dict,
        description="MCP boundary: tool name (or fnmatch pattern) -> result budget, or "
        "{'result_budget', 'priority', 'min_room'}.",
    )
    mcp_servers: Annotated[dict[str, McpServerBudget], BeforeValidator(_json)] = Field(
        default_factory=dict,
        description="MCP boundary: server name, URL or host:port (or pattern) -> "
        '{"result_budget": n, "tools": {...}}.',
    )

    @field_validator("batch_budget", mode="before")
    @classmethod
    def _finite_budget(cls, value: Any) -> Any:
        # A non-finite budget (inf, nan) disables bounding, as 0 does.
        if isinstance(value, float) and not math.isfinite(value):
            return 0
        if isinstance(value, str) and value.strip().lower() in {"inf", "infinity", "nan"}:
            return 0
        return value

    @field_validator("history_budget", mode="before")
    @classmethod
    def _history_budget(cls, value: Any) -> Any:
        # "auto", a number, or off: unset, 0 or less, inf, nan.
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, str):
            text = value.strip().lower()
            if text in ("", "off", "none", "inf", "infinity", "nan"):
                return None
            if text == AUTO:
                return AUTO
        return value

    @field_validator("history_budget")
    @classmethod
    def _history_off(cls, value: int | str | None) -> int | str | None:
        return None if isinstance(value, int) and value <= 0 else value

    @field_validator("text_results")
    @classmethod
    def _known_presets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from budgetware.core.presets import TEXT_RESULT_PRESETS

        unknown = [name for name in value if name not in TEXT_RESULT_PRESETS]
        if unknown:
            valid = ", ".join(sorted(TEXT_RESULT_PRESETS))
            raise ValueError(f"unknown preset {', '.join(map(repr, unknown))} (valid: {valid})")
        return tuple(dict.fromkeys(value))

    @field_validator("artifact_dir", mode="before")
    @classmethod
    def _expand_dir(cls, value: Any) -> Any:
        if isinstance(value, (str, Path)):
            text = str(value)
            if not text.strip():
                return None
            return Path(expand_user(text))
        return value

    @field_validator("session_log", mode="before")
    @classmethod
    def _session_log(cls, value: Any) -> Any:
        if isinstance(value, bool):
            return "on" if value else "off"
        if isinstance(value, (str, Path)):
            text = str(value).strip()
            word = text.lower()
            if word in ("on", "true", "yes", "1"):
                return "on"
            if word in ("off", "false", "no", "0"):
                return "off"
            return os.path.abspath(expand_user(text)) if text else None
        return value

    @field_validator("endpoints")
    @classmethod
    def _check_endpoints(cls, value: dict[str, str]) -> dict[str, str]:
        for pattern, name in value.items():
            if not pattern.strip():
                raise ValueError("an endpoint pattern is empty")
            if name not in FORMAT_NAMES and name != NO_FORMAT:
                raise ValueError(
                    f"unknown wire format {name[:40]!r} "
                    f"(one of {', '.join(FORMAT_NAMES)}, or {NO_FORMAT!r})"
                )
        return value

    @field_validator("artifact_store", mode="before")
    @classmethod
    def _store_url(cls, value: Any) -> Any:
        if isinstance(value, Path):
            value = str(value)
        if isinstance(value, str):
            if not value.strip():
                return None
            parse_store_url(value)  # ValueError names what is wrong
            return value.strip()
        return value

    @field_validator("artifact_max_age")
    @classmethod
    def _ages(cls, value: float, info: ValidationInfo) -> float:
        least = info.data.get("artifact_min_age")
        if least is not None and 0 < value < least:
            raise ValueError(
                "artifact_max_age must be 0 (keep) or at least artifact_min_age "
                f"({value:g} < {least:g} seconds)"
            )
        return value

    @property
    def enabled(self) -> bool:
        """Whether this configuration bounds anything at all."""
        return self.batch_budget > 0 or self.history_budget is not None

    def store_location(self) -> StoreLocation:
        """Where artifacts go: ``artifact_store`` if set, else the artifact directory
        (RuntimeError when the default cannot be named: no home directory)."""
        if self.artifact_store is not None:
            return parse_store_url(self.artifact_store)
        directory = self.artifact_dir or default_artifact_path()
        return StoreLocation("file", path=os.path.abspath(directory))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> BudgetConfig:
        """Defaults < the environment (or ``environ``) < ``overrides``; a ``ConfigError``
        names each bad setting with its variable."""
        if environ is None:
            env: Mapping[str, str] = environment_settings()
        else:
            named = ((name, environ.get(variable_of(name))) for name in cls.model_fields)
            env = {name: value for name, value in named if value and value.strip()}
        labels = {name: variable_of(name) for name in cls.model_fields}
        return _validate({**env, **overrides}, labels)


def variable_of(setting: str) -> str:
    """The environment variable of a setting: ``BUDGETWARE_<SETTING>``."""
    return ENV_PREFIX + setting.upper()


# --- the environment, read by pydantic-settings -------------------------------------------

_VARIABLES = frozenset(variable_of(name) for name in BudgetConfig.model_fields)
_BINDING: type[BaseSettings] | None = None
# (the variables set when last read and their values, the settings read then)
_READ: tuple[tuple[tuple[str, str], ...], Mapping[str, str]] = ((), MappingProxyType({}))


def _binding() -> type[BaseSettings]:
    """``BudgetConfig`` read from ``BUDGETWARE_<FIELD>`` by pydantic-settings (imported at
    the first read)."""
    global _BINDING
    if _BINDING is None:
        from pydantic_settings import BaseSettings, SettingsConfigDict

        class EnvironmentSettings(BaseSettings, BudgetConfig):
            model_config = SettingsConfigDict(
                env_prefix=ENV_PREFIX,
                env_ignore_empty=True,  # `export BUDGETWARE_<SETTING>=` clears it
                enable_decoding=False,  # the validators read JSON and the short forms
            )

        _BINDING = EnvironmentSettings
    return _BINDING


def environment_settings() -> Mapping[str, str]:
    """The settings the environment sets now, as text by field (a blank value is unset);
    read again only when a variable changed."""
    global _READ
    seen = _variables()
    read = _READ
    if seen == read[0]:
        return read[1]
    from pydantic_settings import EnvSettingsSource

    values = {
        name: value
        for name, value in EnvSettingsSource(_binding())().items()
        if not (isinstance(value, str) and value.isspace())
    }
    settings = MappingProxyType(values)
    if _variables() == seen:  # nothing changed while it was read
        _READ = (seen, settings)
    return settings


def _variables() -> tuple[tuple[str, str], ...]:
    """The settings' variables set now, with their values (one pass over the names set)."""
    environ = os.environ
    present = _VARIABLES.intersection(environ)
    if not present:
        return ()
    values = ((name, environ.get(name)) for name in sorted(present))
    return tuple((name, value) for name, value in values if value is not None)


# --- validation and its errors ------------------------------------------------------------


def config_error(exc: ValidationError, labels: Mapping[str, str]) -> ConfigError:
    """A ``ConfigError`` naming each bad setting, with ``labels[setting]`` (its variable or
    option) where there is one."""
    parts = []
    for error in exc.errors():
        name = ".".join(str(p) for p in error["loc"]) or "config"
        top = str(error["loc"][0]) if error["loc"] else ""
        label = f" ({labels[top]})" if top in labels else ""
        message = str(error["msg"]).removeprefix("Value error, ")  # pydantic's own words
        parts.append(f"{name}{label}: {message} (got {error.get('input')!r})")
    return ConfigError("invalid budgetware setting: " + "; ".join(parts))


def _validate(values: Mapping[str, Any], labels: Mapping[str, str]) -> BudgetConfig:
    try:
        return BudgetConfig.model_validate(dict(values))
    except ValidationError as exc:
        raise config_error(exc, labels) from None


def _validate_leaving_out(values: dict[str, Any], from_env: set[str]) -> BudgetConfig:
    """The settings validated with every invalid environment value left out (warned once)."""
    while True:
        try:
            return BudgetConfig.model_validate(values)
        except ValidationError as exc:
            bad = {str(e["loc"][0]): e for e in exc.errors() if e["loc"]}
            droppable = [name for name in bad if name in from_env and name in values]
            if not droppable:
                raise config_error(exc, {n: variable_of(n) for n in from_env}) from None
            for name in droppable:
                reason = str(bad[name]["msg"]).removeprefix("Value error, ")
                if str(values[name]).strip() and str(values[name]).strip() in reason:
                    reason = "invalid value"  # the reason quotes it: never a value in a log
                warn_setting_once(variable_of(name), reason)
                del values[name]


@functools.cache  # once per process
def warn_setting_once(variable: str, reason: str) -> None:
    """Log that an invalid setting is left out; ``reason`` never quotes the value (it may
    be a secret)."""
    logger.warning(
        "budgetware: ignoring %s (%s): calls go on without this setting; fix the value",
        variable,
        reason,
    )


def check_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a partial set of settings now, so a mistake fails where it is made."""
    unknown = sorted(set(overrides) - set(BudgetConfig.model_fields))
    if unknown:
        import difflib

        close = {n: difflib.get_close_matches(n, BudgetConfig.model_fields, n=1) for n in unknown}
        named = (f"{n} (did you mean {close[n][0]}?)" if close[n] else n for n in unknown)
        raise ConfigError(f"unknown budgetware setting(s): {', '.join(named)}")
    checked = _validate(overrides, {})
    return {name: getattr(checked, name) for name in overrides}


# --- the layers ----------------------------------------------------------------------------

_OVERRIDES: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "budgetware_overrides", default=MappingProxyType({})
)


def current_overrides() -> Mapping[str, Any]:
    """The settings of the innermost active ``budget(...)`` block (empty outside one)."""
    return _OVERRIDES.get()


@contextmanager
def budget(**settings: Any) -> Iterator[None]:
    """Apply settings (``batch_budget=...``, ``persist=False``, ...) to requests made inside.

    Blocks nest (the inner one wins per setting). The settings live in a ContextVar: they
    follow into asyncio tasks created inside and threads started with
    ``contextvars.copy_context().run``, never into unrelated ones.
    """
    checked = check_overrides(settings)
    token = _OVERRIDES.set(MappingProxyType({**_OVERRIDES.get(), **checked}))
    try:
        check_settings()  # a bad setting fails here, not on a call
    except BaseException:
        _OVERRIDES.reset(token)
        raise
    reads = _block_reads
    try:
        yield
    finally:
        _OVERRIDES.reset(token)
    if _block_reads == reads:
        _unread_block()


_block_reads = 0  # resolutions that read a budget() block: an unread block did nothing
_warned_unread = False


def _unread_block() -> None:
    """Warn once that a ``budget()`` block did nothing: no entry point was ever set up."""
    global _warned_unread
    # Looked up, not imported (observe imports this module): every entry point loads it.
    observe = sys.modules.get("budgetware.core.observe")
    if _warned_unread or getattr(observe, "entry_points_set_up", False):
        return
    _warned_unread = True
    warnings.warn(
        "budgetware: a budget() block ended with nothing in this process reading its "
        "settings: budget() and x-budgetware-* headers apply only to requests budgetware "
        "sees (after budgetware.instrument(), through a BudgetTransport or an SDK "
        "integration; docs/quickstart.md)",
        BudgetwareWarning,
        stacklevel=4,
    )


def resolve_config(
    base: BudgetConfig | None = None,
    *,
    request_overrides: Mapping[str, Any] | None = None,
    lenient: bool = False,
) -> BudgetConfig:
    """The configuration for one request: environment < ``base`` (its fields set) <
    ``budget(...)`` block < ``request_overrides``. An invalid environment value raises
    ``ConfigError``; with ``lenient`` (the request path) it is left out, warned once.
    """
    global _block_reads
    env = environment_settings()
    block = _OVERRIDES.get()
    if block:
        _block_reads += 1
    if not env and not block and not request_overrides:
        return _DEFAULT if base is None else base
    values = dict(env)
    if base is not None:
        values.update({name: getattr(base, name) for name in base.model_fields_set})
    values.update(block)
    if request_overrides:
        values.update(request_overrides)
    from_env = {name for name in env if values[name] is env[name]}
    if lenient:
        return _validate_leaving_out(values, from_env)
    return _validate(values, {name: variable_of(name) for name in from_env})


def check_settings(config: BudgetConfig | None = None) -> BudgetConfig:
    """Validate every setting an entry point will use, where it is set up, not on a call."""
    if config is not None and not isinstance(config, BudgetConfig):
        raise TypeError(f"config must be a BudgetConfig, not {type(config).__name__}")
    return resolve_config(config)


_DEFAULT = BudgetConfig()
