"""Privacy-safe boundary diagnostics: sizes and keyed hashes of tool results, never their text.

On while ``BUDGETWARE_DEBUG_LOG_FILE`` names a file. A boundary a tool result crosses emits
one JSON line when a value there is oversized (JSON bytes > 65,536) or the boundary changed
it (docs/diagnostics.md). Hooks are guarded by ``if diagnostics.enabled:``; the core reports
through ``core.observe``, the HTTP layer through ``recorder.submitted``. Nothing here raises
into the caller or changes a value.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import os
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from budgetware.core import observe
from budgetware.core.jsonio import dumps_bytes
from budgetware.core.measure import json_string_bytes, measure
from budgetware.diagnostics.values import (
    DISPLAY_VALUES,
    Value,
    artifact_kind,
    batch_ids,
    batch_values,
    mcp_values,
)

if TYPE_CHECKING:
    from budgetware.core.models import ToolResult

__all__ = [
    "ENV_VAR",
    "EVENT",
    "active",
    "boundary",
    "configure",
    "display_pair",
    "display_wire",
    "enabled",
    "key_id",
    "keyed_hash",
    "observes_mcp_results",
    "refresh",
    "reset",
    "tool_results",
    "tool_results_wire",
]

ENV_VAR = "BUDGETWARE_DEBUG_LOG_FILE"
EVENT = "budgetware.tool_result.boundary"
OVERSIZED_BYTES = 65_536
DEFAULT_LIMIT = 50
DEFAULT_WINDOW = 60.0

_OFF_VALUES = frozenset({"", "0", "false", "off", "no"})
# The log file: append-only, created 0600, never through a symlink; non-blocking at open so
# that a FIFO planted there cannot hang the caller (refused: not a regular file).
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_LOG_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NONBLOCK | getattr(os, "O_BINARY", 0)
_LOG_FLAGS |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

_F = TypeVar("_F", bound=Callable[..., Any])
_P = ParamSpec("_P")

_raw: Any = object()  # the environment value the cached decision was made from
_on = False
_log_path: str | None = None  # the file named by the environment variable
_log_fd: int | None = None  # opened at its first line
_override_sink: Callable[[bytes], None] | None = None  # set by configure(): forces on
_subscription: observe.Subscription | None = None  # the core's batch reports, while on

# The flag hooks test; re-decided by ``active()`` when the variable changed, ``refresh()``,
# ``configure()`` and ``reset()``.
enabled = False


def active() -> bool:
    """Whether diagnostics are on, deciding again only when the variable changed."""
    raw = os.environ.get(ENV_VAR)
    if raw == _raw:
        return _on
    return _decide(raw)


def refresh() -> bool:
    """Re-read the environment now (also closes a log file opened for a previous path)."""
    return _decide(os.environ.get(ENV_VAR))


def _decide(raw: Any) -> bool:
    """Decide from the variable's value; while on, the core's batch reports are observed."""
    global _raw, _on, enabled, _log_path, _subscription
    with _lock:
        _raw = raw
        path: str | None = None
        if raw is not None and raw.strip().lower() not in _OFF_VALUES:
            path = raw.strip()
        if path != _log_path:
            _close_log()
        _log_path = path
        _on = enabled = _override_sink is not None or path is not None
        if _on and _subscription is None:
            _subscription = observe.subscribe(
                batch=lambda report: tool_results(report.boundary, report.before, report.after)
            )
        elif not _on and _subscription is not None:
            _subscription.close()
            _subscription = None
        return _on


# --- configuration (tests inject the key, the clock, the limit and a sink) ---

_lock = threading.RLock()
_key = secrets.token_bytes(32)
_key_id = ""
_clock: Callable[[], float] = time.monotonic
_limit = DEFAULT_LIMIT
_window = DEFAULT_WINDOW
_window_start: float | None = None
_window_count = 0
_suppressed = 0
failures = 0  # swallowed internal errors, for tests and debugging


def _set_key(key: bytes) -> None:
    global _key, _key_id
    _key = bytes(key)
    # Lets `budgetware diagnose` tell processes apart: their hashes are not comparable.
    _key_id = keyed_hash("budgetware.diagnostics.key-id")[:16]


def configure(
    *,
    key: bytes | None = None,
    clock: Callable[[], float] | None = None,
    limit: int | None = None,
    window: float | None = None,
    sink: Callable[[bytes], None] | None = None,
) -> None:
    """Override the HMAC key, the rate limit's clock, limit or window, or the sink: a
    ``sink`` receives each encoded line and turns diagnostics on until ``reset()``."""
    global _clock, _limit, _window, _override_sink
    with _lock:
        if key is not None:
            _set_key(key)
        if clock is not None:
            _clock = clock
        if limit is not None:
            _limit = int(limit)
        if window is not None:
            _window = float(window)
        if sink is not None:
            _override_sink = sink
    refresh()


def reset() -> None:
    """Back to the defaults: a fresh random key, the real clock, 50 per 60 s, no sink."""
    global _clock, _limit, _window, _override_sink, _window_start, _window_count, _suppressed
    global failures
    with _lock:
        _set_key(secrets.token_bytes(32))
        _clock, _limit, _window = time.monotonic, DEFAULT_LIMIT, DEFAULT_WINDOW
        _override_sink = None
        _window_start, _window_count, _suppressed = None, 0, 0
        failures = 0
        _close_log()
    refresh()


def _after_fork_in_child() -> None:
    """A new key (a child's hashes are not comparable with its parent's), not its log fd."""
    global _lock, _log_fd
    _lock = threading.RLock()
    _log_fd = None
    _set_key(secrets.token_bytes(32))


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# --- hashing and classification ---


def keyed_hash(value: str) -> str:
    """HMAC-SHA-256 (hex) of one value: its 8-byte length, then its UTF-16-LE bytes (lone
    surrogates kept distinct)."""
    data = value.encode("utf-16-le", "surrogatepass")
    mac = hmac.new(_key, len(data).to_bytes(8, "big"), hashlib.sha256)
    mac.update(data)
    return mac.hexdigest()


_set_key(_key)


def key_id() -> str:
    """A fingerprint of this process's key: equal ``key_id`` means comparable hashes."""
    return _key_id


