"""An opt-in recorder of exactly what each request submitted for its tool results.

Off by default. On when ``BUDGETWARE_RECORD_DIR`` names a directory (``''``, ``0``,
``false``, ``off`` and ``no`` mean off) or when ``set_recorder(Recorder(directory))`` was
called. Each submitted request becomes one JSON line in ``submitted-<time>-<pid>.jsonl``
(directory 0700, file 0600): the finalized text of every tool result, its artifact
references, and per text its HMAC under the diagnostics key, so a record can be matched
with the ``http_wire`` events of the debug log of the same process (same ``key_id``).

The HTTP layer calls, with the exact body bytes it is about to send (after
``finalize_body``), which emits the ``http_wire`` diagnostic and writes the record::

    from budgetware.diagnostics import recorder as _recorder

    _recorder.submitted(url, body)  # off: two cheap checks

or, when it already holds the finalized batches, ``record_submission(url, batches,
body=body)``. Neither raises nor changes its arguments. Records hold tool
output in full: keep the directory private. URLs are stored without credentials, query
or fragment (API keys travel there).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from budgetware.core.config import BudgetConfig
from budgetware.core.jsonio import dumps_bytes
from budgetware.core.models import ToolResult
from budgetware.diagnostics import events as diagnostics
from budgetware.store.files import open_private_dir

__all__ = [
    "ENV_VAR",
    "Recorder",
    "record_submission",
    "recording",
    "set_recorder",
    "submitted",
    "wire_batches",
]

ENV_VAR = "BUDGETWARE_RECORD_DIR"
_OFF_VALUES = frozenset({"", "0", "false", "off", "no"})

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)


def redact_url(url: str) -> str:
    """``scheme://host[:port]/path``: no user info, query or fragment (secrets go there)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    if not parts.scheme:
        return parts.path
    return f"{parts.scheme}://{host}{parts.path}"


