"""What a store remembers per process stays bounded, however many artifacts it writes."""

from __future__ import annotations

import threading
import tracemalloc
from pathlib import Path

import pytest

from budgetware.core.artifacts import text_key
from budgetware.store import base, decisions, retention, sweeper
from budgetware.store.local import LocalArtifactStore

ENTRIES = 32


@pytest.fixture
def small_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "CACHE_ENTRIES", ENTRIES)
    monkeypatch.setattr(decisions, "ENTRIES", ENTRIES)
    monkeypatch.setattr(retention, "PENDING_ENTRIES", ENTRIES)


def _fill(store: LocalArtifactStore, count: int, start: int = 0) -> int:
    written = 0
    for i in range(start, start + count):
        text = f"output {i} " * 20
        ref = store.put(text, key=text_key(text))
        store.record_decision(text_key("bounded " + text), (ref,))
        assert store.lookup_decision(text_key("bounded " + text)) == (ref,)
        written += len(text.encode())
    return written


def test_every_per_process_table_is_bounded_with_sweeps_off(
    tmp_path: Path, small_caches: None
) -> None:
    # sweep_interval=0: after the count of the first write, no census counts the writes
    # of this process.
    store = LocalArtifactStore(tmp_path, sweep_interval=0)
    written = _fill(store, 1)
    drain()
    written += _fill(store, 10 * ENTRIES, start=1)
    assert len(store._known) <= ENTRIES
    assert len(store.decisions._read) <= ENTRIES
    assert len(store.retention._pending) <= ENTRIES + 1
    assert len(store._stripes) == 64  # per-key locks: a fixed set
    # The quota still counts every byte written.
    assert store.retention._measured + store.retention._pending_bytes == written


def test_memory_does_not_grow_per_artifact(tmp_path: Path, small_caches: None) -> None:
    store = LocalArtifactStore(tmp_path, sweep_interval=0)
    _fill(store, 4 * ENTRIES)  # caches full
    # The first write's census (and any job an earlier test left on the shared background
    # thread) runs before the window, not inside it: what it keeps is not per artifact.
    drain()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        _fill(store, 20 * ENTRIES, start=4 * ENTRIES)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    stats = [
        stat
        for stat in after.compare_to(before, "filename")
        if "budgetware" in str(stat.traceback)
    ]
    grown = sum(stat.size_diff for stat in stats)
    # 640 more artifacts: a few bytes of noise at most, not ~370 bytes each.
    assert grown < 20 * ENTRIES * 50, [str(stat) for stat in stats if stat.size_diff > 1000]


def drain() -> None:
    """Wait until the background thread has run every job submitted so far."""
    done = threading.Event()
    sweeper.submit("test", done.set)
    assert done.wait(30)
