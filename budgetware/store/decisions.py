"""Producer decisions: what the MCP boundary decided for a text it bounded, recorded in the
store (``<key>.decision.json``) so the finalizer names its artifact instead of persisting
the preview again. Only references to verified artifacts of this store count; a record
left with none of them, or malformed, is no record.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Protocol

from budgetware.core.artifacts import check_key, text_key
from budgetware.core.jsonio import dumps_bytes, loads
from budgetware.store import sweeper
from budgetware.store.lifecycle import Entry

__all__ = ["Decisions"]

RECORD = ".decision.json"  # <key>.decision.json
# Decisions read, remembered per store object (LRU).
ENTRIES = 4096
# How much of a text's start is searched for a notice's references.
NOTICE_SCAN_CHARS = 8192


class _Store(Protocol):
    """What decisions need of the store that holds them."""

    ref_prefix: str

    def _read_record(self, name: str) -> bytes | None: ...

    def _write_record(self, name: str, data: bytes, *, replace: bool) -> None: ...

    def _delete(self, names: list[str]) -> None: ...

    def reused(self, ref: str) -> bool: ...

    def checked_ref(self, ref: str) -> bool: ...

    def refreshed_lately(self, key: str) -> bool: ...


class Decisions:
    """The decision records of one store, and what this process read of them."""

    def __init__(self, store: _Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        # key -> the references decided, or None: no record (a producer records before its
        # text can be seen, so one found absent stays absent).
        self._read: OrderedDict[str, tuple[str, ...] | None] = OrderedDict()

    def record(self, key: str, refs: tuple[str, ...]) -> None:
        """Record what a producer decided for the text with this key; a record there that
        says otherwise is replaced. ``()`` is a decision too: bounded, but nothing reusable
        holds the output, so the finalizer neither persists the preview nor names a file."""
        check_key(key)
        data = dumps_bytes({"refs": list(refs)})
        existing = self.store._read_record(key + RECORD)
        if existing != data:
            self.store._write_record(key + RECORD, data, replace=existing is not None)
        with self._lock:
            self._read.pop(key, None)

    def lookup(self, key: str) -> tuple[str, ...] | None:
        """What a producer decided for the text with this key (``()`` included), or None
        without a usable record."""
        check_key(key)
        with self._lock:
            known = key in self._read
            cached = self._read.get(key)
            if known:
                self._read.move_to_end(key)
        if known and cached is None:
            return None
        if cached is not None and all(self.store.reused(ref) for ref in cached):
            return cached
        raw = self.store._read_record(key + RECORD)
        named = None if raw is None else _record_refs(raw)
        valid = tuple(ref for ref in named or () if self.store.checked_ref(ref))
        usable = bool(valid) or named == []
        with self._lock:
            if raw is None or usable:
                self._read[key] = valid if usable else None
                while len(self._read) > ENTRIES:
                    self._read.popitem(last=False)
            else:
                self._read.pop(key, None)  # read again next time: a producer may replace it
        return valid if usable else None

    def note_named(self, text: str) -> None:
        """Keep young the artifacts a producer's preview names, passed on whole turn after
        turn. No I/O here: when a refresh is due, the lookup of the text's record (which
        refreshes what it names) goes to the background thread."""
        # The keys of this store's references in the first line (the notice).
        named = re.escape(self.store.ref_prefix) + r"([0-9a-f]{64})\.txt"
        keys = re.findall(named, text[:NOTICE_SCAN_CHARS].partition("\n")[0])
        if keys and not all(self.store.refreshed_lately(key) for key in keys):
            sweeper.submit(
                "refresh the artifacts a preview names", lambda: self.lookup(text_key(text))
            )

    def remove_naming(self, records: Iterable[Entry], gone: set[str]) -> None:
        """Delete the decision records that name a deleted artifact (``gone``: references)."""
        if not gone:
            return
        stale = []
        for entry in records:
            if sweeper.stopping():
                return
            key = entry.name[: -len(RECORD)]
            try:
                raw = self.store._read_record(entry.name)
            except (OSError, ValueError):
                continue
            refs = _record_refs(raw) if raw is not None else None
            if refs and gone.intersection(refs):
                stale.append(entry.name)
                with self._lock:
                    self._read.pop(key, None)
        if stale:
            self.store._delete(stale)


def _record_refs(raw: bytes) -> list[str] | None:
    """The references a decision record names; None for a record that is not one."""
    try:
        record = loads(raw)
    except ValueError:
        return None
    refs = record.get("refs") if isinstance(record, dict) else None
    if not isinstance(refs, list) or not all(isinstance(ref, str) for ref in refs):
        return None
    return refs