class Recorder:
    """Appends one JSON line per submitted request to a private file in ``directory``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(os.path.abspath(os.fspath(directory)))
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._pid = 0
        self._path: Path | None = None
        self._sequence = itertools.count(1)

    @property
    def path(self) -> Path | None:
        """The file this process writes to, once the first record was written."""
        return self._path

    def record(
        self,
        url: str,
        batches: Sequence[Sequence[ToolResult]],
        *,
        body: bytes | None = None,
        session: str | None = None,
        request: str | None = None,
        source: str = "entries",
    ) -> None:
        """Write one record; raises on an I/O error (``record_submission`` swallows it).

        ``source`` is ``entries`` (the caller's finalized ToolResults, artifact decisions
        included) or ``wire`` (read back from the body: ``persisted_output_files`` is then
        null, unknown, because a body carries no decision).
        """
        record: dict[str, Any] = {
            "time": round(time.time(), 3),
            "sequence": next(self._sequence),
            "key_id": diagnostics.key_id(),
            "url": redact_url(url),
            "session": session,
            "request": request,
            "source": source,
            "batches": [[_entry(entry) for entry in batch] for batch in batches],
        }
        if body is not None:
            record["body_sha256"] = hashlib.sha256(body).hexdigest()
            record["wire_utf8_bytes"] = len(body)
        line = dumps_bytes(record) + b"\n"
        with self._lock:
            fd = self._open()
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]

    def close(self) -> None:
        """Close the file; the next record opens a new one."""
        with self._lock:
            fd, self._fd = self._fd, None
            if fd is not None and self._pid == os.getpid():
                os.close(fd)

    def _open(self) -> int:
        if self._fd is not None and self._pid == os.getpid():
            return self._fd
        # A forked child writes its own file: two processes never interleave one record.
        folder = open_private_dir(str(self.directory))
        try:
            stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
            name = f"submitted-{stamp}-{os.getpid()}.jsonl"
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC | _BINARY
            self._fd = folder.open(name, flags, 0o600)
        finally:
            folder.close()
        self._pid = os.getpid()
        self._path = self.directory / name
        return self._fd


def _entry(entry: ToolResult) -> dict[str, Any]:
    files = entry.persisted_output_files
    return {
        "call_id": entry.call_id,
        "tool_name": entry.tool_name,
        "slots": list(entry.slots),
        "hmac_sha256": [diagnostics.keyed_hash(slot) for slot in entry.slots],
        "persisted_output_files": None if files is None else list(files),
    }


# --- the process-wide recorder: explicit, else from the environment -----------------------

_explicit: Recorder | None = None
_env_raw: Any = None
_env_recorder: Recorder | None = None
_state_lock = threading.Lock()
failures = 0  # swallowed errors, for tests and debugging


def set_recorder(recorder: Recorder | None) -> Recorder | None:
    """Use ``recorder`` for every submission (``None``: back to the environment)."""
    global _explicit
    with _state_lock:
        previous, _explicit = _explicit, recorder
    return previous


_env_data: Any = getattr(os.environ, "_data", None)
_env_key: Any = os.environ.encodekey(ENV_VAR) if isinstance(_env_data, dict) else ENV_VAR
if not isinstance(_env_data, dict):  # pragma: no cover - not CPython's os.environ
    _env_data = None


def current() -> Recorder | None:
    """The recorder in effect, or None when recording is off (one lookup when unchanged)."""
    global _env_raw, _env_recorder
    if _explicit is not None:
        return _explicit
    raw = _env_data.get(_env_key) if _env_data is not None else os.environ.get(ENV_VAR)
    if raw is _env_raw:
        return _env_recorder
    with _state_lock:
        if _env_recorder is not None:
            _env_recorder.close()
        _env_raw = raw
        text = (os.fsdecode(raw) if isinstance(raw, bytes) else str(raw)) if raw else ""
        on = text.strip().lower() not in _OFF_VALUES
        _env_recorder = Recorder(text.strip()) if on else None
    return _env_recorder


def recording() -> bool:
    """Whether submissions are recorded (an explicit recorder, or ``BUDGETWARE_RECORD_DIR``)."""
    return current() is not None


def record_submission(
    url: str,
    batches: Sequence[Sequence[ToolResult]],
    *,
    body: bytes | None = None,
    session: str | None = None,
    request: str | None = None,
    source: str = "entries",
) -> None:
    """Record what one request submits and emit its ``recorder`` diagnostic; never raises.

    ``batches`` are the finalized tool results exactly as they go on the wire, in wire
    order; ``body`` (optional) the exact request bytes, stored only as SHA-256 and length.
    """
    global failures
    try:
        recorder = current()
        if recorder is None:
            return
        recorder.record(url, batches, body=body, session=session, request=request, source=source)
        if diagnostics.active():
            diagnostics.tool_results_wire(
                "recorder",
                batches,
                session=session,
                request=request,
                artifacts=source != "wire",
            )
    except Exception:
        failures += 1


def submitted(
    url: str,
    body: bytes,
    *,
    config: BudgetConfig | None = None,
    session: str | None = None,
    request: str | None = None,
) -> None:
    """The HTTP layer's one call with the exact bytes it sends: ``http_wire`` and a record.

    Off (neither diagnostics nor recording on): two cheap checks. On: the tool results are
    read back from ``body`` itself, so what is logged and recorded is what went out. Bodies
    that are not a known provider format are ignored. Never raises.
    """
    if not (diagnostics.active() or current() is not None):
        return
    global failures
    try:
        batches = wire_batches(url, body, config)
        if not batches:
            return
        if diagnostics.active():
            diagnostics.tool_results_wire(
                "http_wire",
                batches,
                wire_bytes=len(body),
                session=session,
                request=request,
                artifacts=False,
            )
        record_submission(url, batches, body=body, session=session, request=request, source="wire")
    except Exception:
        failures += 1


def wire_batches(
    url: str, body: bytes, config: BudgetConfig | None = None
) -> list[list[ToolResult]]:
    """The tool-result batches a provider request body carries, as ToolResults, in order.

    ``config`` says which endpoints are model endpoints (declared ones, sniffing).

    Artifact state cannot be read back from a body: every entry is "undecided" (None).
    """
    from budgetware.wire.detect import read_body

    read = read_body(url, body, config)
    if read is None:
        return []
    return [[found.entry() for found in batch] for batch in read[1]]
