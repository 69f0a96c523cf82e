"""Artifact lifecycle: what a store holds (usage) and which artifacts pruning removes.

Pure decisions over a listing of ``(name, size, last use)``; every store backend lists its
artifacts and deletes what ``plan_prune`` chose. No clock: ``now`` is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Entry", "StoreUsage", "plan_prune", "summarize"]


@dataclass(frozen=True)
class Entry:
    """One artifact as listed: its name, size in bytes, and last use (a timestamp)."""

    name: str
    size: int
    used: float


@dataclass(frozen=True)
class StoreUsage:
    """A summary of artifacts: how many, how many bytes, and their last-use time range."""

    count: int
    total_bytes: int
    oldest: float | None
    newest: float | None


def summarize(entries: list[Entry]) -> StoreUsage:
    used = [e.used for e in entries]
    return StoreUsage(
        len(entries),
        sum(e.size for e in entries),
        min(used) if used else None,
        max(used) if used else None,
    )


def plan_prune(
    entries: Iterable[Entry],
    *,
    older_than: float | None,
    max_total_bytes: int | None,
    now: float,
) -> list[Entry]:
    """The entries to delete: unused for ``older_than`` seconds, then the least recently
    used until the rest fits ``max_total_bytes``."""
    ordered = sorted(entries, key=lambda e: (e.used, e.name))
    doomed: list[Entry] = []
    if older_than is not None:
        doomed += [e for e in ordered if now - e.used > older_than]
    if max_total_bytes is not None:
        remaining = ordered[len(doomed) :]  # sorted by use: the old ones lead
        total = sum(e.size for e in remaining)
        for entry in remaining:  # least recently used first
            if total <= max_total_bytes:
                break
            doomed.append(entry)
            total -= entry.size
    return doomed
