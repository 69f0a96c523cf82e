"""What every artifact store backend shares: the quota, verification, last use, decisions,
the sweep; and the interface a backend implements (local directory, S3).

A backend provides a handful of primitives over names of the form ``<sha256>.txt``
(``_probe``, ``_write``, ``_refresh``, ``_scan``, ``_delete``, decision records, reading
byte ranges) and how its references look (``ref_for``, ``key_of``). Everything with a
policy lives here, once:

- **Trust.** An artifact is named only after its bytes were checked against its name
  (``_probe`` returns True), once per artifact per process; a false one is rewritten with
  the real output. A reference read back from a decision record is named only when it is
  a reference of this store to an artifact that exists and verifies.
- **Quota.** ``max_store_bytes`` is the store's real size: the size the last census (a
  sweep, ``prune``, or another process's sweep) measured, plus what this process wrote
  since; a write past it is refused (the caller bounds without a reference).
- **Last use.** Every reuse refreshes an artifact's last use, at most once every
  ``min_age / 4`` per artifact and process, so an artifact a conversation keeps naming is
  never older than that and the sweep (which never evicts one younger than ``min_age``)
  keeps it.
- **Sweep.** At most once a ``sweep_interval`` per process, on the background thread
  (``store/sweeper.py``), skipped when another process sharing the store swept within the
  interval (a marker in the store says when, and what it measured).
"""

from __future__ import annotations

import errno
import hashlib
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

from budgetware.core.artifacts import ArtifactNotFound, ArtifactStoreError, text_key
from budgetware.core.jsonio import dumps_bytes, loads
from budgetware.store import sweeper
from budgetware.store.charindex import SUFFIX as INDEX_SUFFIX
from budgetware.store.charindex import CharIndex, NotText, build_index
from budgetware.store.lifecycle import (
    STALE_TEMP_SECONDS,
    Entry,
    StoreUsage,
    plan_prune,
    plan_sweep,
    stale_temps,
    summarize,
)

__all__ = ["ContentStore", "Listing", "Probe", "SweepMarker", "check_key"]

MIB = 1024 * 1024
HOUR = 3600.0
DAY = 24 * HOUR

# Verified artifacts and decisions remembered per store object (LRU): enough for the
# artifacts of many live conversations, a few hundred KB at most.
CACHE_ENTRIES = 4096
# Per-key locks are striped: a fixed set, whatever the number of keys.
_STRIPES = 64
# Character indexes kept in memory per store object (LRU); an index is 8 bytes per 4,096
# characters of a non-ASCII artifact, a few hundred bytes otherwise.
INDEX_ENTRIES = 256
# Artifacts are read in pieces of this size to build an index (memory for one piece).
READ_CHUNK = 8 * MIB
# A decision record found unusable is read again after this long (another producer may
# have replaced it since).
UNUSABLE_SECONDS = 60.0
# A write refused for the quota has the store counted again (in the background), at most
# once this often: a prune by another process frees the quota within about this long.
RECOUNT_SECONDS = 60.0
# How much of a text's start is searched for the references of a notice.
NOTICE_SCAN_CHARS = 8192

# What a backend found under an artifact's name: nothing, bytes that match the name, or
# bytes that do not.
Probe = Literal["absent", "verified", "false"]


_HEX64 = re.compile(r"[0-9a-f]{64}")


def check_key(key: str) -> str:
    """``key`` if it is a lower-case hex SHA-256 digest (the only thing a name is made of)."""
    if not isinstance(key, str) or _HEX64.fullmatch(key) is None:
        raise ValueError("artifact keys are lower-case hex SHA-256 digests")
    return key


@dataclass
class Listing:
    """One pass over a store: artifacts, decision records and temporary files."""

    artifacts: list[Entry] = field(default_factory=list)
    decisions: list[Entry] = field(default_factory=list)
    temps: list[Entry] = field(default_factory=list)
    # Files kept beside an artifact (``<key>.index``): they go with it.
    sidecars: list[Entry] = field(default_factory=list)