def _artifact(files: object) -> dict[str, Any]:
    """One tool call's state and kinds; anything but the tri-state is ``undecided``."""
    try:
        if files is None or isinstance(files, (str, bytes)) or not isinstance(files, Iterable):
            raise TypeError("not a sequence of references")
        refs = list(files)
    except Exception:
        return {"state": "undecided", "kinds": []}
    kinds = [artifact_kind(f) if isinstance(f, str) else "unknown" for f in refs]
    return {"state": "reusable" if refs else "none", "kinds": list(dict.fromkeys(kinds))}


def _artifacts(artifacts: Callable[[], Iterable[object]]) -> list[dict[str, Any]] | None:
    """Each tool call's artifacts, or None when the list itself cannot be read."""
    try:
        return [_artifact(item) for item in artifacts()]
    except Exception:
        return None


def _measure_value(value: Sequence[Any], slots: dict[str, int]) -> dict[str, Any]:
    representation, text = value[0], value[1]
    slot = slots.get(representation, 0)
    slots[representation] = slot + 1
    out: dict[str, Any] = {
        "representation": representation,
        "slot": slot,
        "code_points": len(text),
        "raw_utf8_bytes": measure(text, "utf8_bytes"),
        "json_utf8_bytes": json_string_bytes(text),
        "hmac_sha256": keyed_hash(text),
    }
    if len(value) > 2 and isinstance(value[2], int):
        out["call"] = value[2]
    return out


