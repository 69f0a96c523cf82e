"""One validated configuration model, its environment variables, and per-request overrides."""

from __future__ import annotations

import contextvars
import json
import logging
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Literal, get_args
from urllib.parse import unquote

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from budgetware.core.measure import Unit
from budgetware.core.paths import default_artifact_path

__all__ = [
    "ENV_PREFIX",
    "FORMAT_NAMES",
    "NO_FORMAT",
    "UNIT_NAMES",
    "BudgetConfig",
    "ConfigError",
    "Count",
    "Number",
    "Priority",
    "StoreLocation",
    "ToolPolicy",
    "budget",
    "check_settings",
    "current_overrides",
    "default_artifact_dir",
    "is_unset",
    "parse_duration",
    "parse_store_url",
    "register_setting_check",
    "resolve_config",
    "warn_setting_once",
]

logger = logging.getLogger("budgetware")

ENV_PREFIX = "BUDGETWARE_"
MIB = 1024 * 1024
HOUR = 3600.0
DAY = 24 * HOUR

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
    return StoreLocation("file", path=os.path.abspath(os.path.expanduser(text)))


# The wire formats an endpoint may be declared as (``budgetware.wire.formats``: a test keeps
# the two lists equal), and the value that declares an endpoint as none of them.
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


def default_artifact_dir() -> Path:
    """The user's cache directory for budgetware artifacts (XDG on Linux)."""
    return Path(default_artifact_path())


Priority = Literal["high", "normal", "low"]

# The budget units a setting takes, as their names (``x-budgetware-unit``, messages).
UNIT_NAMES: tuple[str, ...] = get_args(Unit)


def _not_a_bool(value: Any) -> Any:
    # pydantic's lax int and float take True and False as 1 and 0: ``batch_budget=True``
    # would be a budget of one character. No number setting means a switch.
    if isinstance(value, bool):
        raise ValueError("a number, not True/False")
    return value


