"""Artifact lifecycle: what a store holds, and which artifacts pruning and the sweep remove
(pure decisions over a listing; ``now`` is passed in)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "MARKER",
    "STALE_TEMP_SECONDS",
    "SWEEP_TARGET",
    "Entry",
    "Listing",
    "StoreUsage",
    "plan_prune",
    "plan_sweep",
    "stale_temps",
    "summarize",
]

# The record of the last sweep, in the store: when it started.
MARKER = ".budgetware-sweep.json"
# A temporary file untouched this long belongs to a writer that crashed.
STALE_TEMP_SECONDS = 600.0
# The sweep brings the store down to this share of max_store_bytes: room for the writes
# until the next sweep.
SWEEP_TARGET = 0.8


class Entry(NamedTuple):
    """One artifact as listed: its name, size in bytes, and last use (a timestamp)."""

    name: str
    size: int
    used: float


@dataclass
class Listing:
    """One pass over a store: artifacts, decision records and temporary files."""

    artifacts: list[Entry] = field(default_factory=list)
    decisions: list[Entry] = field(default_factory=list)
    temps: list[Entry] = field(default_factory=list)


@dataclass(frozen=True)
class StoreUsage:
    """How many artifacts, their bytes and last-use range; and writers' temporary files."""

    count: int
    total_bytes: int
    oldest: float | None
    newest: float | None
    temp_count: int = 0
    temp_bytes: int = 0


def summarize(entries: list[Entry], temps: Iterable[Entry] = ()) -> StoreUsage:
    used = [e.used for e in entries]
    temp_sizes = [t.size for t in temps]
    return StoreUsage(
        len(entries),
        sum(e.size for e in entries),
        min(used) if used else None,
        max(used) if used else None,
        len(temp_sizes),
        sum(temp_sizes),
    )


def plan_prune(
    entries: Iterable[Entry],
    *,
    older_than: float | None,
    max_total_bytes: int | None,
    now: float,
    min_age: float | None = None,
) -> list[Entry]:
    """The entries to delete: unused for ``older_than`` seconds, then the least recently
    used until the rest fits ``max_total_bytes``; never one used within ``min_age``."""
    entries = list(entries)
    doomed: list[Entry] = []
    if older_than is not None:
        doomed = [e for e in entries if now - e.used > older_than]
    if max_total_bytes is None:
        return doomed
    total = sum(e.size for e in entries) - sum(e.size for e in doomed)
    gone = {e.name for e in doomed}
    remaining = sorted((e for e in entries if e.name not in gone), key=lambda e: (e.used, e.name))
    for entry in remaining:  # least recently used first
        if total <= max_total_bytes:
            break
        if min_age is not None and now - entry.used <= min_age:
            break  # this one and every later one may still be named by a conversation
        doomed.append(entry)
        total -= entry.size
    return doomed


def plan_sweep(
    entries: Iterable[Entry],
    *,
    max_age: float,
    max_store_bytes: int,
    min_age: float,
    now: float,
) -> list[Entry]:
    """What an automatic sweep deletes: entries unused for ``max_age`` (0: none by age),
    then the least recently used until the rest is at most ``SWEEP_TARGET`` of
    ``max_store_bytes``; never an entry used within ``min_age`` seconds."""
    target = int(max_store_bytes * SWEEP_TARGET)
    return plan_prune(
        entries, older_than=max_age or None, max_total_bytes=target, now=now, min_age=min_age
    )


def stale_temps(temps: Iterable[Entry], *, now: float) -> list[Entry]:
    """Temporary files untouched for ``STALE_TEMP_SECONDS``: their writer is gone."""
    return [t for t in temps if now - t.used > STALE_TEMP_SECONDS]
