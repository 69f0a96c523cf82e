"""The sweep marker is a file any writer of the store can write: only one that is
believable (dated in the past, within the interval) saves a sweep, and it gives no
measure (each process counts the store itself); its temporary files are listed and
removed like the others."""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path

import pytest

from budgetware import BudgetConfig
from budgetware.finalizer import LocalArtifactStore, ToolResult, finalize_batch
from budgetware.store import sweeper
from budgetware.store.select import store_for_config

DAY = 86400.0
HOUR = 3600.0
MIB = 1024 * 1024


def age(path: Path | str, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def drain() -> None:
    """Wait until the background thread has run every job submitted so far."""
    done = threading.Event()
    sweeper.submit("test", done.set)
    assert done.wait(30)


def write_marker(directory: Path, **record: object) -> None:
    (directory / ".budgetware-sweep.json").write_text(json.dumps(record))


def test_a_marker_dated_in_the_future_stops_no_sweep(tmp_path: Path) -> None:
    # Any writer of the store (or a replica whose clock runs ahead) can write the marker:
    # one ten years ahead with an absurd size stopped every sweep and refused every write.
    writer = LocalArtifactStore(tmp_path / "a")
    old = writer.put("old" * 1000)
    age(old, 90 * DAY)
    write_marker(writer.directory, started=time.time() + 10 * 365 * DAY, total_bytes=10**15)
    config = BudgetConfig(artifact_dir=tmp_path / "a", batch_budget=1000)
    store = store_for_config(config)
    assert isinstance(store, LocalArtifactStore)
    named = []
    for i in range(3):
        (result,) = finalize_batch(
            [ToolResult("c", "t", (f"{i}" * 5000,))], config=config, store=store
        )
        drain()
        named.append(result.persisted_output_files != ())
        store.retention._next_sweep = 0.0  # the interval has passed
    assert named == [True, True, True]
    assert not Path(old).exists()  # swept by age after all


@pytest.mark.parametrize(
    ("record", "believable"),
    [
        ({"started": "now"}, True),
        ({"started": "now", "total_bytes": 10**15}, True),  # an earlier version's: no size read
        ({"started": "nan"}, False),
        ({"started": "inf"}, False),
        ({"started": "ahead"}, False),  # a clock a minute ahead
        ({"started": "old"}, False),  # older than the interval
        ({"started": "yesterday, at noon"}, False),
        ({"begun": "now"}, False),
        (["not", "a", "record"], False),
    ],
)
def test_only_a_believable_marker_saves_a_sweep(
    tmp_path: Path, record: object, believable: bool
) -> None:
    writer = LocalArtifactStore(tmp_path / "a")
    writer.put("kept" * 100)
    if isinstance(record, dict):
        now = time.time()
        started = {"now": now - 1, "ahead": now + 60, "old": now - 700}
        started.update(nan=math.nan, inf=math.inf)
        record = {k: started.get(v, v) if isinstance(v, str) else v for k, v in record.items()}
    (writer.directory / ".budgetware-sweep.json").write_text(json.dumps(record))
    store = LocalArtifactStore(tmp_path / "a", sweep_interval=600, max_store_bytes=MIB)
    swept: list[object] = []
    store.retention.sweep = lambda **kw: swept.append(kw)  # type: ignore[method-assign]
    store.retention._background_sweep()  # never raises: a bad marker is no marker
    assert swept == ([] if believable else [{}])
    if believable:  # no sweep here: the store is counted instead, as it is now
        assert store.retention._measured + store.retention._pending_bytes == 400


def test_a_prune_saves_no_sweep(tmp_path: Path) -> None:
    # A prune by hand applies no configured retention: it writes no marker, so the
    # processes sharing the store still sweep.
    writer = LocalArtifactStore(tmp_path / "a")
    for i in range(3):
        writer.put(f"{i}" * 1000)
    writer.prune(older_than=30 * DAY, now=time.time())
    assert not (writer.directory / ".budgetware-sweep.json").exists()


def test_the_markers_temporary_file_is_seen_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    store.put("kept")
    # A writer of the marker killed between its temporary file and the rename.
    from budgetware.store import files

    with monkeypatch.context() as killed:
        killed.setattr(files.Folder, "replace", lambda self, src, dst: None)
        killed.setattr(files.Folder, "unlink", lambda self, name: None)
        store.sweep()
    (left,) = [p for p in store.directory.iterdir() if p.name.endswith(".tmp")]
    assert "budgetware-sweep.json" in left.name
    assert store.usage().temp_count == 1  # before: never listed, never removed
    age(left, 2 * HOUR)
    store.sweep()
    assert not left.exists()
