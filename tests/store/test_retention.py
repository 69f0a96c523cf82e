"""Retention that works for a process that runs for months: the quota is the store's real
size, a sweep off the request path evicts what is old or least recently used (never what a
live conversation names), every reuse keeps an artifact young, crashed writers' temporary
files go."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import pytest
from fs_watch import watch_file_system

from budgetware import ArtifactStoreError, BudgetConfig
from budgetware.core.artifacts import text_key
from budgetware.finalizer import LocalArtifactStore
from budgetware.store import sweeper
from budgetware.store.select import store_for_config

DAY = 86400.0
HOUR = 3600.0


def age(path: Path | str, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def names(store: LocalArtifactStore) -> set[str]:
    return {p.name for p in store.directory.iterdir() if p.suffix == ".txt"}


def test_prune_releases_the_quota(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a", max_store_bytes=3000)
    refs = [store.put(f"{i}" * 1000) for i in range(3)]
    with pytest.raises(ArtifactStoreError):
        store.put("3" * 1000)
    for ref in refs:
        age(ref, 10 * DAY)
    store.prune(older_than=DAY, now=time.time())
    # Before: the process-wide counter stayed at 3000 forever; now the store is empty.
    assert Path(store.put("3" * 1000)).exists()


def test_a_long_running_store_keeps_persisting_past_the_quota(tmp_path: Path) -> None:
    # A LiteLLM Proxy writes far more than max_store_bytes over its life: the sweep keeps
    # the store under it, and every write still gets its artifact.
    store = LocalArtifactStore(tmp_path / "a", max_store_bytes=10_000, min_age=0)
    for i in range(50):
        ref = store.put(f"{i:04d}" + "p" * 996)
        assert Path(ref).exists()
        age(ref, 60)  # written a minute ago: older than the minimum age of 0
        store.sweep()
    assert store.usage().total_bytes <= 10_000


def test_the_quota_counts_what_other_processes_wrote(tmp_path: Path) -> None:
    other = LocalArtifactStore(tmp_path / "a")
    for i in range(3):
        other.put(f"{i}" * 1000)
    # This process never wrote anything, but the store already holds 3000 bytes.
    store = LocalArtifactStore(tmp_path / "a", max_store_bytes=3500, min_age=DAY)
    store.sweep()  # measures; nothing may be evicted (all younger than a day)
    assert store.usage().total_bytes == 3000
    with pytest.raises(ArtifactStoreError):
        store.put("new" * 300)


def test_the_sweep_evicts_by_age_then_least_recently_used(tmp_path: Path) -> None:
    writer = LocalArtifactStore(tmp_path / "a")  # other processes, with other limits
    ancient = writer.put("a" * 1000)
    age(ancient, 40 * DAY)
    lru = []
    for i in range(9):
        ref = writer.put(f"{i}" * 1000)
        age(ref, (10 - i) * DAY)
        lru.append(ref)
    young = writer.put("y" * 1000)  # 11,000 bytes in all, over a 10,000 quota
    store = LocalArtifactStore(
        tmp_path / "a", max_store_bytes=10_000, max_age=30 * DAY, min_age=HOUR
    )
    gone = store.sweep()
    # The 40-day-old one by age; then least recently used first down to 80% of the quota.
    assert not Path(ancient).exists()
    assert [Path(r).exists() for r in lru] == [False, False] + [True] * 7
    assert Path(young).exists()
    assert gone.count == 3
    assert store.usage().total_bytes == 8000


def test_the_sweep_never_evicts_an_artifact_younger_than_the_minimum_age(
    tmp_path: Path,
) -> None:
    store = LocalArtifactStore(tmp_path / "a", max_store_bytes=10_000, min_age=HOUR)
    refs = [store.put(f"{i}" * 1000) for i in range(10)]
    for ref, hours in zip(refs, (4, 3, 2)):
        age(ref, hours * HOUR)
    store.sweep()  # 10,000 bytes, over the 8,000 target: the two least recently used go
    assert [Path(r).exists() for r in refs] == [False, False] + [True] * 8
    # A far smaller quota: only the one left that is older than an hour may go; the seven
    # a live conversation may still name stay, though the store stays over its target.
    small = LocalArtifactStore(tmp_path / "a", max_store_bytes=1000, min_age=HOUR)
    assert small.sweep().count == 1
    assert [Path(r).exists() for r in refs] == [False, False, False] + [True] * 7


def test_every_reuse_keeps_an_artifact_young(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a", min_age=0)
    text = "live conversation output " * 100
    ref = store.put(text, key=text_key(text))
    for _ in range(3):
        age(ref, 8 * DAY)
        assert store.put(text, key=text_key(text)) == ref
        # Before: only the first reuse in a process refreshed it.
        assert os.stat(ref).st_mtime > time.time() - DAY
    gone = LocalArtifactStore(store.directory).prune(older_than=7 * DAY, now=time.time())
    assert gone.count == 0


def test_reuse_refreshes_at_most_once_an_interval(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a", min_age=HOUR)  # refresh every 15 minutes
    text = "t" * 5000
    store.put(text, key=text_key(text))
    with watch_file_system() as events:
        for _ in range(100):
            store.put(text, key=text_key(text))
    assert events == []


def test_stale_temporary_files_are_counted_and_removed(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    store.put("kept")
    name = f"{text_key('crashed')}.txt"
    stale = store.directory / f".{name}.4242.140000.tmp"
    stale.write_bytes(b"x" * 5000)
    age(stale, 2 * HOUR)
    live = store.directory / f".{name}.4243.140001.tmp"  # a writer still at work
    live.write_bytes(b"y" * 100)
    usage = store.usage()
    assert (usage.count, usage.temp_count, usage.temp_bytes) == (1, 2, 5100)
    store.prune(older_than=30 * DAY, now=time.time())
    assert not stale.exists()
    assert live.exists()
    age(live, 2 * HOUR)
    store.sweep()
    assert not live.exists()
    assert names(store) == {f"{text_key('kept')}.txt"}


def test_the_sweep_runs_in_the_background_and_no_request_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalArtifactStore(tmp_path / "a", sweep_interval=3600)
    started = threading.Event()
    release = threading.Event()
    threads: list[str] = []

    def slow_sweep(*, now: float | None = None) -> object:
        threads.append(threading.current_thread().name)
        started.set()
        assert release.wait(30)
        return None

    monkeypatch.setattr(store.retention, "sweep", slow_sweep)
    # The sweep is due (it never ran): the put wakes it and returns while it is blocked.
    store.put("first")
    assert started.wait(30)
    store.put("second")  # while the sweep is still running
    release.set()
    store.put("third")  # at most once an interval: no second sweep
    assert threads == ["budgetware-sweeper"]


def drain() -> None:
    """Wait until the background thread has run every job submitted so far."""
    done = threading.Event()
    sweeper.submit("test", done.set)
    assert done.wait(30)


def test_the_sweeper_keeps_no_job_alive_once_it_has_run() -> None:
    # A job holds its store (a bound method): the idle thread used to keep the last one.
    class Owner:
        def __init__(self) -> None:
            self.done = threading.Event()

        def job(self) -> None:
            self.done.set()

    owner = Owner()
    gone = threading.Event()
    weakref.finalize(owner, gone.set)
    sweeper.submit("test", owner.job)
    assert owner.done.wait(10)
    del owner
    deadline = time.monotonic() + 10
    while not gone.is_set() and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    assert gone.is_set(), "the sweeper thread still holds the job that ran"


def test_an_entry_points_store_sweeps_by_default(tmp_path: Path) -> None:
    config = BudgetConfig(artifact_dir=tmp_path / "a", artifact_min_age=0)
    assert config.artifact_sweep_interval == 600
    store = store_for_config(config)
    assert isinstance(store, LocalArtifactStore)
    stale = tmp_path / "a" / f".{text_key('x')}.txt.1.2.tmp"
    ref = store.put("first")
    stale.write_bytes(b"left by a killed writer")
    age(stale, DAY)
    age(ref, 31 * DAY)
    drain()  # the sweep that the first put woke may have run before the files were aged
    # Ten minutes later: due again, and the marker of that sweep is out of date.
    store.retention._next_sweep = 0.0
    (tmp_path / "a" / ".budgetware-sweep.json").unlink()
    store.put("second")
    drain()
    assert not Path(ref).exists()
    assert not stale.exists()
    assert (tmp_path / "a" / ".budgetware-sweep.json").exists()


def test_a_sweep_by_another_process_within_the_interval_is_not_repeated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = LocalArtifactStore(tmp_path / "a")
    for i in range(3):
        other.put(f"{i}" * 1000)
    other.sweep()  # another process swept just now, and measured 3000 bytes
    store = LocalArtifactStore(tmp_path / "a", max_store_bytes=3500, sweep_interval=600)
    swept: list[object] = []
    monkeypatch.setattr(store, "sweep", lambda **kw: swept.append(kw))
    store.put("a" * 400)
    drain()
    assert swept == []
    # It took the other sweep's measure for its quota: 3000 + 400 written + 200 > 3500.
    with pytest.raises(ArtifactStoreError):
        store.put("b" * 200)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_sweeps_on_its_own_thread(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a", sweep_interval=600)
    store.put("parent")
    drain()  # the parent's sweeper thread exists now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        ok = False
        try:
            os.close(read)
            store.retention._next_sweep = 0.0
            (tmp_path / "a" / ".budgetware-sweep.json").unlink()
            store.put("child")
            drain()
            ok = (tmp_path / "a" / ".budgetware-sweep.json").exists()
        finally:
            os.write(write, b"1" if ok else b"0")
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    assert answer == b"1"


def test_a_sweep_stopped_by_interpreter_exit_deletes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalArtifactStore(tmp_path / "a", max_age=DAY)
    refs = [store.put(f"{i}" * 100) for i in range(200)]
    for ref in refs:
        age(ref, 40 * DAY)
    exiting = sweeper._Sweeper()
    exiting.stop.set()
    monkeypatch.setattr(sweeper, "_SWEEPER", exiting)
    # The listing stops at its next safe point; nothing is decided on half of it.
    with pytest.raises(sweeper.Stopping):
        store.sweep()
    assert all(Path(ref).exists() for ref in refs)


_EXITING_CHILD = """
import os, sys, time
from budgetware.finalizer import LocalArtifactStore
store = LocalArtifactStore(sys.argv[1], sweep_interval=600)
for i in range(3000):
    ref = store.put(f"{i:05d}" * 20)
    os.utime(ref, (time.time() - 90 * 86400,) * 2)
store.retention._next_sweep = 0.0
store.put("wakes the sweep")
# and exits at once, while the sweep may be running
"""


@pytest.mark.files_in_subprocesses
def test_the_interpreter_exits_cleanly_during_a_sweep(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _EXITING_CHILD, str(tmp_path / "a")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0
    assert done.stderr == ""