@dataclass(frozen=True)
class SweepMarker:
    """What the last sweep (or ``prune``) of a store measured, and when it started (wall
    clock). ``swept`` is False for a prune by hand: other processes take its measure for
    their quota but still run their own sweep, which applies the configured retention."""

    started: float
    total_bytes: int
    swept: bool = True

    def dumps(self) -> bytes:
        record: dict[str, object] = {"started": self.started, "total_bytes": self.total_bytes}
        if not self.swept:
            record["swept"] = False
        return dumps_bytes(record)

    @classmethod
    def loads(cls, data: bytes) -> SweepMarker | None:
        """The marker, or None for anything that is not one (it is a file any writer of
        the store may have planted: a caller still checks its time and size)."""
        try:
            record = loads(data)
            started = float(record["started"])
            total = record["total_bytes"]
            swept = record.get("swept", True)
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
            return None
        if not math.isfinite(started) or type(total) is not int or total < 0:
            return None
        return cls(started, total, swept is not False)


class ContentStore:
    """A content-addressed artifact store; subclasses provide the backend primitives."""

    def __init__(
        self,
        *,
        max_artifact_bytes: int = 50 * MIB,
        max_store_bytes: int = 500 * MIB,
        max_age: float = 30 * DAY,
        min_age: float = HOUR,
        sweep_interval: float = 0.0,
    ) -> None:
        if min(max_artifact_bytes, max_store_bytes) <= 0:
            raise ValueError("store limits are positive byte counts")
        if min(max_age, min_age, sweep_interval) < 0:
            raise ValueError("ages and intervals are seconds, 0 or more")
        if 0 < max_age < min_age:
            # The sweep would delete by age what it promises to keep for min_age.
            raise ValueError(
                f"max_age must be 0 (keep) or at least min_age ({max_age:g} < {min_age:g})"
            )
        self.max_artifact_bytes = max_artifact_bytes
        self.max_store_bytes = max_store_bytes
        self.max_age = max_age
        self.min_age = min_age
        self.sweep_interval = sweep_interval
        self._refresh_every = min_age / 4
        self._lock = threading.Lock()
        self._stripes = [threading.Lock() for _ in range(_STRIPES)]
        self._index_stripes = [threading.Lock() for _ in range(_STRIPES)]
        self._indexes: OrderedDict[str, CharIndex] = OrderedDict()
        # The size of each artifact as this process wrote or first read it.
        self._sizes: OrderedDict[str, int] = OrderedDict()
        # key -> monotonic time its last use was last refreshed by this process
        self._known: OrderedDict[str, float] = OrderedDict()
        self._decisions: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        # The quota: the store's size at the last census, plus this process's writes not
        # yet counted by one (key -> (size, wall time the write finished, or None)).
        self._measured = 0
        self._pending: dict[str, tuple[int, float | None]] = {}
        self._pending_bytes = 0
        self._next_sweep = 0.0
        # When the last census began (monotonic, and wall clock for markers), and whether
        # a re-count is on its way to the background thread.
        self._counted_at = -math.inf
        self._counted_wall = -math.inf
        self._counting = False
        # Decision records found unusable (key -> monotonic time): read again after a while.
        self._unusable: OrderedDict[str, float] = OrderedDict()
        # Artifacts a preview named, handed to the background thread (key -> monotonic time).
        self._noted: OrderedDict[str, float] = OrderedDict()
        self._ref_prefix: str | None = None

    # -- the backend ---------------------------------------------------------------------

    @property
    def location(self) -> str:
        """Where the store is, as a person would name it (a directory, an s3:// URL)."""
        raise NotImplementedError

    def ref_for(self, key: str) -> str:
        """The reference a preview names for ``key``."""
        raise NotImplementedError

    def key_of(self, ref: str) -> str | None:
        """The key of a reference exactly as ``ref_for`` writes it, or of a bare SHA-256
        hex; None for anything else."""
        raise NotImplementedError

    def _probe(self, key: str) -> Probe:
        """Whether the artifact exists and its bytes hash to ``key``."""
        raise NotImplementedError

    def _probe_for_write(self, key: str) -> Probe:
        """``_probe`` before a write. A backend whose ``_write(replace=False)`` verifies
        what it finds under the name itself (a write that never replaces) may answer
        "absent" without looking."""
        return self._probe(key)

    def _write(self, key: str, data: bytes, *, replace: bool) -> bool:
        """Store ``data`` under ``key``; False when an identical artifact was there (a
        race won by another writer, or, for a backend that writes without probing, one
        that verified: the backend then refreshed its last use)."""
        raise NotImplementedError

    def _refresh(self, key: str) -> bool:
        """Mark the artifact used now; False if it is gone. May defer the work."""
        raise NotImplementedError

    def _still_there(self, key: str) -> bool:
        """Whether an artifact this process verified is still there, checked on every
        reuse: False names it no more and has it looked at (and written) again. Only for a
        backend where the check costs a few microseconds (a ``stat``); by default (S3: a
        round trip) reuse trusts what was verified."""
        return True

    def _read_decision(self, key: str) -> bytes | None:
        raise NotImplementedError

    def _write_decision(self, key: str, data: bytes, *, replace: bool = False) -> None:
        """Write a decision record; ``replace`` replaces one there (which is unusable)."""
        raise NotImplementedError

    def _fetch_decision(self, key: str) -> bytes | None:
        """A decision record as stored, with no lookup caches (the sweep reads them)."""
        return self._read_decision(key)

    def _scan(self) -> Listing:
        raise NotImplementedError

    def _delete(self, names: list[str]) -> None:
        raise NotImplementedError

    def _read_marker(self) -> bytes | None:
        raise NotImplementedError

    def _write_marker(self, data: bytes) -> None:
        raise NotImplementedError

    def size(self, key: str) -> int:
        """The artifact's size in bytes (ArtifactNotFound if there is none)."""
        raise NotImplementedError

    def read_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end`` (exclusive) of the artifact; fewer at its end."""
        return self.read_window(key, start, end)[0]

    def read_window(self, key: str, start: int, end: int) -> tuple[bytes, int]:
        """``read_range``, and the artifact's size in bytes as it was read (one call)."""
        raise NotImplementedError

    def read_into(self, key: str, start: int, buffer: bytearray) -> tuple[int, int]:
        """Fill ``buffer`` with the artifact's bytes from ``start`` (fewer at its end): how
        many, and the artifact's size. Backends that can read into memory in place do."""
        data, size = self.read_window(key, start, start + len(buffer))
        buffer[: len(data)] = data
        return len(data), size

    def _read_sidecar(self, key: str, suffix: str) -> bytes | None:
        """The file kept beside the artifact (``<key><suffix>``), or None if there is none."""
        raise NotImplementedError

    def _write_sidecar(self, key: str, suffix: str, data: bytes) -> None:
        """Write (or replace, atomically) the file kept beside the artifact."""
        raise NotImplementedError

    # -- the ArtifactStore protocol ----------------------------------------------------

    def put(self, text: str, *, key: str | None = None) -> str:
        """Store ``text`` (once) and return its reference."""
        return self.put_reporting(text, key=key)[0]

    def put_reporting(self, text: str, *, key: str | None = None) -> tuple[str, bool]:
        """``put``, and whether this call wrote the artifact (False: it was there already,
        verified). The finalizer uses it to report the artifacts a batch wrote."""
        if key is not None:
            ref = self._reuse(key)
            if ref is not None:
                return ref, False
        data = text.encode("utf-8", "surrogatepass")
        if key is None:
            key = hashlib.sha256(data).hexdigest()
        check_key(key)
        wrote = False
        with self._stripe(key):
            ref = self._reuse(key)
            if ref is not None:
                return ref, False
            self._schedule_sweep()
            found = self._probe_for_write(key)
            if found == "verified":
                self._refresh(key)  # reuse counts as use
            else:
                self._reserve(key, len(data))
                try:
                    wrote = self._write(key, data, replace=found == "false")
                except BaseException:
                    self._unreserve(key)
                    raise
                if wrote:
                    self._written(key)
                else:
                    self._unreserve(key)
            self._remember(key)
            self._note_size(key, len(data))
        return self.ref_for(key), wrote

    def stored_reference(self, key: str) -> str | None:
        """The reference of the artifact under ``key`` if it is in the store and its bytes
        verify, else None (also when the store cannot be reached); writes nothing.

        What this process verified is answered from memory; otherwise it is one look
        (``_probe``: a stat and a hash locally, one ``HeadObject`` on S3), remembered.
        The finalizer asks this before its put of a text that no producer can have
        decided, so an artifact another process wrote costs no upload, and a new one is
        written by the put that follows (``core/artifacts.FindsArtifacts``)."""
        check_key(key)
        ref = self._reuse(key)
        if ref is not None:
            return ref
        found = self._valid_key(key)
        self._schedule_sweep()  # as a put does: a process that only reuses sweeps too
        return self.ref_for(key) if found else None

    def record_decision(self, key: str, refs: tuple[str, ...]) -> None:
        """Remember what a producer decided for the text with this key (written once).

        ``()`` is a decision too: the producer bounded the output and nothing reusable
        holds it (its write failed, or persistence is off there), so the finalizer must
        neither persist the producer's preview as if it were the full output nor name a
        file (FINALIZER.md, the tri-state). A record already there that says something
        else (planted, malformed) is replaced: every producer that bounds the same text
        into the same store decides the same references, byte for byte."""
        check_key(key)
        data = dumps_bytes({"refs": list(refs)})
        with self._stripe(key):
            existing = self._read_decision(key)
            if existing != data:
                self._write_decision(key, data, replace=existing is not None)
            with self._lock:
                self._decisions.pop(key, None)
                self._unusable.pop(key, None)

    def lookup_decision(self, key: str) -> tuple[str, ...] | None:
        """What a producer decided for the text with this key, or None if nothing.

        A record names nothing that is not a verified artifact of this store: references
        outside the store, to a missing artifact, or to one whose bytes do not match its
        name are dropped, and a record left with none of the references it gave
        (planted, or its artifacts evicted), or not a record at all (malformed), counts
        as no record: the finalizer then persists what it sees. A record of ``()`` (a
        producer decided, nothing reusable) is ``()``. What this process read is
        remembered (an unusable record for a minute).
        """
        check_key(key)
        now = time.monotonic()
        with self._lock:
            cached = self._decisions.get(key)
            if cached is not None:
                self._decisions.move_to_end(key)
            unusable = self._unusable.get(key)
        if unusable is not None and now - unusable < UNUSABLE_SECONDS:
            return None
        if cached is not None and all(self._reuse_ref(ref) for ref in cached):
            return cached
        raw = self._read_decision(key)
        if raw is None:
            return None
        named = _record_refs(raw)
        valid = tuple(ref for ref in named or () if self._valid_ref(ref))
        with self._lock:
            if valid or named == []:
                self._decisions[key] = valid
                self._unusable.pop(key, None)
                _trim(self._decisions)
            else:
                self._decisions.pop(key, None)
                self._unusable[key] = now
                _trim(self._unusable)
        return valid if valid or named == [] else None

    def note_named(self, text: str) -> None:
        """A tool-result text the finalizer passes on whole (it fits its batch) that may be
        a producer's preview: the artifacts it names are kept young, as every reuse keeps
        them (a conversation that carries an MCP boundary's preview turn after turn names
        its artifact in every request, though nothing is cut again).

        Nothing here reads a file or the network: the references of this store in the
        preview's first line are compared with what this process refreshed lately; at
        most once every ``min_age / 4`` per artifact, the lookup of the text's decision
        record and the refreshes it leads to go to the background thread. Only artifacts
        the text's decision record names (and that verify) are refreshed."""
        keys = self._named_keys(text)
        if not keys:
            return
        now = time.monotonic()
        due = False
        with self._lock:
            for key in keys:
                last = self._known.get(key)
                if last is not None and now - last < self._refresh_every:
                    continue  # refreshed lately by this process
                asked = self._noted.get(key)
                if asked is not None and now - asked < self._refresh_every:
                    continue  # already handed to the background thread
                self._noted[key] = now
                self._noted.move_to_end(key)
                due = True
            _trim(self._noted)
        if due:
            sweeper.submit(
                "refresh the artifacts a preview names",
                lambda: self.lookup_decision(text_key(text)),
            )

    def _named_keys(self, text: str) -> list[str]:
        """The keys of this store's references in the first line of ``text`` (a notice)."""
        prefix = self._ref_prefix
        if prefix is None:
            # ref_for(key) is the same prefix, the key and ".txt" for every backend.
            prefix = self._ref_prefix = self.ref_for("0" * 64)[: -len("0" * 64 + ".txt")]
        line = text[:NOTICE_SCAN_CHARS]
        at = line.find(prefix)
        if at < 0:
            return []
        end = line.find("\n")
        if end >= 0:
            line = line[:end]
        keys = []
        while at >= 0:
            start = at + len(prefix)
            name = line[start : start + 68]
            if name.endswith(".txt") and _HEX64.fullmatch(name[:64]):
                keys.append(name[:64])
            at = line.find(prefix, start)
        return keys

    # -- retrieval (for readers of artifacts) ------------------------------------------

    def resolve(self, ref: str) -> str:
        """The key of ``ref`` (a reference as a preview prints it, or a bare SHA-256 hex)
        when it names an existing, verified artifact of this store; else ArtifactNotFound."""
        key = self.key_of(ref) if isinstance(ref, str) else None
        if key is None:
            raise ArtifactNotFound("not a reference to an artifact of this store")
        if not self._valid_key(key):
            raise ArtifactNotFound("no such artifact in this store (missing or altered)")
        return key

    def char_index(self, key: str, *, rebuild: bool = False) -> CharIndex:
        """The character-offset index of a verified artifact (``store/charindex.py``): from
        memory, else the one beside the artifact if it checks, else built from the
        artifact's bytes in one pass and written beside it (by whichever reader comes
        first; writers of an index write the same bytes, atomically). ``rebuild`` ignores
        the one there. A store that cannot be written keeps the index in memory only."""
        check_key(key)
        if not rebuild:
            with self._lock:
                cached = self._indexes.get(key)
                if cached is not None:
                    self._indexes.move_to_end(key)
                    return cached
        with self._index_stripes[int(key[:8], 16) % _STRIPES]:
            with self._lock:
                cached = self._indexes.get(key)
            if cached is not None and not rebuild:
                return cached
            size = self.checked_size(key)
            index = None
            if not rebuild:
                try:
                    raw = self._read_sidecar(key, INDEX_SUFFIX)
                except OSError:
                    raw = None
                index = CharIndex.loads(raw, key, size) if raw is not None else None
            if index is None:
                try:
                    index = build_index(self._chunks(key, size), key)
                except NotText as exc:
                    raise ArtifactStoreError(errno.EILSEQ, str(exc)) from None
                if index.size != size:
                    raise ArtifactNotFound("the artifact changed while it was read")
                try:
                    self._write_sidecar(key, INDEX_SUFFIX, index.dumps())
                except OSError:
                    pass  # a read-only store: the index lives in this process only
            with self._lock:
                self._indexes[key] = index
                while len(self._indexes) > INDEX_ENTRIES:
                    self._indexes.popitem(last=False)
        return index

    def read_text(self, key: str, start: int, stop: int) -> str:
        """Characters ``start`` to ``stop`` (exclusive; clamped to the text) of a verified
        artifact, reading only the bytes around them.

        Every read is checked against the index (the bytes decode and hold the characters
        expected); an index that does not match is rebuilt once. An artifact whose size is
        no longer the one it was verified with (truncated, rewritten) raises
        ArtifactNotFound and must be resolved again."""
        if start < 0 or stop < start:
            raise ValueError("a character range is 0 <= start <= stop")
        for rebuild in (False, True):
            index = self.char_index(key, rebuild=rebuild)
            first, last = min(start, index.chars), min(stop, index.chars)
            if first == last:
                return ""
            begin, end, begin_char, end_char = index.span(first, last)
            data, size = self.read_window(key, begin, end)
            if size != index.size:
                self._drop(key)
                raise ArtifactNotFound(
                    "the artifact was truncated or altered after it was verified"
                )
            try:
                text = data.decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                continue
            if len(data) == end - begin and len(text) == end_char - begin_char:
                return text[first - begin_char : last - begin_char]
        self._drop(key)
        raise ArtifactNotFound("the artifact does not match what was verified")

    def iter_bytes(self, key: str, *, chunk: int | None = None, start: int = 0) -> Iterator[bytes]:
        """The artifact's bytes from ``start``, in pieces of ``chunk`` bytes (the last one
        shorter); memory for one piece whatever the artifact's size."""
        return self._chunks(key, self.checked_size(key), chunk=chunk, start=start)

    def checked_size(self, key: str) -> int:
        """The artifact's size, checked against the size it had when this process wrote
        or first read it: ArtifactNotFound if it changed since (truncated, rewritten)."""
        current = self.size(key)
        with self._lock:
            known = self._sizes.get(key)
        if known is None:
            self._note_size(key, current)
        elif known != current:
            self._drop(key)
            raise ArtifactNotFound("the artifact was truncated or altered after it was verified")
        return current

    def _note_size(self, key: str, size: int) -> None:
        with self._lock:
            self._sizes[key] = size
            _trim(self._sizes)

    def verify(self, key: str) -> bool:
        """Whether the artifact exists and its bytes hash to its name (checked once per
        process; a False is checked again next time)."""
        check_key(key)
        return self._valid_key(key)

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def reserved_bytes(self) -> int:
        """Bytes this store has written (or is writing) that no census has counted yet."""
        return self._pending_bytes

    def usage(self) -> StoreUsage:
        """How many artifacts the store holds, their total size and age range, and the
        temporary files of writers beside them."""
        listing = self._scan()
        return summarize(listing.artifacts, listing.temps)

    def prune(
        self,
        *,
        older_than: float | None = None,
        max_total_bytes: int | None = None,
        now: float,
        dry_run: bool = False,
    ) -> StoreUsage:
        """Delete artifacts unused for ``older_than`` seconds, then the least recently used
        until the rest fits ``max_total_bytes``, and the temporary files of crashed
        writers; returns what was (or would be) deleted. Frees the quota it deletes.

        "Used" is the artifact's last use, refreshed by every reuse (at most once every
        ``min_age / 4``). ``now`` is passed in (the store reads no clock here).
        """
        started = time.time()
        listing = self._scan()
        doomed = plan_prune(
            listing.artifacts, older_than=older_than, max_total_bytes=max_total_bytes, now=now
        )
        if not dry_run:
            self._remove(listing, doomed, stale_temps(listing.temps, now=now), now=now)
            total = self._census(listing, doomed, started)
            # Other processes sharing the store take this measure for their quota.
            self._put_marker(SweepMarker(started, total, swept=False))
        return summarize(doomed)

    def sweep(self, *, now: float | None = None) -> StoreUsage:
        """One sweep now: delete what is older than ``max_age``, then the least recently
        used down to 80% of ``max_store_bytes`` (never one used within ``min_age``), and
        stale temporary files; measure the store for the quota. Returns what went."""
        started = time.time()
        now = started if now is None else now
        listing = self._scan()
        doomed = plan_sweep(
            listing.artifacts,
            max_age=self.max_age,
            max_store_bytes=self.max_store_bytes,
            min_age=self.min_age,
            now=now,
        )
        self._remove(listing, doomed, stale_temps(listing.temps, now=now), now=now)
        total = self._census(listing, doomed, started)
        self._put_marker(SweepMarker(started, total))
        return summarize(doomed)

    def _put_marker(self, marker: SweepMarker) -> None:
        try:
            self._write_marker(marker.dumps())
        except OSError:
            pass  # a read-only store is still swept (and counted) in memory

    # -- internals -----------------------------------------------------------------------

    def _stripe(self, key: str) -> threading.Lock:
        return self._stripes[int(key[:8], 16) % _STRIPES]

    def _reuse(self, key: str) -> str | None:
        """The reference of an artifact this process already verified (refreshing its last
        use when due), or None when it must be looked at again."""
        with self._lock:
            last = self._known.get(key)
            if last is None:
                return None
            self._known.move_to_end(key)
            now = time.monotonic()
            due = now - last >= self._refresh_every
            if due:
                self._known[key] = now
        if not self._still_there(key):
            # Removed since (the store directory deleted, pruned by hand) or altered: look
            # again, write again, so a preview never names a file that is gone.
            self._drop(key)
            return None
        if due and not self._refresh(key):
            self._forget(key)  # deleted since (pruned by hand): look again, write again
            return None
        return self.ref_for(key)

    def _reuse_ref(self, ref: str) -> bool:
        key = self.key_of(ref)
        return key is not None and self._reuse(key) is not None

    def _valid_ref(self, ref: str) -> bool:
        key = self.key_of(ref)
        return key is not None and self._valid_key(key)

    def _valid_key(self, key: str) -> bool:
        if self._reuse(key) is not None:
            return True
        try:
            found = self._probe(key)
        except (OSError, ValueError):
            return False
        if found != "verified":
            return False
        self._refresh(key)
        self._remember(key)
        return True

    def _chunks(
        self, key: str, size: int, *, chunk: int | None = None, start: int = 0
    ) -> Iterator[bytes]:
        chunk = chunk or READ_CHUNK
        for at in range(start, size, chunk):
            data, now = self.read_window(key, at, min(at + chunk, size))
            if now != size or len(data) != min(chunk, size - at):
                self._drop(key)
                raise ArtifactNotFound("the artifact changed while it was read")
            yield data

    def forget(self, key: str) -> None:
        """Forget what this process verified and indexed of an artifact: its next use
        hashes it again (a reader saw another file take its name)."""
        self._drop(check_key(key))

    def changed(self, key: str) -> NoReturn:
        """An artifact was found changed while read: forget it, raise ArtifactNotFound."""
        self._drop(key)
        raise ArtifactNotFound("the artifact was truncated or altered after it was verified")

    def _drop(self, key: str) -> None:
        """Forget what this process verified and indexed of an artifact that changed."""
        self._forget(key)
        with self._lock:
            self._indexes.pop(key, None)
            self._sizes.pop(key, None)

    def _remember(self, key: str) -> None:
        with self._lock:
            self._known[key] = time.monotonic()
            self._known.move_to_end(key)
            _trim(self._known)

    def _forget(self, key: str) -> None:
        with self._lock:
            self._known.pop(key, None)

    def _reserve(self, key: str, size: int) -> None:
        if size > self.max_artifact_bytes:
            raise ArtifactStoreError(errno.EFBIG, "artifact exceeds max_artifact_bytes")
        with self._lock:
            fits = self._measured + self._pending_bytes + size <= self.max_store_bytes
            # The store is counted (in the background) at the first write of a store that
            # does no sweeps, which would otherwise count from zero; and again when a
            # write is refused, at most once every RECOUNT_SECONDS, since the count may
            # be out of date (another process pruned, files were removed by hand).
            count = not self._counting and (
                (fits and self._counted_at == -math.inf and self.sweep_interval <= 0)
                or (not fits and time.monotonic() - self._counted_at >= RECOUNT_SECONDS)
            )
            self._counting = self._counting or count
            if fits:
                old = self._pending.get(key)
                self._pending[key] = (size, None)
                self._pending_bytes += size - (old[0] if old else 0)
        if count:
            sweeper.submit("count the artifact store", self._count)
        if not fits:
            raise ArtifactStoreError(errno.ENOSPC, "store exceeds max_store_bytes")

    def _unreserve(self, key: str) -> None:
        with self._lock:
            old = self._pending.pop(key, None)
            if old is not None:
                self._pending_bytes -= old[0]

    def _written(self, key: str) -> None:
        with self._lock:
            old = self._pending.get(key)
            if old is not None:
                self._pending[key] = (old[0], time.time())
            if len(self._pending) > CACHE_ENTRIES:
                # No census came to count them (sweeps off or far apart): the finished
                # writes join the measured size, so the quota stays exact and the table
                # stays small however many artifacts a process writes.
                for done, (size, finished) in list(self._pending.items()):
                    if finished is not None:
                        del self._pending[done]
                        self._pending_bytes -= size
                        self._measured += size

    def _census(self, listing: Listing, doomed: list[Entry], started: float) -> int:
        """Adopt what a listing that began at ``started`` measured; returns the total."""
        total = sum(e.size for e in listing.artifacts) - sum(e.size for e in doomed)
        # Writes that went on while the listing ran: which of them it saw (and counted).
        with self._lock:
            late = {
                key + ".txt"
                for key, (_, finished) in self._pending.items()
                if finished is None or finished >= started
            }
        seen = None
        if late:
            gone = {e.name for e in doomed}
            seen = {e.name for e in listing.artifacts if e.name in late and e.name not in gone}
        self._adopt(total, started, seen)
        return total

    def _adopt(self, total: int, started: float, listed: set[str] | None = None) -> None:
        # A write that finished before the census began is in its total (or was deleted
        # since), and so is one the listing saw (``listed``: names it counted); any other,
        # still running or finished later, stays pending. Nothing is counted twice.
        with self._lock:
            self._measured = total
            self._counted_at = time.monotonic()
            self._counted_wall = started
            for key, (size, finished) in list(self._pending.items()):
                if (finished is not None and finished < started) or (
                    listed is not None and key + ".txt" in listed
                ):
                    del self._pending[key]
                    self._pending_bytes -= size

    def _remove(
        self, listing: Listing, doomed: list[Entry], temps: list[Entry], *, now: float
    ) -> None:
        names = [e.name for e in doomed] + [t.name for t in temps]
        names += [e.name for e in _stale_sidecars(listing, doomed, now)]
        if not names:
            return
        self._delete(names)
        gone: set[str] = set()
        for entry in doomed:
            key = entry.name[: -len(".txt")]
            self._drop(key)
            gone.add(self.ref_for(key))
        self._remove_decisions_naming(listing, gone)

    def _remove_decisions_naming(self, listing: Listing, gone: set[str]) -> None:
        """Decision records that name a deleted artifact go with it."""
        if not gone:
            return
        stale = []
        for entry in listing.decisions:
            if sweeper.stopping():
                return
            key = entry.name[: -len(".decision.json")]
            try:
                raw = self._fetch_decision(key)
                record = loads(raw) if raw is not None else None
            except (OSError, ValueError):
                continue
            refs = record.get("refs") if isinstance(record, dict) else None
            if isinstance(refs, list) and gone.intersection(r for r in refs if isinstance(r, str)):
                stale.append(entry.name)
                with self._lock:
                    self._decisions.pop(key, None)
        if stale:
            self._delete(stale)

    def _schedule_sweep(self) -> None:
        """Wake the background sweep when one is due: a clock read and a comparison."""
        if self.sweep_interval <= 0:
            return
        now = time.monotonic()
        if now < self._next_sweep:
            return
        with self._lock:
            if now < self._next_sweep:
                return
            self._next_sweep = now + self.sweep_interval
        sweeper.submit("sweep the artifact store", self._background_sweep)

    def _background_sweep(self) -> None:
        """On the sweeper thread: sweep, unless another process did within the interval
        (then take its measure for the quota)."""
        marker = self._marker(sweeps_only=True)
        if marker is not None:
            self._adopt(marker.total_bytes, marker.started)
            return
        self.sweep()

    def _count(self) -> None:
        """On the sweeper thread: the store's real size for the quota, deleting nothing.
        Another process's sweep or prune newer than this process's last count gives it
        (one small read); otherwise the store is listed."""
        try:
            marker = self._marker(sweeps_only=False)
            if marker is not None and marker.started > self._counted_wall:
                self._adopt(marker.total_bytes, marker.started)
                return
            started = time.time()
            self._census(self._scan(), [], started)
        finally:
            with self._lock:
                self._counting = False

    def _marker(self, *, sweeps_only: bool) -> SweepMarker | None:
        """The store's sweep marker if it can be believed: written by a sweep (or a prune,
        unless ``sweeps_only``) that started in the past and less than the sweep interval
        ago (with sweeps off, ``RECOUNT_SECONDS``), with a size no larger than
        ``max_store_bytes``.

        Any writer of the store can write the marker: one dated in the future (planted,
        or by a replica whose clock runs ahead) would stop this process's sweeps, and an
        absurd size would refuse every write. A marker outside these bounds is ignored
        and this process measures the store itself (a size over the quota is worth a
        measure of one's own, since it refuses writes)."""
        try:
            raw = self._read_marker()
        except OSError:
            return None
        marker = SweepMarker.loads(raw) if raw else None
        if marker is None or (sweeps_only and not marker.swept):
            return None
        age = time.time() - marker.started
        within = self.sweep_interval if self.sweep_interval > 0 else RECOUNT_SECONDS
        if not 0 <= age < within or marker.total_bytes > self.max_store_bytes:
            return None
        return marker


def _stale_sidecars(listing: Listing, doomed: list[Entry], now: float) -> list[Entry]:
    """The sidecars of deleted artifacts, and those whose artifact is gone (a listing may
    see a sidecar before its artifact: only old ones count as orphans)."""
    dying = {e.name[: -len(".txt")] for e in doomed}
    living = {e.name[: -len(".txt")] for e in listing.artifacts} - dying
    stale = []
    for entry in listing.sidecars:
        key = entry.name[:64]
        if key in dying or (key not in living and now - entry.used > STALE_TEMP_SECONDS):
            stale.append(entry)
    return stale


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


def _trim(cache: OrderedDict[str, Any]) -> None:
    while len(cache) > CACHE_ENTRIES:
        cache.popitem(last=False)
