"""Privacy-safe boundary diagnostics: sizes and keyed hashes of tool results, never their text.

Off unless ``BUDGETWARE_DEBUG_LOG_FILE`` names a file (``''``, ``0``, ``false``, ``off``
and ``no`` mean off). Each boundary a tool result crosses may emit one JSON line, event
``budgetware.tool_result.boundary``, when a value there is oversized (JSON UTF-8 bytes >
65,536) or the boundary mutated it. A line holds the stage, sizes, HMAC-SHA-256 hashes
under a per-process random key, artifact states and kinds, and hashes of identifiers:
never a value, a prompt, a path or an identifier. See docs/diagnostics.md.

Hooks for boundary owners (one guarded line each; off, the cost is the flag check)::

    from budgetware.diagnostics import events as diagnostics

    if diagnostics.enabled:  # a ToolResult batch boundary above the core, after its work
        diagnostics.tool_results("producer", entries, result)  # producer_input/_output
    if diagnostics.enabled:  # a display projection (ACP frames, headless messages)
        diagnostics.display_pair("acp", frame, projected)
    if diagnostics.enabled:  # a display wire: the frame and the exact bytes written
        diagnostics.display_wire("acp", projected, data)
    if diagnostics.enabled:  # or frames read back from the bytes written
        diagnostics.display_wire_bytes("headless", data)

    @diagnostics.observes_mcp_results  # an MCP producer bounding one tools/call result
    def bound_tool_result(result, **options): ...

    # anything else: lazily, values as (representation, text[, call index]) triples
    diagnostics.boundary(
        "acp_wire",
        values=lambda: [("acp_content", text, 0), ("acp_raw_output", raw, 0)],
        ids=lambda: {"session": session_id, "tool_call": [call_a, call_b]},
        artifacts=lambda: [None, ()],  # per tool call: tri-state or ArtifactInfo
        mutated=False,
        wire_bytes=len(line),  # exactly the bytes written, newline included
    )

The core's finalizer and guard report through ``budgetware.core.observe`` (the core
imports nothing above it): while diagnostics are on, they subscribe ``tool_results`` to its
batch reports. The HTTP layer's ``http_wire`` hook is
``budgetware.diagnostics.recorder.submitted(url, body)``.
``boundary_pair`` emits an ``*_input`` and an ``*_output`` event together after the work,
so that an input that was not oversized is still logged when the boundary changed it.
Nothing here raises into the caller or changes a value: every failure is swallowed.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from budgetware.core import observe
from budgetware.core.jsonio import dumps_bytes, loads
from budgetware.core.measure import json_string_bytes, measure
from budgetware.diagnostics.logfile import LogFile
from budgetware.diagnostics.values import (
    ARTIFACT_KINDS,
    ArtifactInfo,
    Value,
    acp_values,
    artifact_kind,
    batch_ids,
    batch_values,
    display_extractor,
    headless_values,
    mcp_values,
)

if TYPE_CHECKING:
    from budgetware.core.models import ToolResult

__all__ = [
    "ARTIFACT_KINDS",
    "ENV_VAR",
    "EVENT",
    "OVERSIZED_BYTES",
    "REPRESENTATIONS",
    "STAGES",
    "ArtifactInfo",
    "acp_values",
    "active",
    "artifact_kind",
    "boundary",
    "boundary_pair",
    "configure",
    "display_pair",
    "display_wire",
    "display_wire_bytes",
    "enabled",
    "headless_values",
    "key_id",
    "keyed_hash",
    "mcp_result_pair",
    "mcp_values",
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

STAGES = frozenset(
    {
        "producer_input",
        "producer_output",
        "finalizer_input",
        "finalizer_output",
        "guard_input",
        "guard_output",
        "recorder",
        "acp_projection_input",
        "acp_projection_output",
        "acp_wire",
        "headless_projection_input",
        "headless_projection_output",
        "headless_wire",
        "http_wire",
    }
)
REPRESENTATIONS = frozenset(
    {"model_text", "display", "acp_content", "acp_raw_output", "headless_content"}
)
_OFF_VALUES = frozenset({"", "0", "false", "off", "no"})

_F = TypeVar("_F", bound=Callable[..., Any])

# --- enablement: one dictionary lookup and an identity test on the disabled path ---------

_env_data: Any = getattr(os.environ, "_data", None)
_env_key: Any
try:
    _env_key = os.environ.encodekey(ENV_VAR)
except AttributeError:  # pragma: no cover - not CPython's os.environ
    _env_key = ENV_VAR
if not isinstance(_env_data, dict):  # pragma: no cover - not CPython's os.environ
    _env_data = None

_UNSET: Any = object()
_raw: Any = _UNSET  # the environment value the cached decision was made from
_on = False
_log = LogFile()  # the file named by the environment variable, opened at first write
_override_sink: Callable[[bytes], None] | None = None  # set by configure(): forces on


# The hot-path flag: hooks in per-batch code test ``diagnostics.enabled`` (one attribute
# read). It is decided when this module is imported and re-decided by every ``active()``
# that sees the variable change, by ``refresh()``, ``configure()`` and ``reset()``.
enabled = False


def active() -> bool:
    """Whether diagnostics are on, re-reading the environment only when it changed.

    The decision is cached and re-made only when the environment variable's value object
    changes (set, changed or removed), so tests and long-lived processes may switch it.
    Costs one dictionary lookup; per-batch hooks test the ``enabled`` flag instead, which
    a process that switches the variable at run time refreshes with ``refresh()``.
    """
    raw = _env_data.get(_env_key) if _env_data is not None else os.environ.get(ENV_VAR)
    if raw is _raw:
        return _on
    return _decide(raw)


def refresh() -> bool:
    """Re-read the environment now (also closes a log file opened for a previous path)."""
    global _raw
    with _lock:
        _raw = _UNSET
    return active()


def _decide(raw: Any) -> bool:
    global _raw, _on, enabled
    with _lock:
        _raw = raw
        path: str | None = None
        if raw is not None:
            text = os.fsdecode(raw) if isinstance(raw, bytes) else str(raw)
            if text.strip().lower() not in _OFF_VALUES:
                path = text.strip()
        _log.use(path)
        _on = enabled = _override_sink is not None or path is not None
        # The core's finalizer and guard report through this seam while diagnostics are on.
        _observe_batches(_on)
        return _on


_subscription: observe.Subscription | None = None


def _on_batch(report: observe.BatchReport) -> None:
    tool_results(report.boundary, report.before, report.after)


def _observe_batches(on: bool) -> None:
    global _subscription
    if on and _subscription is None:
        _subscription = observe.subscribe(batch=_on_batch)
    elif not on and _subscription is not None:
        _subscription.close()
        _subscription = None


# --- configuration (tests inject the key, the clock, the limit and a sink) ---------------

_lock = threading.RLock()
_key = secrets.token_bytes(32)
_base_mac: Any = hmac.new(_key, digestmod=hashlib.sha256)
_key_id = ""
_clock: Callable[[], float] = time.monotonic
_limit = DEFAULT_LIMIT
_window = DEFAULT_WINDOW
_window_start: float | None = None
_window_count = 0
_suppressed = 0
failures = 0  # swallowed internal errors, for tests and debugging


def _set_key(key: bytes) -> None:
    global _key, _base_mac, _key_id
    _key = bytes(key)
    _base_mac = hmac.new(_key, digestmod=hashlib.sha256)
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
    """Override the HMAC key, the rate-limit clock/limit/window, or the output sink.

    A ``sink`` receives each encoded line (newline included) and turns diagnostics on
    regardless of the environment, until ``reset()``. The current window and the
    suppressed count carry over.
    """
    global _clock, _limit, _window, _override_sink
    with _lock:
        if key is not None:
            if len(key) < 16:
                raise ValueError("the diagnostics key must have at least 16 bytes")
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
        _log.close()
    refresh()


def _after_fork_in_child() -> None:
    # A forked child is another process: its hashes must not be comparable with the parent's.
    global _lock
    _lock = threading.RLock()
    _log.forget()  # the inherited descriptor stays valid but belongs to the parent
    _set_key(secrets.token_bytes(32))


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# --- hashing and classification -----------------------------------------------------------


def keyed_hash(value: str) -> str:
    """HMAC-SHA-256 (hex) of one value: 8-byte big-endian length, then UTF-16-LE bytes.

    ``surrogatepass`` keeps lone surrogates distinct (``'\\ud800'`` != ``'\\udc00'``); each
    value is hashed alone, never concatenated with another.
    """
    data = value.encode("utf-16-le", "surrogatepass")
    mac = _base_mac.copy()
    mac.update(len(data).to_bytes(8, "big"))
    mac.update(data)
    digest: str = mac.hexdigest()
    return digest


_set_key(_key)


def key_id() -> str:
    """A fingerprint of this process's key: equal ``key_id`` means comparable hashes."""
    return _key_id


