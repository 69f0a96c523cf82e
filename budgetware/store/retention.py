"""The quota and retention of a store.

The quota counts the store's real size: this process's last listing of it, plus what it
wrote since; a write past ``max_store_bytes`` is refused. The sweep runs at most once a
``sweep_interval`` on the background thread, skipped when another process swept within it
(a marker in the store says when).
"""

from __future__ import annotations

import contextlib
import errno
import math
import threading
import time
from collections.abc import Callable
from typing import Protocol

from budgetware.core.artifacts import ArtifactStoreError
from budgetware.core.jsonio import dumps_bytes, loads
from budgetware.store import sweeper
from budgetware.store.decisions import Decisions
from budgetware.store.lifecycle import (
    MARKER,
    Entry,
    Listing,
    StoreUsage,
    plan_prune,
    plan_sweep,
    stale_temps,
    summarize,
)

__all__ = ["DELETE_BATCH", "FIRST_COUNT_SECONDS", "RECOUNT_SECONDS", "Progress", "Retention"]

# A write refused for the quota has the store counted again, at most once this often.
RECOUNT_SECONDS = 60.0
# Uncounted writes are folded into the measured size past this many (sweeps may be off).
PENDING_ENTRIES = 4096
# A process's first write waits this long at most for its count of the store.
FIRST_COUNT_SECONDS = 1.0
# Files deleted per call to the backend (S3's DeleteObjects takes 1,000), progress between.
DELETE_BATCH = 1000

Progress = Callable[[int, int], object]
"""``progress(done, total)``: how many of the files to delete are deleted."""


class _Store(Protocol):
    """What retention needs of the store it keeps."""

    max_artifact_bytes: int
    decisions: Decisions

    def ref_for(self, key: str) -> str: ...

    def forget(self, key: str) -> None: ...

    def _scan(self) -> Listing: ...

    def _delete(self, names: list[str]) -> None: ...

    def _read_record(self, name: str) -> bytes | None: ...

    def _write_record(self, name: str, data: bytes, *, replace: bool) -> None: ...


