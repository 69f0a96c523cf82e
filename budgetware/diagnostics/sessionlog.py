"""The session log: per process, one JSON-lines file of what each request's tool results
measured before and after bounding (sizes, rooms, tool names, references; never text), read
by ``budgetware report`` and ``budgetware inspect``. The format is in docs/inspect.md.

A request's line is written where its report is delivered, cheaply: a batch re-sent with
every turn is known again without being measured (docs/benchmarks.md). A process's file
stops at ``MAX_FILE_BYTES``; a directory keeps its newest ``KEEP_SESSIONS`` sessions.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
from collections import OrderedDict
from typing import Any

from budgetware.core import observe
from budgetware.core.config import BudgetConfig, resolve_config
from budgetware.core.finalize import rooms, tool_priority
from budgetware.core.jsonio import dumps_bytes, loads
from budgetware.core.measure import measure
from budgetware.core.paths import default_sessions_path, new_session_id
from budgetware.store.files import open_private_dir

__all__ = [
    "MAX_FILE_BYTES",
    "SESSION_VARIABLE",
    "VERSION",
    "Session",
    "directory_for",
    "file_sizes",
    "find_session",
    "log_request",
    "read_session",
    "runs",
    "start",
    "start_if_asked",
    "stop",
]

VERSION = 1
SESSION_VARIABLE = "BUDGETWARE_RUN_SESSION"
MAX_FILE_BYTES = 32 * 1024 * 1024
KEEP_SESSIONS = 50
_REMEMBERED = 4096
_SESSION_NAME = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}")
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
_FLAGS |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_DEFAULTS = BudgetConfig()
_PREVIEW_SETTINGS = ("preview_salient_percent", "preview_salient_patterns", "preview_tool_hint")


def directory_for(setting: str | None, environ: Any = os.environ) -> str | None:
    """Where a ``session_log`` setting writes: None (off), or the directory of sessions."""
    if setting == "off" or (setting is None and not environ.get(SESSION_VARIABLE)):
        return None
    return default_sessions_path() if setting in (None, "on") else setting


class _Log:
    """The session log of this process: one line per batch first seen, one per request."""

    def __init__(self, root: str, session: str) -> None:
        self.root = root
        self.session = session
        self.lock = threading.Lock()
        self.fd: int | None = None
        self.path: str | None = None
        self.size = 0
        self.stopped = False
        self.sequence = 0
        self.next_batch = 0
        # The batches written, by what identifies one re-sent with every turn (in memory
        # only: call ids and tool names, the lengths of its texts, its references).
        self.batches: OrderedDict[tuple[object, ...], int] = OrderedDict()
        # The requests logged, by report, for the usage their responses report later.
        self.requests: OrderedDict[int, int] = OrderedDict()

    def add(self, report: observe.RequestReport) -> None:
        with self.lock:
            if not self.stopped:
                self._write_request(time.time(), report)

    def add_usage(self, usage: observe.UsageReport) -> None:
        with self.lock:
            sequence = self.requests.get(id(usage.request))
            if sequence is None or self.stopped:
                return
            line = {
                "type": "usage",
                "request": sequence,
                "input_tokens": usage.input_tokens,
                "cache_read_tokens": usage.cache_read_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
                "output_tokens": usage.output_tokens,
            }
            self._append(dumps_bytes(line) + b"\n")

    def close(self) -> None:
        with self.lock:
            fd, self.fd = self.fd, None
            if fd is not None:
                os.close(fd)

    # -- writing ----------------------------------------------------------------------

    def _write_request(self, when: float, report: observe.RequestReport) -> None:
        config = report.config or _DEFAULTS
        policies = tuple(config.tool_policies.items())
        lines: list[bytes] = []
        ids: list[int] = []
        for batch in report.batches:
            key = _identity(batch, policies)
            known = self.batches.get(key)
            if known is None:
                known = self.next_batch
                self.next_batch += 1
                record = {"type": "batch", "id": known, **_batch_record(batch, config)}
                lines.append(dumps_bytes(record))
                self.batches[key] = known
                if len(self.batches) > _REMEMBERED:
                    self.batches.popitem(last=False)
            else:
                self.batches.move_to_end(key)
            ids.append(known)
        request: dict[str, Any] = {
            "type": "request",
            "seq": self.sequence,
            "time": round(when, 3),
            # Looked up only where bounding found it: for a body within the budget (not
            # read) the lookup would cost more than the rest of the line.
            "api": report.api if report.batches else None,
            "entry": report.entry,
            "unit": report.unit,
            "budget": report.batch_budget,
            "bytes_before": report.bytes_before,
            "bytes_after": report.bytes_after,
            "seconds": round(report.seconds, 6),
            "batches": runs(ids),
        }
        if report.error:
            request["error"] = report.error
        history = report.history
        if history is not None:
            request["history"] = {
                "budget": history.budget,
                "masked": history.masked,
                "before": history.before,
                "after": history.after,
                "new_step": history.new_step,
                "steps": history.steps,
                "written": len(history.written),
                "skipped": history.skipped,
            }
        preview = {
            name: getattr(config, name)
            for name in _PREVIEW_SETTINGS
            if getattr(config, name) != getattr(_DEFAULTS, name)
        }
        if preview:
            request["preview"] = preview
        self.requests[id(report)] = self.sequence
        if len(self.requests) > _REMEMBERED:
            self.requests.popitem(last=False)
        self.sequence += 1
        lines.append(dumps_bytes(request))
        self._append(b"\n".join(lines) + b"\n")

    def _append(self, data: bytes) -> None:
        try:
            if self.fd is None:
                self._open()
            if self.size + len(data) > MAX_FILE_BYTES:
                self.stopped = True
                data = dumps_bytes({"type": "stopped", "reason": "size", "time": time.time()})
                data += b"\n"
            assert self.fd is not None
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]
            self.size += len(data)
        except OSError as exc:
            self.stopped = True
            logging.getLogger("budgetware").warning(
                "budgetware stopped its session log (%s)", type(exc).__name__
            )

    def _open(self) -> None:
        with open_private_dir(self.root):
            fresh = not os.path.isdir(os.path.join(self.root, self.session))
            folder = open_private_dir(os.path.join(self.root, self.session))
        with folder:
            name = f"{os.getpid()}-{os.urandom(2).hex()}.jsonl"
            self.fd = folder.open(name, _FLAGS, 0o600)
        self.path = os.path.join(self.root, self.session, name)
        header = {
            "type": "process",
            "version": VERSION,
            "session": self.session,
            "pid": os.getpid(),
            "time": round(time.time(), 3),
            "python": sys.version.split()[0],
        }
        data = dumps_bytes(header) + b"\n"
        os.write(self.fd, data)
        self.size = len(data)
        if fresh:
            _prune(self.root, keep=KEEP_SESSIONS)


def _identity(batch: observe.BatchReport, policies: tuple[object, ...]) -> tuple[object, ...]:
    """What tells a batch re-sent with a later turn from another, cheaply: what its record
    depends on (lengths stand for sizes: the same call's text does not change)."""
    return (
        batch.budget,
        batch.unit,
        policies,
        batch.written,
        *(
            (
                old.call_id,
                old.tool_name,
                tuple(map(len, old.slots)),
                tuple(map(len, new.slots)),
                new.persisted_output_files,
            )
            for old, new in zip(batch.before, batch.after)
        ),
    )


def _batch_record(batch: observe.BatchReport, config: BudgetConfig) -> dict[str, Any]:
    """What a batch was: per result its tool, size, room, size sent, priority and references."""
    unit = batch.unit
    before, after = batch.before, batch.after
    lengths = [measure(slot, unit) for entry in before for slot in entry.slots]
    total = sum(lengths)
    over = 0 < batch.budget < total
    room = rooms(before, lengths, config) if over else lengths
    written = set(batch.written)
    results: list[dict[str, Any]] = []
    sent_total = 0
    index = 0
    for old, new in zip(before, after):
        count = len(old.slots)
        sizes = lengths[index : index + count]
        mine = room[index : index + count]
        index += count
        cut = old is not new and old.slots != new.slots
        sent = sum(measure(slot, unit) for slot in new.slots) if cut else sum(sizes)
        sent_total += sent
        result: dict[str, Any] = {
            "tool": old.tool_name,
            "size": sum(sizes),
            "room": sum(mine),
            "sent": sent,
            "priority": tool_priority(config, old.tool_name),
            "cut": cut,
        }
        refs = new.persisted_output_files if cut else None
        if refs:
            result["refs"] = list(refs)
            result["written"] = any(ref in written for ref in refs)
        if count > 1:
            result["slots"] = [[len(slot), a] for slot, a in zip(old.slots, mine)]
        results.append(result)
    return {"size_before": total, "size_after": sent_total, "results": results}


def runs(ids: list[int]) -> list[list[int]]:
    """``[0, 1, 2, 5]`` as ``[[0, 2], [5, 5]]``: runs of consecutive ids, inclusive."""
    out: list[list[int]] = []
    for value in ids:
        if out and out[-1][1] + 1 == value:
            out[-1][1] = value
        else:
            out.append([value, value])
    return out


def _prune(root: str, *, keep: int) -> None:
    """Delete all but the newest ``keep`` sessions of ``root`` (only what this module wrote)."""
    try:
        names = sorted(name for name in os.listdir(root) if _SESSION_NAME.fullmatch(name))
    except OSError:
        return
    for name in names[:-keep]:
        folder = os.path.join(root, name)
        try:
            for entry in os.scandir(folder):
                if entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False):
                    os.unlink(entry.path)
            os.rmdir(folder)
        except OSError:
            continue


