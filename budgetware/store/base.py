"""Storing artifacts: content-addressed outputs written once, named only once their bytes
were checked against their name, and the interface a backend (local, S3) implements.

Every reuse refreshes an artifact's last use (at most once every ``min_age / 4`` per
process), so the sweep keeps what a conversation keeps naming.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from typing import Literal, TypedDict

from budgetware.core.artifacts import ArtifactNotFound, check_key
from budgetware.store.decisions import Decisions
from budgetware.store.lifecycle import Listing, StoreUsage
from budgetware.store.retention import Retention

__all__ = ["ArtifactChanged", "ContentStore", "Listing", "Probe", "check_key", "named_stores"]

MIB = 1024 * 1024
HOUR = 3600.0
DAY = 24 * HOUR

# Artifacts verified, remembered per store object (LRU).
CACHE_ENTRIES = 4096
_STRIPES = 64  # per-key locks: a fixed set, whatever the number of keys

_KEY = re.compile(r"[0-9a-f]{64}")
_ARTIFACT = re.compile(r"[0-9a-f]{64}\.txt")
# What a backend found under an artifact's name.
Probe = Literal["absent", "verified", "false"]


class Limits(TypedDict, total=False):
    """A store's limits (``ContentStore``'s keyword arguments), for the backends."""

    max_artifact_bytes: int
    max_store_bytes: int
    max_age: float
    min_age: float
    sweep_interval: float


class ArtifactChanged(ArtifactNotFound):
    """The artifact under a name is no longer the one a reader verified."""


# The stores that named an artifact in this process: a reference printed here reads back
# whichever entry point set up its store.
_NAMED: weakref.WeakSet[ContentStore] = weakref.WeakSet()
_NAMED_LOCK = threading.Lock()


def named_stores() -> list[ContentStore]:
    """The stores that named (wrote, or found and verified) an artifact in this process."""
    with _NAMED_LOCK:
        return list(_NAMED)


class ContentStore:
    """A content-addressed artifact store; subclasses provide the backend primitives and
    ``ref_prefix``, what every reference to one of their artifacts starts with."""

    ref_prefix: str

    def __init__(
        self,
        *,
        max_artifact_bytes: int = 50 * MIB,
        max_store_bytes: int = 500 * MIB,
        max_age: float = 30 * DAY,
        min_age: float = HOUR,
        sweep_interval: float = 0.0,
    ) -> None:
        if max_artifact_bytes <= 0:
            raise ValueError("store limits are positive byte counts")
        self.max_artifact_bytes = max_artifact_bytes
        self.retention = Retention(
            self,
            max_store_bytes=max_store_bytes,
            max_age=max_age,
            min_age=min_age,
            sweep_interval=sweep_interval,
        )
        self.decisions = Decisions(self)
        self._refresh_every = min_age / 4
        self._lock = threading.Lock()
        self._stripes = [threading.Lock() for _ in range(_STRIPES)]
        # key -> monotonic time this process last refreshed its last use
        self._known: OrderedDict[str, float] = OrderedDict()
        self._named = False

    # -- the backend ---------------------------------------------------------------------

    @property
    def location(self) -> str:
        """Where the store is, as a person would name it (a directory, an s3:// URL)."""
        raise NotImplementedError

    def ref_for(self, key: str) -> str:
        """The reference a preview names for ``key``: ``ref_prefix``, the key and ".txt"."""
        return f"{self.ref_prefix}{key}.txt"

    def key_of(self, ref: str) -> str | None:
        """The key of a reference as ``ref_for`` writes it, or of a bare SHA-256 hex."""
        if _KEY.fullmatch(ref):
            return ref
        name = ref[len(self.ref_prefix) :] if ref.startswith(self.ref_prefix) else ""
        return name[:64] if _ARTIFACT.fullmatch(name) else None

    def _probe(self, key: str) -> Probe:
        """Whether the artifact exists and its bytes hash to ``key``."""
        raise NotImplementedError

    def _probe_for_write(self, key: str) -> Probe:
        """``_probe`` before a write; "absent" without looking is allowed for a backend whose
        ``_write(replace=False)`` verifies what it finds itself."""
        return self._probe(key)

    def _write(self, key: str, data: bytes, *, replace: bool) -> bool:
        """Store ``data`` under ``key``; False when a verified artifact was there already
        (the backend then refreshed its last use)."""
        raise NotImplementedError

    def _refresh(self, key: str) -> bool:
        """Mark the artifact used now; False if it is gone. May defer the work."""
        raise NotImplementedError

    def _still_there(self, key: str) -> bool:
        """Whether an artifact this process verified is still there, checked on every
        reuse; by default (S3: a round trip) reuse trusts what was verified."""
        return True

    def _read_record(self, name: str) -> bytes | None:
        """A small record (a decision, the sweep's marker) as stored, or None."""
        raise NotImplementedError

    def _write_record(self, name: str, data: bytes, *, replace: bool) -> None:
        """Write a small record; ``replace`` replaces one there."""
        raise NotImplementedError

    def _scan(self) -> Listing:
        raise NotImplementedError

    def _delete(self, names: list[str]) -> None:
        raise NotImplementedError

    def read_piece(
        self, key: str, start: int, end: int, version: Hashable | None = None
    ) -> tuple[bytes, int, Hashable]:
        """Bytes ``start`` to ``end`` (exclusive) of the artifact, its size, and its version
        (what tells it from bytes put under the name later). ArtifactChanged if it is no
        longer ``version``; ArtifactNotFound if there is none."""
        raise NotImplementedError

    # -- the ArtifactStore protocol ----------------------------------------------------

    def put(self, text: str, *, key: str | None = None) -> str:
        """Store ``text`` (once) and return its reference."""
        return self.put_reporting(text, key=key)[0]

    def put_reporting(
        self, text: str, *, key: str | None = None, data: bytes | None = None
    ) -> tuple[str, bool]:
        """``put``, and whether this call wrote the artifact (False: it was there, verified);
        ``data``: ``text``'s UTF-8 bytes (surrogates kept), where the caller has them."""
        if key is not None:
            ref = self._reuse(key)
            if ref is not None:
                return ref, False
        data = text.encode("utf-8", "surrogatepass") if data is None else data
        if key is None:
            key = hashlib.sha256(data).hexdigest()
        check_key(key)
        wrote = False
        with self._stripe(key):
            ref = self._reuse(key)
            if ref is not None:
                return ref, False
            self.retention.schedule_sweep()
            found = self._probe_for_write(key)
            if found == "verified":
                self._refresh(key)  # reuse counts as use
            else:
                self.retention.reserve(key, len(data))
                try:
                    wrote = self._write(key, data, replace=found == "false")
                except BaseException:
                    self.retention.unreserve(key)
                    raise
                if wrote:
                    self.retention.written(key)
                else:
                    self.retention.unreserve(key)
            self._remember(key)
        return self.ref_for(key), wrote

    def stored_reference(self, key: str) -> str | None:
        """The reference of the artifact under ``key`` if it is stored and verifies, else
        None (also when the store cannot be reached); writes nothing. Lets the finalizer
        skip the upload of an artifact another process wrote."""
        check_key(key)
        ref = self._reuse(key)
        if ref is not None:
            return ref
        found = self.checked(key)
        self.retention.schedule_sweep()  # as a put does: a process that only reuses sweeps too
        return self.ref_for(key) if found else None

    def record_decision(self, key: str, refs: tuple[str, ...]) -> None:
        """See ``Decisions.record``."""
        self.decisions.record(key, refs)

    def lookup_decision(self, key: str) -> tuple[str, ...] | None:
        """See ``Decisions.lookup``."""
        return self.decisions.lookup(key)

    def note_named(self, text: str) -> None:
        """See ``Decisions.note_named``."""
        self.decisions.note_named(text)

    # -- retention ---------------------------------------------------------------------

    def usage(self) -> StoreUsage:
        """See ``Retention.usage``."""
        return self.retention.usage()

    def prune(
        self,
        *,
        older_than: float | None = None,
        max_total_bytes: int | None = None,
        now: float,
        dry_run: bool = False,
    ) -> StoreUsage:
        """See ``Retention.prune``."""
        return self.retention.prune(
            older_than=older_than, max_total_bytes=max_total_bytes, now=now, dry_run=dry_run
        )

    def sweep(self, *, now: float | None = None) -> StoreUsage:
        """See ``Retention.sweep``."""
        return self.retention.sweep(now=now)

    # -- what this process verified ------------------------------------------------------

    def reused(self, ref: str) -> bool:
        """Whether ``ref`` names an artifact this process verified (refreshed when due)."""
        key = self.key_of(ref)
        return key is not None and self._reuse(key) is not None

    def checked_ref(self, ref: str) -> bool:
        """Whether ``ref`` names an artifact of this store whose bytes verify."""
        key = self.key_of(ref)
        return key is not None and self.checked(key)

    def checked(self, key: str) -> bool:
        """Whether the artifact exists and hashes to its name (a True is remembered)."""
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

    def used(self, key: str) -> None:
        """A reader read the artifact: refresh its last use, as every reuse does."""
        if not self.refreshed_lately(key) and self._refresh(key):
            self._remember(key)

    def refreshed_lately(self, key: str) -> bool:
        """Whether this process refreshed the artifact's last use within ``min_age / 4``."""
        with self._lock:
            last = self._known.get(key)
        return last is not None and time.monotonic() - last < self._refresh_every

    def forget(self, key: str) -> None:
        """Forget that this process verified an artifact (it was deleted)."""
        with self._lock:
            self._known.pop(key, None)

    def _stripe(self, key: str) -> threading.Lock:
        return self._stripes[int(key[:8], 16) % _STRIPES]

    def _reuse(self, key: str) -> str | None:
        """The reference of an artifact this process verified (refreshing its last use
        when due), or None when it must be looked at again."""
        with self._lock:
            last = self._known.get(key)
            if last is None:
                return None
            self._known.move_to_end(key)
            now = time.monotonic()
            due = now - last >= self._refresh_every
            if due:
                self._known[key] = now
        if not self._still_there(key) or (due and not self._refresh(key)):
            # Gone or altered since: look and write again, so a preview never names it.
            self.forget(key)
            return None
        return self.ref_for(key)

    def _remember(self, key: str) -> None:
        with self._lock:
            self._known[key] = time.monotonic()
            self._known.move_to_end(key)
            while len(self._known) > CACHE_ENTRIES:
                self._known.popitem(last=False)
        if not self._named:
            self._named = True
            with _NAMED_LOCK:
                _NAMED.add(self)
