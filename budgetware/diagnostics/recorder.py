"""An opt-in recorder of exactly what each request submitted for its tool results.

On when ``BUDGETWARE_RECORD_DIR`` names a directory or ``set_recorder`` was called: one JSON
line per request in a private file, each text with its HMAC under the diagnostics key, so it
matches the debug log's ``http_wire`` events. Records hold tool output in full; URLs lose
their credentials, query and fragment.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from budgetware.core.jsonio import dumps_bytes
from budgetware.core.models import ToolResult
from budgetware.diagnostics import events as diagnostics
from budgetware.store.files import open_private_dir

if TYPE_CHECKING:
    from budgetware.core.config import BudgetConfig

__all__ = [
    "ENV_VAR",
    "Recorder",
    "set_recorder",
    "submitted",
]

ENV_VAR = "BUDGETWARE_RECORD_DIR"
_OFF_VALUES = frozenset({"", "0", "false", "off", "no"})

_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
_FLAGS |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def redact_url(url: str) -> str:
    """``scheme://host[:port]/path``: no user info, query or fragment (secrets go there)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


class Recorder:
    """Appends one JSON line per submitted request to a private file in ``directory``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(os.path.abspath(os.fspath(directory)))
        self._lock = threading.Lock()
        self.path: Path | None = None  # the file this process writes to, once it has written
        self._fd: int | None = None
        self._pid = 0
        self._sequence = itertools.count(1)

    def record(self, url: str, batches: Sequence[Sequence[ToolResult]], body: bytes) -> None:
        """Write one record of the tool results read back from ``body``; raises on an I/O
        error."""
        record = {
            "time": round(time.time(), 3),
            "sequence": next(self._sequence),
            "key_id": diagnostics.key_id(),
            "url": redact_url(url),
            "batches": [[_entry(entry) for entry in batch] for batch in batches],
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "wire_utf8_bytes": len(body),
        }
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
        # A forked child writes its own file: two processes never interleave a record.
        with open_private_dir(str(self.directory)) as folder:
            stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
            name = f"submitted-{stamp}-{os.getpid()}.jsonl"
            self._fd = folder.open(name, _FLAGS, 0o600)
        self._pid = os.getpid()
        self.path = self.directory / name
        return self._fd


def _entry(entry: ToolResult) -> dict[str, Any]:
    return {
        "call_id": entry.call_id,
        "tool_name": entry.tool_name,
        "slots": list(entry.slots),
        "hmac_sha256": [diagnostics.keyed_hash(slot) for slot in entry.slots],
    }


# --- the process-wide recorder: explicit, else from the environment ---

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


def current() -> Recorder | None:
    """The recorder in effect, or None when recording is off."""
    global _env_raw, _env_recorder
    if _explicit is not None:
        return _explicit
    raw = os.environ.get(ENV_VAR)
    if raw == _env_raw:
        return _env_recorder
    with _state_lock:
        if _env_recorder is not None:
            _env_recorder.close()
        _env_raw = raw
        text = raw or ""
        on = text.strip().lower() not in _OFF_VALUES
        _env_recorder = Recorder(text.strip()) if on else None
    return _env_recorder


def submitted(url: str, body: bytes, *, config: BudgetConfig | None = None) -> None:
    """The HTTP layer's call with the exact bytes it sends: the ``http_wire`` event, then a
    record, both read back from ``body`` itself. Never raises."""
    global failures
    try:
        recorder = current()
        if not (diagnostics.active() or recorder is not None):
            return
        from budgetware.wire.detect import read_body

        read = read_body(url, body, config)
        batches = [[found.entry() for found in batch] for batch in read[1]] if read else []
        if not batches:
            return
        diagnostics.tool_results_wire("http_wire", batches, wire_bytes=len(body))
        if recorder is not None:
            recorder.record(url, batches, body)
    except Exception:
        failures += 1