class Retention:
    """The quota, the sweep and pruning of one store."""

    def __init__(
        self,
        store: _Store,
        *,
        max_store_bytes: int,
        max_age: float,
        min_age: float,
        sweep_interval: float,
    ) -> None:
        if max_store_bytes <= 0:
            raise ValueError("store limits are positive byte counts")
        if min(max_age, min_age, sweep_interval) < 0:
            raise ValueError("ages and intervals are seconds, 0 or more")
        if 0 < max_age < min_age:
            raise ValueError(
                f"max_age must be 0 (keep) or at least min_age ({max_age:g} < {min_age:g})"
            )
        self.store = store
        self.max_store_bytes = max_store_bytes
        self.max_age = max_age
        self.min_age = min_age
        self.sweep_interval = sweep_interval
        self._lock = threading.Lock()
        self._first_count: threading.Thread | None = None
        # The size at the last count, and this process's writes not counted yet
        # (key -> (size, wall time the write finished, or None)).
        self._measured = 0
        self._pending: dict[str, tuple[int, float | None]] = {}
        self._pending_bytes = 0
        self._next_sweep = 0.0
        self._counted_at = -math.inf
        self._counting = False

    # -- the quota -----------------------------------------------------------------------

    def reserve(self, key: str, size: int) -> None:
        """Count a write about to happen, or refuse it (ArtifactStoreError) if it does not
        fit. A process's first write counts the store first."""
        if size > self.store.max_artifact_bytes:
            raise ArtifactStoreError(errno.EFBIG, "artifact exceeds max_artifact_bytes")
        if self._counted_at == -math.inf:
            self._count_first()
        with self._lock:
            fits = self._measured + self._pending_bytes + size <= self.max_store_bytes
            # The count may be out of date (another process pruned): count again.
            recount = (
                not fits
                and not self._counting
                and time.monotonic() - self._counted_at >= RECOUNT_SECONDS
            )
            self._counting = self._counting or recount
            if fits:
                old = self._pending.get(key)
                self._pending[key] = (size, None)
                self._pending_bytes += size - (old[0] if old else 0)
        if recount:
            sweeper.submit("count the artifact store", self._recount)
        if not fits:
            raise ArtifactStoreError(errno.ENOSPC, "store exceeds max_store_bytes")

    def unreserve(self, key: str) -> None:
        """A reserved write that wrote nothing."""
        with self._lock:
            old = self._pending.pop(key, None)
            if old is not None:
                self._pending_bytes -= old[0]

    def written(self, key: str) -> None:
        """A reserved write that finished."""
        with self._lock:
            old = self._pending.get(key)
            if old is not None:
                self._pending[key] = (old[0], time.time())
            if len(self._pending) > PENDING_ENTRIES:
                for done, (size, finished) in list(self._pending.items()):
                    if finished is not None:
                        del self._pending[done]
                        self._pending_bytes -= size
                        self._measured += size

    def _count_first(self) -> None:
        """Count the store before this process's first write (waiting a bounded time)."""
        with self._lock:
            counting = self._first_count
            if counting is None or not counting.is_alive():  # (or a forked child)
                counting = self._first_count = threading.Thread(
                    target=self._count_quietly, name="budgetware-count", daemon=True
                )
                counting.start()
        counting.join(FIRST_COUNT_SECONDS)

    def _count_quietly(self) -> None:
        # On a failure the next write counts again (and fails as this count did).
        with contextlib.suppress(Exception):
            self.count()

    def count(self) -> None:
        """List the store and take what it holds now as its size, deleting nothing."""
        started = time.time()
        self._census(self.store._scan(), [], started)

    def _recount(self) -> None:
        try:
            self.count()
        finally:
            with self._lock:
                self._counting = False

    def _census(self, listing: Listing, doomed: list[Entry], started: float) -> None:
        """Adopt what a listing that began at ``started`` measured: a write it saw, or that
        finished before it began, is in its total; any other stays pending."""
        total = sum(e.size for e in listing.artifacts) - sum(e.size for e in doomed)
        gone = {e.name for e in doomed}
        seen = {e.name for e in listing.artifacts} - gone
        with self._lock:
            self._measured = total
            self._counted_at = time.monotonic()
            for key, (size, finished) in list(self._pending.items()):
                if (finished is not None and finished < started) or key + ".txt" in seen:
                    del self._pending[key]
                    self._pending_bytes -= size

    # -- retention -----------------------------------------------------------------------

    def usage(self) -> StoreUsage:
        """What the store holds (see ``StoreUsage``)."""
        listing = self.listing()
        return summarize(listing.artifacts, listing.temps)

    def listing(self) -> Listing:
        """One pass over the store: its artifacts, records and temporary files."""
        return self.store._scan()

    def prune(
        self,
        *,
        older_than: float | None = None,
        max_total_bytes: int | None = None,
        now: float,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> StoreUsage:
        """Delete artifacts unused for ``older_than`` seconds, then the least recently used
        until the rest fits ``max_total_bytes``, and crashed writers' temporary files;
        returns what was (or would be) deleted. ``progress(deleted, total)`` follows the
        deletions.
        """
        started = time.time()
        listing = self.store._scan()
        doomed = plan_prune(
            listing.artifacts, older_than=older_than, max_total_bytes=max_total_bytes, now=now
        )
        if not dry_run:
            self._remove(listing, doomed, stale_temps(listing.temps, now=now), progress)
            self._census(listing, doomed, started)
        return summarize(doomed)

    def sweep(self, *, now: float | None = None, progress: Progress | None = None) -> StoreUsage:
        """One sweep now: delete what is older than ``max_age``, then the least recently
        used down to ``SWEEP_TARGET`` of ``max_store_bytes`` (never one used within
        ``min_age``), and stale temporary files; count the store. Returns what went
        (``progress``: see ``prune``)."""
        started = time.time()
        now = started if now is None else now
        listing = self.store._scan()
        doomed = plan_sweep(
            listing.artifacts,
            max_age=self.max_age,
            max_store_bytes=self.max_store_bytes,
            min_age=self.min_age,
            now=now,
        )
        self._remove(listing, doomed, stale_temps(listing.temps, now=now), progress)
        self._census(listing, doomed, started)
        with contextlib.suppress(OSError):  # read-only: still swept (and counted) in memory
            self.store._write_record(MARKER, dumps_bytes({"started": started}), replace=True)
        return summarize(doomed)

    def _remove(
        self,
        listing: Listing,
        doomed: list[Entry],
        temps: list[Entry],
        progress: Progress | None = None,
    ) -> None:
        names = [e.name for e in doomed] + [t.name for t in temps]
        if not names:
            return
        for start in range(0, len(names), DELETE_BATCH):
            self.store._delete(names[start : start + DELETE_BATCH])
            if progress is not None:
                progress(min(start + DELETE_BATCH, len(names)), len(names))
        gone: set[str] = set()
        for entry in doomed:
            key = entry.name[: -len(".txt")]
            self.store.forget(key)
            gone.add(self.store.ref_for(key))
        self.store.decisions.remove_naming(listing.decisions, gone)

    def schedule_sweep(self) -> None:
        """Wake the background sweep when one is due."""
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
        """Sweep, unless another process did within the interval (then count, if due)."""
        if not self._swept_elsewhere():
            self.sweep()
        elif time.monotonic() - self._counted_at >= self.sweep_interval:
            self.count()

    def _swept_elsewhere(self) -> bool:
        """Whether the store's marker says a sweep started less than the interval ago (a
        marker dated in the future, or malformed, is ignored)."""
        try:
            raw = self.store._read_record(MARKER)
            started = float(loads(raw)["started"]) if raw else math.nan
        except (OSError, ValueError, TypeError, KeyError, OverflowError):
            return False
        return 0 <= time.time() - started < self.sweep_interval