def _normalize_kind(kind: object) -> str:
    # Only exact members of the closed set survive: a path-like string is never echoed.
    if isinstance(kind, str) and kind in ARTIFACT_KINDS:
        return kind
    return "unknown"


def _artifact(item: object) -> dict[str, Any]:
    """One tool call's state and kinds. Metadata that is not the tri-state (a bare string,
    a number, an iterator that fails) is ``undecided`` with no kinds: the event is still
    written, and only the three documented states ever are."""
    files, explicit = (item.files, item.kinds) if isinstance(item, ArtifactInfo) else (item, ())
    if files is None:
        return {"state": "undecided", "kinds": []}
    try:
        if isinstance(files, (str, bytes)) or not isinstance(files, Iterable):
            raise TypeError("not a sequence of references")
        refs = list(files)
    except Exception:
        return {"state": "undecided", "kinds": []}
    kinds = [artifact_kind(f) if isinstance(f, str) else "unknown" for f in refs]
    # Explicit kinds add to the references' own (the persisted output is a "file").
    try:
        kinds += [_normalize_kind(k) for k in explicit]
    except Exception:
        pass  # unreadable explicit kinds: the references' kinds alone
    return {"state": "reusable" if refs else "none", "kinds": list(dict.fromkeys(kinds))}


def _artifacts(artifacts: Callable[[], Iterable[object]]) -> list[dict[str, Any]] | None:
    """Each tool call's artifacts, or None when the list itself cannot be read."""
    try:
        return [_artifact(item) for item in artifacts()]
    except Exception:
        return None