# --- the process-wide log ---------------------------------------------------------------

_LOG: _Log | None = None
_SUBSCRIPTION: observe.Subscription | None = None
_STATE_LOCK = threading.Lock()


def log_request(report: observe.RequestReport) -> None:
    """Log one request report, if the log is on."""
    log = _LOG
    if log is not None:
        log.add(report)


def _log_usage(usage: observe.UsageReport) -> None:
    log = _LOG
    if log is not None:
        log.add_usage(usage)


def start(directory: str, session: str | None = None) -> str:
    """Log this process's requests into ``directory``/``session``; returns the session id."""
    global _LOG, _SUBSCRIPTION
    with _STATE_LOCK:
        if _LOG is not None:
            return _LOG.session
        _LOG = _Log(directory, session or new_session_id())
        if _SUBSCRIPTION is None:
            _SUBSCRIPTION = observe.subscribe(request=log_request, usage=_log_usage)
        return _LOG.session


def stop() -> str | None:
    """Close the file and stop logging; returns the file written, if any."""
    global _LOG, _SUBSCRIPTION
    with _STATE_LOCK:
        log, _LOG = _LOG, None
        if _SUBSCRIPTION is not None:
            _SUBSCRIPTION.close()
            _SUBSCRIPTION = None
    if log is None:
        return None
    log.close()
    return log.path