def _ids(ids: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("session", "request", "tool_call", "tool_name"):
        value = ids.get(name)
        if value is None:
            continue
        if isinstance(value, str):
            out[f"{name}_hmac"] = keyed_hash(value)
        else:
            out[f"{name}_hmacs"] = [keyed_hash(v) if isinstance(v, str) else None for v in value]
    return out


# --- the event pipeline ---


def _hook(fn: Callable[_P, None]) -> Callable[_P, None]:
    """Run ``fn`` only while diagnostics are on, never raising (a failure is counted)."""

    @functools.wraps(fn)
    def hook(*args: _P.args, **kwargs: _P.kwargs) -> None:
        global failures
        if active():
            try:
                fn(*args, **kwargs)
            except Exception:
                failures += 1

    return hook


@_hook
def boundary(
    stage: str,
    *,
    values: Callable[[], Iterable[Value]] | None = None,
    artifacts: Callable[[], Iterable[object]] | None = None,
    ids: Callable[[], Mapping[str, Any]] | None = None,
    mutated: bool = False,
    wire_bytes: int | None = None,
) -> None:
    """Emit one event if a value is oversized or ``mutated``; the thunks are called only
    when diagnostics are on. ``ids`` maps session, request, tool_call and tool_name to
    a string or a list in wire order; ``artifacts`` is per tool call. Never raises."""
    _emit(stage, values, artifacts, ids, mutated, wire_bytes)


def _pair(
    input_stage: str,
    output_stage: str,
    *,
    before: Callable[[], Iterable[Value]],
    after: Callable[[], Iterable[Value]],
    artifacts_before: Callable[[], Iterable[object]] | None = None,
    artifacts_after: Callable[[], Iterable[object]] | None = None,
    ids: Callable[[], Mapping[str, Any]] | None = None,
    mutated: bool | Callable[[], bool] = False,
) -> None:
    """Emit a boundary's input and output events once its work is done: a changed input is
    logged even when not oversized, to compare its hash with the output's."""
    changed = bool(mutated()) if callable(mutated) else bool(mutated)
    id_map = None if ids is None else functools.cache(ids)
    _emit(input_stage, before, artifacts_before, id_map, changed, None)
    _emit(output_stage, after, artifacts_after, id_map, changed, None)


@_hook
def tool_results(name: str, before: Sequence[ToolResult], after: Sequence[ToolResult]) -> None:
    """The input and output events of a ToolResult batch (``name``: finalizer, guard or
    producer); mutated when any entry is not the same object afterwards."""
    _pair(
        f"{name}_input",
        f"{name}_output",
        before=lambda: batch_values(before),
        after=lambda: batch_values(after),
        artifacts_before=lambda: [e.persisted_output_files for e in before],
        artifacts_after=lambda: [e.persisted_output_files for e in after],
        ids=lambda: batch_ids(after),
        mutated=lambda: (
            len(before) != len(after) or any(a is not b for a, b in zip(before, after))
        ),
    )


@_hook
def tool_results_wire(
    stage: str, batches: Sequence[Sequence[ToolResult]], *, wire_bytes: int | None = None
) -> None:
    """One event for a request's ToolResult batches as read back from its body (which
    carries no artifact decision)."""
    entries = [entry for batch in batches for entry in batch]
    values = functools.partial(batch_values, entries)
    _emit(stage, values, None, functools.partial(batch_ids, entries), False, wire_bytes)


@_hook
def display_pair(kind: str, before: Any, after: Any) -> None:
    """``<kind>_projection_input``/``_output`` around a display projection (acp or
    headless); mutated when it returned a different object."""
    extract = DISPLAY_VALUES[kind]
    _pair(
        f"{kind}_projection_input",
        f"{kind}_projection_output",
        before=lambda: extract(before)[0],
        after=lambda: extract(after)[0],
        ids=lambda: extract(after)[1],
        mutated=before is not after,
    )


@_hook
def display_wire(kind: str, payload: Any, written: bytes) -> None:
    """``<kind>_wire`` for a frame (or a list of frames) and the exact bytes written."""
    extract = DISPLAY_VALUES[kind]
    values = functools.cache(lambda: extract(payload))
    _emit(f"{kind}_wire", lambda: values()[0], None, lambda: values()[1], False, len(written))


def observes_mcp_results(fn: _F) -> _F:
    """Emit ``producer_input``/``_output`` around a producer bounding one MCP result, which
    returns an object with ``result`` and ``refs`` (None when unchanged)."""

    @functools.wraps(fn)
    def wrapper(result: Any, *args: Any, **kwargs: Any) -> Any:
        outcome = fn(result, *args, **kwargs)
        if enabled:
            _mcp_pair(result, outcome.result, outcome.refs)
        return outcome

    return cast(_F, wrapper)


@_hook
def _mcp_pair(before: Any, after: Any, refs: Sequence[str] | None) -> None:
    _pair(
        "producer_input",
        "producer_output",
        before=lambda: mcp_values(before),
        after=lambda: mcp_values(after),
        artifacts_before=lambda: [None],
        artifacts_after=lambda: [None if refs is None else tuple(refs)],
        mutated=after is not before,
    )


def _admit() -> int | None:
    """Count one event against the window: its suppressed_count, or None when dropped."""
    global _window_start, _window_count, _suppressed
    now = _clock()
    start = _window_start
    if start is None or not 0 <= now - start < _window:
        _window_start, _window_count = now, 0  # a new fixed window (or a clock went back)
    if _window_count >= _limit:
        _suppressed += 1
        return None
    _window_count += 1
    dropped, _suppressed = _suppressed, 0
    return dropped


def _emit(
    stage: str,
    values: Callable[[], Iterable[Value]] | None,
    artifacts: Callable[[], Iterable[object]] | None,
    ids: Callable[[], Mapping[str, Any]] | None,
    changed: bool,
    wire_bytes: int | None,
) -> None:
    items: list[Sequence[Any]] | None = None
    if not changed:  # only an oversized value makes an unchanged boundary worth an event
        items = _evaluate(values)
        if not any(json_string_bytes(v[1], OVERSIZED_BYTES) > OVERSIZED_BYTES for v in items):
            return
    with _lock:
        suppressed = _admit()
    if suppressed is None:
        return
    if items is None:
        items = _evaluate(values)
    slots: dict[str, int] = {}
    event: dict[str, Any] = {
        "event": EVENT,
        "time": round(time.time(), 3),
        "key_id": _key_id,
        "stage": stage,
        "mutated": changed,
        "values": [_measure_value(v, slots) for v in items],
    }
    described = _artifacts(artifacts) if artifacts is not None else None
    if described is not None:
        event["artifacts"] = described
    if ids is not None:
        event.update(_ids(ids()))
    if wire_bytes is not None:
        event["wire_utf8_bytes"] = wire_bytes
    if suppressed:
        event["suppressed_count"] = suppressed
    line = dumps_bytes(event) + b"\n"
    with _lock:
        sink = _override_sink
        if sink is not None:
            sink(line)
        else:
            _write_log(line)


def _write_log(line: bytes) -> None:
    """Append one line to the log file, opening it at its first line."""
    global _log_fd
    if _log_fd is None:
        if _log_path is None:
            return
        fd = os.open(_log_path, _LOG_FLAGS, 0o600)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError("the debug log path does not name a regular file")
            if _NONBLOCK:
                os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        _log_fd = fd
    view = memoryview(line)
    while view:  # one write per line; a regular file takes it whole in practice
        view = view[os.write(_log_fd, view) :]


def _close_log() -> None:
    global _log_fd
    fd, _log_fd = _log_fd, None
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def _evaluate(values: Callable[[], Iterable[Value]] | None) -> list[Any]:
    return [v for v in values() if len(v) >= 2 and isinstance(v[1], str)] if values else []


active()