def _measure_value(value: Sequence[Any], slots: dict[str, int]) -> dict[str, Any]:
    representation, text = value[0], value[1]
    if representation not in REPRESENTATIONS:
        representation = "unknown"
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


def _hash_id(value: object) -> str | None:
    return keyed_hash(value) if isinstance(value, str) else None


def _ids(ids: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("session", "request", "tool_call", "tool_name"):
        value = ids.get(name)
        if value is None:
            continue
        if isinstance(value, str):
            out[f"{name}_hmac"] = keyed_hash(value)
        else:
            out[f"{name}_hmacs"] = [_hash_id(v) for v in value]
    return out


# --- the event pipeline --------------------------------------------------------------------


def boundary(
    stage: str,
    *,
    values: Callable[[], Iterable[Value]] | None = None,
    artifacts: Callable[[], Iterable[object]] | None = None,
    ids: Callable[[], Mapping[str, Any]] | None = None,
    mutated: bool | Callable[[], bool] = False,
    wire_bytes: int | Callable[[], int] | None = None,
) -> None:
    """Emit one boundary event if a value is oversized or ``mutated`` is true.

    Every argument but ``stage`` may be a thunk and is evaluated only when diagnostics are
    on (``values`` not even then when the rate limit drops a mutated event). ``ids`` maps
    ``session``, ``request``, ``tool_call`` and ``tool_name`` to a string, or to a list in
    wire order when the boundary carries several tool calls (values then name theirs by
    index). ``artifacts`` lists, per tool call, its ``persisted_output_files`` tri-state or
    an ``ArtifactInfo``. Never raises.
    """
    if not active():
        return
    try:
        _emit(stage, values, artifacts, ids, mutated, wire_bytes)
    except Exception:
        _failed()


def boundary_pair(
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
    """Emit the input and output events of one boundary, called once its work is done.

    Both carry the boundary's ``mutated``: an input that changed is logged even when it was
    not oversized, so its hash can be compared with the output's. Never raises.
    """
    if not active():
        return
    try:
        changed = bool(mutated()) if callable(mutated) else bool(mutated)
        id_map = _memo(ids)
        _emit(input_stage, before, artifacts_before, id_map, changed, None)
        _emit(output_stage, after, artifacts_after, id_map, changed, None)
    except Exception:
        _failed()


def tool_results(name: str, before: Sequence[ToolResult], after: Sequence[ToolResult]) -> None:
    """``boundary_pair`` for a batch of ToolResults: ``<name>_input`` and ``<name>_output``.

    ``name`` is ``finalizer``, ``guard`` or ``producer``; values are the ``model_text``
    slots, artifacts each entry's ``persisted_output_files``, ids the call ids and tool
    names in batch order; mutated when any entry is not the same object afterwards.
    """
    if not active():
        return
    try:
        boundary_pair(
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
    except Exception:
        _failed()


def tool_results_wire(
    stage: str,
    batches: Sequence[Sequence[ToolResult]],
    *,
    wire_bytes: int | None = None,
    session: str | None = None,
    request: str | None = None,
    mutated: bool = False,
    artifacts: bool = True,
) -> None:
    """One event for the ToolResult batches of one request as submitted (wire or recorder).

    Values are the ``model_text`` slots of every entry, tool calls in wire order.
    ``artifacts=False`` leaves artifact states out (entries read back from a body carry no
    decision: ``None`` there means unknown, not undecided).
    """
    if not active():
        return
    try:
        entries = [entry for batch in batches for entry in batch]

        def ids() -> dict[str, Any]:
            out = batch_ids(entries)
            out.update(session=session, request=request)
            return out

        boundary(
            stage,
            values=lambda: batch_values(entries),
            artifacts=(lambda: [e.persisted_output_files for e in entries]) if artifacts else None,
            ids=ids,
            mutated=mutated,
            wire_bytes=wire_bytes,
        )
    except Exception:
        _failed()


def display_pair(kind: str, before: Any, after: Any) -> None:
    """``<kind>_projection_input``/``_output`` around a display projection (acp or headless).

    ``before`` and ``after`` are the ACP frame(s) or headless message(s) before and after
    projecting; mutated when the projection returned a different object.
    """
    if not active():
        return
    try:
        extract = display_extractor(kind)
        boundary_pair(
            f"{kind}_projection_input",
            f"{kind}_projection_output",
            before=lambda: extract(before)[0],
            after=lambda: extract(after)[0],
            ids=lambda: extract(after)[1],
            mutated=before is not after,
        )
    except Exception:
        _failed()


def display_wire(kind: str, payload: Any, written: bytes | int) -> None:
    """``<kind>_wire`` for a frame (or a list of frames) and the exact bytes written."""
    if not active():
        return
    try:
        extract = display_extractor(kind)
        size = written if isinstance(written, int) else len(written)
        boundary(
            f"{kind}_wire",
            values=lambda: extract(payload)[0],
            ids=lambda: extract(payload)[1],
            wire_bytes=size,
        )
    except Exception:
        _failed()


def display_wire_bytes(kind: str, written: bytes) -> None:
    """``<kind>_wire`` for bytes already written: the frames are read back from them.

    For writers that hold only the encoded bytes (a newline-delimited line, or a JSON
    array element with its leading ``[`` or ``,``).
    """
    if not active():
        return
    try:
        text = written.strip()
        if text[:1] in (b"[", b","):
            text = text[1:]
        if text[-1:] == b"]" and not text.startswith(b"["):
            text = text[:-1]
        if not text:
            return
        try:
            payload = loads(text)
        except ValueError:
            return  # not JSON: no tool output to account for
        display_wire(kind, payload, written)
    except Exception:
        _failed()


def observes_mcp_results(fn: _F) -> _F:
    """Decorate a producer that bounds one MCP ``tools/call`` result dict.

    The decorated function takes the result first and returns an object with ``result``
    (the delivered result) and ``refs`` (None when unchanged, else the artifact
    references); ``producer_input``/``producer_output`` are emitted around it.
    """

    @functools.wraps(fn)
    def wrapper(result: Any, *args: Any, **kwargs: Any) -> Any:
        outcome = fn(result, *args, **kwargs)
        if enabled:
            delivered = getattr(outcome, "result", result)
            mcp_result_pair(result, delivered, getattr(outcome, "refs", None))
        return outcome

    return cast(_F, wrapper)


def mcp_result_pair(before: Any, after: Any, refs: Sequence[str] | None) -> None:
    """``producer_input``/``producer_output`` for one MCP result dict bounded by a producer."""
    if not active():
        return
    try:
        boundary_pair(
            "producer_input",
            "producer_output",
            before=lambda: mcp_values(before),
            after=lambda: mcp_values(after),
            artifacts_before=lambda: [None],
            artifacts_after=lambda: [None if refs is None else tuple(refs)],
            mutated=after is not before,
        )
    except Exception:
        _failed()


def _memo(thunk: Callable[[], Mapping[str, Any]] | None) -> Callable[[], Mapping[str, Any]] | None:
    if thunk is None:
        return None
    cache: list[Mapping[str, Any]] = []

    def once() -> Mapping[str, Any]:
        if not cache:
            cache.append(thunk())
        return cache[0]

    return once


def _failed() -> None:
    global failures
    failures += 1


def _admit() -> int | None:
    """Count one event against the window: its suppressed_count, or None when dropped."""
    global _window_start, _window_count, _suppressed
    now = _clock()
    start = _window_start
    if start is None or now < start or now - start >= _window:
        _window_start, _window_count = now, 0  # a new fixed window (or a clock went back)
    if _window_count >= _limit:
        _suppressed += 1
        return None
    _window_count += 1
    dropped, _suppressed = _suppressed, 0
    return dropped


def _emit(
    stage: str,
    values: Callable[[], Iterable[Value]] | Iterable[Value] | None,
    artifacts: Callable[[], Iterable[object]] | None,
    ids: Callable[[], Mapping[str, Any]] | None,
    mutated: bool | Callable[[], bool],
    wire_bytes: int | Callable[[], int] | None,
) -> None:
    if stage not in STAGES:
        raise ValueError(f"unknown diagnostics stage {stage!r}")
    changed = bool(mutated()) if callable(mutated) else bool(mutated)
    items: list[Sequence[Any]] | None = None
    if not changed:
        # Only an oversized value makes an unchanged boundary worth an event; the check
        # stops early, and nothing counts against the rate limit when there is none.
        items = _evaluate(values)
        if not any(json_string_bytes(v[1], OVERSIZED_BYTES) > OVERSIZED_BYTES for v in items):
            return
    with _lock:
        suppressed = _admit()
    if suppressed is None:
        return  # dropped: a mutated event's values are never even evaluated
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
        size = wire_bytes() if callable(wire_bytes) else wire_bytes
        event["wire_utf8_bytes"] = int(size)
    if suppressed:
        event["suppressed_count"] = suppressed
    line = dumps_bytes(event) + b"\n"
    with _lock:
        sink = _override_sink
        if sink is not None:
            sink(line)
        else:
            _log.write(line)


def _evaluate(values: Callable[[], Iterable[Value]] | Iterable[Value] | None) -> list[Any]:
    if values is None:
        return []
    produced = values() if callable(values) else values
    # Keep only well-formed (representation, text[, index]) values; text is never logged.
    return [v for v in produced if len(v) >= 2 and isinstance(v[1], str)]


active()  # decide once at import: the hot-path flag starts in sync with the environment