def start_if_asked(config: BudgetConfig | None) -> bool:
    """Start the log if the ``session_log`` setting (or ``budgetware run``) asks for it."""
    directory = directory_for(resolve_config(config, lenient=True).session_log)
    if directory is None:
        return False
    start(directory, os.environ.get(SESSION_VARIABLE) or None)
    return True


def _after_fork_in_child() -> None:
    # A forked child writes a file of its own, in the same session.
    global _LOG
    if _LOG is not None:
        if _LOG.fd is not None:
            os.close(_LOG.fd)  # the child's copy of its parent's file
        _LOG = _Log(_LOG.root, _LOG.session)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# --- reading back -----------------------------------------------------------------------


class Session:
    """A session read back: every distinct batch once (``batches``), and the requests in
    time order, each naming its batches by index in ``batches``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.id = os.path.basename(path.rstrip(os.sep))
        self.requests: list[dict[str, Any]] = []
        self.batches: list[dict[str, Any]] = []
        self.files: dict[str, int] = {}
        """Each file read, with its size then."""
        self.processes = 0
        self.stopped = 0
        self.skipped = 0
        """Lines that were not valid records (a process killed mid-write, a newer version)."""


def file_sizes(path: str) -> dict[str, int]:
    """The files of a session directory (or the one file ``path``), with their sizes."""
    if not os.path.isdir(path):
        return {path: os.stat(path).st_size}
    names = sorted(name for name in os.listdir(path) if name.endswith(".jsonl"))
    return {os.path.join(path, n): os.stat(os.path.join(path, n)).st_size for n in names}


def read_session(path: str) -> Session:
    """Read every process's file of the session directory ``path`` (or one ``.jsonl`` file)."""
    session = Session(path)
    if not os.path.isdir(path):
        session.id = os.path.basename(os.path.dirname(os.path.abspath(path)))
    found: list[dict[str, Any]] = []
    for file in file_sizes(path):
        _read_file(file, session, found)
    found.sort(key=lambda r: (r.get("time", 0.0), r["process"], r.get("seq", 0)))
    index: dict[int, int] = {}
    for request in found:
        ids = []
        for batch in request["batches"]:
            known = index.get(id(batch))
            if known is None:
                known = index[id(batch)] = len(session.batches)
                session.batches.append(batch)
            ids.append(known)
        request["batches"] = ids
    session.requests = found
    return session


