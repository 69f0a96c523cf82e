"""The local artifact store: content-addressed, atomic, private, bounded, never following links."""

from __future__ import annotations

import os
import shutil
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from fs_watch import watch_file_system

from budgetware import ArtifactStoreError, BudgetConfig
from budgetware.core.artifacts import text_key
from budgetware.finalizer import ArtifactStore, LocalArtifactStore, ToolResult, finalize_batch
from budgetware.store import sweeper
from budgetware.store.select import store_for_config


def test_local_store_satisfies_the_protocol(store: LocalArtifactStore) -> None:
    assert isinstance(store, ArtifactStore)


def test_put_writes_the_full_text_under_its_sha256(store: LocalArtifactStore) -> None:
    text = "full output \ud800 汉"
    ref = store.put(text)
    assert Path(ref) == store.directory / f"{text_key(text)}.txt"
    assert Path(ref).read_bytes() == text.encode("utf-8", "surrogatepass")


def test_directory_is_0700_and_files_0600(store: LocalArtifactStore) -> None:
    ref = store.put("secret")
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(Path(ref).stat().st_mode) == 0o600


def test_an_existing_artifact_is_reused_not_rewritten(tmp_path: Path) -> None:
    first = LocalArtifactStore(tmp_path / "a")
    ref = first.put("same text")
    before = os.stat(ref)
    second = LocalArtifactStore(tmp_path / "a")  # another process, say
    with watch_file_system() as events:
        assert second.put("same text") == ref
    after = os.stat(ref)
    assert before.st_ino == after.st_ino
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT
    opened_for_writing = [a for e, a in events if e == "open" and (a[2] or 0) & writes]
    assert opened_for_writing == []
    assert not any(e in {"os.link", "os.rename"} for e, _ in events)
    assert second.retention._pending_bytes == 0
    # Reuse marks the artifact as used (its modification time), for pruning.
    assert after.st_mtime_ns >= before.st_mtime_ns


def test_a_store_directory_removed_under_a_running_process_is_written_again(
    tmp_path: Path,
) -> None:
    # rm -rf of the cache (or a test runner reusing a removed temporary path) within the
    # refresh interval: the next preview must still name a file holding the full output.
    store = LocalArtifactStore(tmp_path / "cache")
    text = "the full output " * 2000
    batch = [ToolResult("c", "t", (text,))]
    config = BudgetConfig(batch_budget=1000)
    (first,) = finalize_batch(batch, config=config, store=store)
    for remove in (lambda ref: os.unlink(ref), lambda ref: shutil.rmtree(store.directory)):
        remove(first.persisted_output_files[0])
        (again,) = finalize_batch(batch, config=config, store=store)
        assert again == first  # the same preview bytes, naming the same path
        assert Path(again.persisted_output_files[0]).read_text() == text
        assert store.put(text) == again.persisted_output_files[0]


def test_a_symlink_at_the_artifact_path_is_not_followed(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    target = tmp_path / "victim.txt"
    target.write_text("do not touch")
    store.directory.mkdir(mode=0o700)
    os.symlink(target, store.directory / f"{text_key('payload')}.txt")
    with pytest.raises(ArtifactStoreError):
        store.put("payload")
    assert target.read_text() == "do not touch"


def test_a_symlinked_store_directory_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "link")
    with pytest.raises(OSError):
        LocalArtifactStore(tmp_path / "link").put("x")
    assert list(real.iterdir()) == []


def test_no_temporary_files_are_left_behind(store: LocalArtifactStore) -> None:
    for i in range(5):
        store.put(f"text {i}")
    assert sorted(p.suffix for p in store.directory.iterdir()) == [".txt"] * 5


def test_per_file_limit_refuses_before_writing(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a", max_artifact_bytes=10)
    with pytest.raises(ArtifactStoreError):
        store.put("x" * 11)
    assert not store.directory.exists() or not any(store.directory.iterdir())
    assert store.retention._pending_bytes == 0


def test_total_limit_is_reserved_so_concurrent_writers_cannot_overshoot(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a", max_store_bytes=10 * 1000)
    errors: list[Exception] = []
    barrier = threading.Barrier(40)

    def write(i: int) -> None:
        barrier.wait()
        try:
            store.put(f"{i:04d}" + "y" * 996)
        except ArtifactStoreError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    written = sum(p.stat().st_size for p in store.directory.iterdir())
    assert written == 10 * 1000
    assert len(errors) == 30
    drain()
    assert store.retention._measured + store.retention._pending_bytes == written


def test_decisions_round_trip_and_are_absent_by_default(store: LocalArtifactStore) -> None:
    key = text_key("bounded by a producer")
    assert store.lookup_decision(key) is None
    full = store.put("the full output")
    store.record_decision(key, (full,))
    assert store.lookup_decision(key) == (full,)
    # "Decided, nothing reusable" is a decision too (the tri-state of FINALIZER.md).
    store.record_decision(text_key("other"), ())
    assert store.lookup_decision(text_key("other")) == ()


def test_decisions_are_visible_to_another_store_on_the_same_directory(tmp_path: Path) -> None:
    producer = LocalArtifactStore(tmp_path / "a")
    full = producer.put("the full output")
    producer.record_decision(text_key("t"), (full,))
    assert LocalArtifactStore(tmp_path / "a").lookup_decision(text_key("t")) == (full,)


def test_keys_must_be_sha256_hex(store: LocalArtifactStore) -> None:
    store.put("an artifact, so that the directory exists")
    with pytest.raises(ValueError, match="SHA-256"):
        store.read_piece("../../etc/passwd", 0, 1)


def test_one_store_is_shared_per_directory_and_limits(tmp_path: Path) -> None:
    a = store_for_config(BudgetConfig(artifact_dir=tmp_path, max_store_bytes=100))
    assert store_for_config(BudgetConfig(artifact_dir=tmp_path, max_store_bytes=100)) is a
    assert store_for_config(BudgetConfig(artifact_dir=tmp_path, max_store_bytes=200)) is not a


def test_the_file_system_watch_sees_store_writes(
    store: LocalArtifactStore, file_system_watch: list[tuple[str, Any]]
) -> None:
    # Proves that the watcher used by the guard's no-I/O test can see I/O at all.
    store.put("watched")
    assert {"open", "os.link"} <= {event for event, _ in file_system_watch}


def drain() -> None:
    """Wait until the background thread has run every job submitted so far."""
    done = threading.Event()
    sweeper.submit("test", done.set)
    assert done.wait(30)