# Every number setting of the configuration models (``BudgetConfig``, ``ToolPolicy``, the
# MCP models) is one of these: they refuse booleans, with one validator for all of them.
Count = Annotated[int, BeforeValidator(_not_a_bool)]
Number = Annotated[float, BeforeValidator(_not_a_bool)]


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
    """How a tool's results share a batch: a priority, and the least room they keep.

    ``low`` results give room first; ``high`` ones are cut only when the rest, down to its
    floor, cannot make room. ``min_room`` (in the budget's unit) is the room a result keeps
    before any other result gets more than its own floor; the batch budget always holds.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    priority: Priority = Field(default="normal", description="'high', 'normal' or 'low'.")
    min_room: Count = Field(default=0, ge=0, description="Room a result keeps first, in the unit.")


class BudgetConfig(BaseModel):
    """Every budgetware setting, validated; unset fields fall back to the environment."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    batch_budget: Count = Field(
        default=200_000,
        description="Budget per batch of tool results, in `unit`; 0 or less, inf or nan disables.",
    )
    unit: Unit = Field(
        default="chars",
        description=(
            "'chars' (code points), 'utf8_bytes', 'tokens' (estimated: bytes / 4), or exact "
            "tokens 'tokens:o200k_base' / 'tokens:cl100k_base' (extra budgetware[tokens])."
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
    artifact_max_age: Number = Field(
        default=30 * DAY,
        ge=0,
        description="The sweep deletes artifacts unused this long (seconds or 30d, 12h); "
        "0 keeps them.",
    )
    artifact_min_age: Number = Field(
        default=HOUR,
        ge=0,
        description="The sweep never deletes an artifact used more recently than this "
        "(seconds or 1h): one a live conversation still names.",
    )
    artifact_sweep_interval: Number = Field(
        default=600.0,
        ge=0,
        description="How often a process sweeps the store, off the request path (seconds "
        "or 10m); 0 never.",
    )
    artifact_store_timeout: Number = Field(
        default=2.0,
        gt=0,
        description="Seconds an S3 store call may wait to connect or read before the "
        "output is bounded with no reference.",
    )
    raise_errors: bool = Field(
        default=False,
        description="Raise internal errors instead of sending the original request unchanged.",
    )
    endpoints: dict[str, str] = Field(
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
    text_results: tuple[str, ...] = Field(
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
    tool_policies: dict[str, ToolPolicy] = Field(
        default_factory=dict,
        description=(
            "Tool name or fnmatch pattern -> priority ('high', 'normal', 'low') or "
            "{'priority': ..., 'min_room': N}: low-priority results give room first, "
            "high-priority ones are cut last; a min_room counts up to half the budget, "
            "which always holds."
        ),
    )
    preview_json: bool = Field(
        default=True,
        description="Shorten a JSON document to valid JSON of the same shape (else a text cut).",
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
    preview_salient_patterns: tuple[str, ...] = Field(
        default=(),
        description=(
            "More salient-line patterns: regular expressions matched at a line's start, "
            "against that line alone; refused if they may take unbounded time."
        ),
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

    @field_validator("unit")
    @classmethod
    def _exact_unit(cls, value: str) -> str:
        return check_unit(value)

    @field_validator("tool_policies", mode="before")
    @classmethod
    def _parse_policies(cls, value: Any) -> Any:
        # From the environment: a JSON object. A bare priority stands for {"priority": p}.
        if isinstance(value, str):
            text = value.strip()
            value = json.loads(text) if text else {}  # a ValueError is a validation error
        if isinstance(value, dict):
            return {
                pattern: {"priority": policy} if isinstance(policy, str) else policy
                for pattern, policy in value.items()
            }
        return value

    @field_validator("preview_salient_patterns", mode="before")
    @classmethod
    def _patterns(cls, value: Any) -> Any:
        # From the environment: a JSON list, or one pattern.
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                try:
                    value = json.loads(text)
                except ValueError:
                    raise ValueError("expected a JSON list of patterns") from None
            else:
                value = (text,) if text else ()
        if isinstance(value, list):
            value = tuple(value)
        if isinstance(value, tuple):
            from budgetware.core.salient import check_patterns

            # Each compiles, none may cost without bound, and all combine into one pattern
            # (the one the previews use): a ValueError says which and why.
            check_patterns(value)
        return value

    @field_validator("text_results", mode="before")
    @classmethod
    def _preset_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return [part.strip() for part in text.split(",") if part.strip()]
        return value

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
        if isinstance(value, str):
            if not value.strip():
                return None
            return Path(value).expanduser()
        if isinstance(value, Path):
            return value.expanduser()
        return value

    @field_validator("endpoints", mode="before")
    @classmethod
    def _parse_endpoints(cls, value: Any) -> Any:
        # From the environment: a JSON object, or ``pattern=format,pattern=format``.
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return {}
            if text.startswith("{"):
                return json.loads(text)  # a ValueError becomes a validation error
            pairs = {}
            for item in text.split(","):
                pattern, sep, name = item.strip().rpartition("=")
                if not sep or not pattern.strip():
                    # No value in the message: it may reach a log (names a host).
                    raise ValueError("expected pattern=format pairs or a JSON object")
                pairs[pattern.strip()] = name.strip()
            return pairs
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

    @field_validator(
        "artifact_max_age",
        "artifact_min_age",
        "artifact_sweep_interval",
        "artifact_store_timeout",
        mode="before",
    )
    @classmethod
    def _duration(cls, value: Any) -> Any:
        if isinstance(value, str):
            return parse_duration(value)
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

    @model_validator(mode="after")
    def _ages(self) -> BudgetConfig:
        if 0 < self.artifact_max_age < self.artifact_min_age:
            raise ValueError(
                "artifact_max_age must be 0 (keep) or at least artifact_min_age "
                f"({self.artifact_max_age:g} < {self.artifact_min_age:g} seconds)"
            )
        return self

    @property
    def enabled(self) -> bool:
        """Whether this configuration bounds anything at all."""
        return self.batch_budget > 0

    def resolved_artifact_dir(self) -> Path:
        """The artifact directory in effect (configured, or the default)."""
        return Path(self.artifact_dir) if self.artifact_dir is not None else default_artifact_dir()

    def store_location(self) -> StoreLocation:
        """Where artifacts go: ``artifact_store`` if set, else the artifact directory.

        May raise (RuntimeError, KeyError, OSError) when the default directory cannot be
        named (no home directory).
        """
        if self.artifact_store is not None:
            return parse_store_url(self.artifact_store)
        return StoreLocation("file", path=os.path.abspath(self.resolved_artifact_dir()))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> BudgetConfig:
        """Defaults, then ``BUDGETWARE_*`` variables, then ``overrides``."""
        values = env_values(os.environ if environ is None else environ)
        values.update(overrides)
        return _validate(values, source="environment")

    def merged(self, overrides: Mapping[str, Any]) -> BudgetConfig:
        """A copy with ``overrides`` applied and validated."""
        if not overrides:
            return self
        values = {name: getattr(self, name) for name in type(self).model_fields}
        values.update(overrides)
        return _validate(values, source="override")


def env_values(environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings present in ``environ`` as ``BUDGETWARE_<FIELD>``, unvalidated.

    An empty value (or only spaces) counts as unset: ``export BUDGETWARE_<FIELD>=`` clears
    a setting.
    """
    found: dict[str, Any] = {}
    if environ is os.environ:
        # Every request resolves its settings. ``os.environ.get`` of a missing name raises
        # and catches a KeyError inside: for every field of the model that cost about 20 us
        # a request. ``os.environ`` keeps its variables in a dict of encoded names, which
        # is read here as ``os.environ`` itself reads it (its own encodekey/decodevalue).
        data = getattr(environ, "_data", None)
        decode = getattr(environ, "decodevalue", None)
        names = _encoded_env_names(environ)
        if isinstance(data, dict) and callable(decode) and names is not None:
            for name, key in names:
                raw = data.get(key)
                if raw is not None:
                    value = decode(raw)
                    if not is_unset(value):
                        found[name] = value
            return found
    for name, variable in _ENV_NAMES:
        value = environ.get(variable)
        if value is not None and not is_unset(value):
            found[name] = value
    return found


def is_unset(value: str) -> bool:
    """Whether an environment value means "unset": empty, or only whitespace."""
    return not value or value.isspace()


# Each field and its environment variable, in the model's order.
_ENV_NAMES = tuple((name, ENV_PREFIX + name.upper()) for name in BudgetConfig.model_fields)
_ENCODED_NAMES: dict[int, tuple[Callable[[str], object], tuple[tuple[str, object], ...]]] = {}


def _encoded_env_names(environ: object) -> tuple[tuple[str, object], ...] | None:
    """The variables' names as ``os.environ`` stores them (None if it has no encodekey)."""
    encode = getattr(environ, "encodekey", None)
    if not callable(encode):
        return None
    cached = _ENCODED_NAMES.get(id(environ))
    if cached is not None and cached[0] is encode:
        return cached[1]
    names = tuple((name, encode(variable)) for name, variable in _ENV_NAMES)
    _ENCODED_NAMES[id(environ)] = (encode, names)
    return names


def _validate(
    values: Mapping[str, Any], *, source: str, env_names: set[str] | None = None
) -> BudgetConfig:
    try:
        return BudgetConfig.model_validate(dict(values))
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source, env_names)) from None


def _describe(exc: ValidationError, source: str, env_names: set[str] | None = None) -> str:
    parts = []
    for error in exc.errors():
        name = ".".join(str(p) for p in error["loc"]) or "config"
        top = str(error["loc"][0]) if error["loc"] else ""
        from_env = source == "environment" or (env_names is not None and top in env_names)
        env = f" ({ENV_PREFIX}{top.upper()})" if from_env and top else ""
        message = str(error["msg"]).removeprefix("Value error, ")  # pydantic's own words
        parts.append(f"{name}{env}: {message} (got {error.get('input')!r})")
    return "invalid budgetware setting: " + "; ".join(parts)


def check_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a partial set of settings now, so a mistake fails where it is made."""
    unknown = sorted(set(overrides) - set(BudgetConfig.model_fields))
    if unknown:
        raise ConfigError(f"unknown budgetware setting(s): {', '.join(unknown)}")
    checked = BudgetConfig.model_construct().merged(overrides) if overrides else None
    if checked is None:
        return {}
    return {name: getattr(checked, name) for name in overrides}


_NO_OVERRIDES: Mapping[str, Any] = MappingProxyType({})
_OVERRIDES: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "budgetware_overrides", default=_NO_OVERRIDES
)


def current_overrides() -> Mapping[str, Any]:
    """The settings of the innermost active ``budget(...)`` block (empty outside one)."""
    return _OVERRIDES.get()


@contextmanager
def budget(**settings: Any) -> Iterator[None]:
    """Apply settings (``batch_budget=...``, ``persist=False``, ...) to requests made inside.

    Blocks nest (the inner one wins per setting). The settings live in a ContextVar, so they
    follow the code into asyncio tasks created inside the block, and into threads started
    with ``contextvars.copy_context().run``; they never leak into unrelated threads or tasks.
    """
    checked = check_overrides(settings)
    token = _OVERRIDES.set(MappingProxyType({**_OVERRIDES.get(), **checked}))
    try:
        # The settings in effect inside the block, environment included, fail here.
        check_settings()
    except BaseException:
        _OVERRIDES.reset(token)
        raise
    try:
        yield
    finally:
        _OVERRIDES.reset(token)


def resolve_config(
    base: BudgetConfig | None = None,
    *,
    request_overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    lenient: bool = False,
) -> BudgetConfig:
    """The configuration in effect for one request, from wide to narrow.

    environment < ``base`` (fields explicitly set on it) < the active ``budget(...)``
    block < ``request_overrides`` (from ``x-budgetware-*`` headers). An invalid
    environment value raises ``ConfigError`` naming the variable; with ``lenient`` (the
    request path, where a value that turned bad must not break a call) it is left out
    instead and logged once.
    """
    env = env_values(os.environ if environ is None else environ)
    values = dict(env)
    if base is not None:
        values.update({name: getattr(base, name) for name in base.model_fields_set})
    values.update(current_overrides())
    if request_overrides:
        values.update(request_overrides)
    if not values:
        return _DEFAULT
    # Every request resolves its configuration; the same settings recur, so the validated
    # model (immutable) is reused instead of validating again.
    try:
        key = tuple(sorted((k, _hashable(v)) for k, v in values.items()))
        hash(key)
    except TypeError:  # an unhashable value: validate without caching
        key = None
    cached = _RESOLVED.get(key) if key is not None else None
    if cached is None and lenient and key is not None:
        cached = _RESOLVED.get(("lenient", key))
    if cached is not None:
        return cached
    from_env = {name for name in env if values[name] is env[name]}
    try:
        resolved = _validate(values, source="config", env_names=from_env)
        cache_key: Any = key
    except ConfigError:
        if not lenient:
            raise
        resolved = _validate_without_bad_env(values, from_env)
        cache_key = ("lenient", key)
    if key is not None:
        if len(_RESOLVED) >= 256:
            _RESOLVED.clear()
        _RESOLVED[cache_key] = resolved
    return resolved


def _validate_without_bad_env(values: Mapping[str, Any], from_env: set[str]) -> BudgetConfig:
    """The settings validated with every invalid environment value left out (logged once)."""
    kept = dict(values)
    while True:
        try:
            return BudgetConfig.model_validate(kept)
        except ValidationError as exc:
            bad = {str(e["loc"][0]): e["msg"] for e in exc.errors() if e["loc"]}
            droppable = [name for name in bad if name in from_env and name in kept]
            if not droppable:
                raise ConfigError(_describe(exc, "config", from_env)) from None
            for name in droppable:
                warn_setting_once(ENV_PREFIX + name.upper(), bad[name])
                del kept[name]


_WARNED_SETTINGS: set[tuple[str, str]] = set()


def warn_setting_once(variable: str, reason: str) -> None:
    """Log, once per process, that an invalid setting is left out of a call that goes on.

    ``reason`` says what is wrong, never the value (it may be a path or a secret).
    """
    key = (variable, reason)
    if key in _WARNED_SETTINGS:
        return
    if len(_WARNED_SETTINGS) < 1024:
        _WARNED_SETTINGS.add(key)
    logger.warning(
        "budgetware: ignoring %s (%s): calls go on without this setting; fix the value",
        variable,
        reason,
    )


SettingCheck = Callable[[], object]
SETTING_CHECKS: list[SettingCheck] = []


def register_setting_check(check: SettingCheck) -> None:
    """Run ``check`` (which raises ``ConfigError``) wherever an entry point is set up.

    Features with settings of their own (the MCP boundary's ``BUDGETWARE_MCP_*``) register
    here, so that ``instrument()``, the transports and ``budget()`` validate them too.
    """
    if check not in SETTING_CHECKS:
        SETTING_CHECKS.append(check)


def check_settings(config: BudgetConfig | None = None) -> BudgetConfig:
    """Validate every setting an entry point will use, now: the ``ConfigError`` of a bad
    value (naming its variable) surfaces where the entry point is set up, not on a call."""
    if config is not None and not isinstance(config, BudgetConfig):
        raise TypeError(f"config must be a BudgetConfig, not {type(config).__name__}")
    resolved = resolve_config(config)
    for check in SETTING_CHECKS:
        check()
    return resolved


def _hashable(value: Any) -> Any:
    # Dict settings (endpoints) are part of the key in their order: the first match wins.
    return tuple(value.items()) if isinstance(value, dict) else value


_DEFAULT = BudgetConfig()
_RESOLVED: dict[Any, BudgetConfig] = {}