def _read_file(file: str, session: Session, found: list[dict[str, Any]]) -> None:
    batches: dict[int, dict[str, Any]] = {}
    requests: dict[int, dict[str, Any]] = {}
    process = session.processes
    session.processes += 1
    with open(file, "rb") as handle:
        data = handle.read()
    session.files[file] = len(data)
    for line in data.splitlines():
        try:
            record = loads(line)
            kind = record["type"]
        except (ValueError, TypeError, KeyError):
            session.skipped += 1
            continue
        if kind == "process" and record.get("version") != VERSION:
            session.skipped += 1
            return
        if kind == "batch":
            batches[record.pop("id")] = record
            del record["type"]
        elif kind == "request":
            resolved = []
            for first, last in record.get("batches", ()):
                resolved += [batches[i] for i in range(first, last + 1) if i in batches]
            record["batches"] = resolved
            record["process"] = process
            requests[record.get("seq", -1)] = record
            found.append(record)
        elif kind == "usage" and record.get("request") in requests:
            requests[record.pop("request")]["usage"] = record
            del record["type"]
        elif kind == "stopped":
            session.stopped += 1


def find_session(name: str | None, root: str) -> str:
    """The session a command names: a session directory or file, a session id under
    ``root``, or (None, or a directory of sessions) the latest one. FileNotFoundError if none."""
    if name is not None and os.path.exists(name):
        if os.path.isfile(name) or any(n.endswith(".jsonl") for n in os.listdir(name)):
            return name
        root = name
    elif name is not None:
        candidate = os.path.join(root, name)
        if not os.path.isdir(candidate):
            raise FileNotFoundError(f"no session {name!r} in {root}")
        return candidate
    try:
        names = sorted(n for n in os.listdir(root) if _SESSION_NAME.fullmatch(n))
    except FileNotFoundError:
        names = []
    if not names:
        raise FileNotFoundError(
            f"no session in {root} (run a program with 'budgetware run', or set "
            "BUDGETWARE_SESSION_LOG)"
        )
    return os.path.join(root, names[-1])
