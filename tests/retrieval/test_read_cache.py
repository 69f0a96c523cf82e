"""What a reader remembers of a local artifact (``budgetware/retrieval/cache.py``): a window
read again costs a stat and a pread, and anything that happened to the file under the
artifact's name since (deleted, replaced, truncated, a symlink, the directory made anew)
is seen at the very next read, in the same process."""

from __future__ import annotations

import gc
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from budgetware import ArtifactNotFound, read_artifact
from budgetware.retrieval import cache
from budgetware.store import files
from budgetware.store.local import LocalArtifactStore

pytestmark = pytest.mark.skipif(os.name != "posix", reason="descriptors are held on POSIX only")

ASCII = "".join(f"line {i:05d} PASSED\n" for i in range(2000))
MIXED = "".join(f"行 {i:05d} 😀 é\n" for i in range(2000))


@pytest.fixture(params=["dir-fd", "paths"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LocalArtifactStore]:
    """A local store reached by directory descriptor, and one reached by path."""
    if request.param == "paths":
        monkeypatch.setattr(files, "USE_DIR_FD", False)
    yield LocalArtifactStore(tmp_path / "artifacts")
    cache.clear()


@pytest.fixture
def opens(store: LocalArtifactStore, monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
    """How many times the test's store has opened an artifact so far (every read that
    goes the whole way opens one; a search another test left running opens its own)."""
    seen: list[str] = []
    original = LocalArtifactStore._open_checked

    def spy(self: LocalArtifactStore, name: str) -> object:
        if self.location == store.location:
            seen.append(name)
        return original(self, name)

    monkeypatch.setattr(LocalArtifactStore, "_open_checked", spy)
    return lambda: len(seen)


@pytest.mark.parametrize("text", [ASCII, MIXED], ids=["ascii", "mixed"])
def test_a_window_read_again_opens_nothing(
    store: LocalArtifactStore, opens: Callable[[], int], text: str
) -> None:
    ref = store.put(text)
    assert read_artifact(ref, offset=5, limit=100, store=store) == text[5:105]
    opened = opens()
    assert opened > 0
    for offset, limit in [(0, 1), (17, 4096), (len(text) - 3, 10), (len(text), 5), (9000, 0)]:
        assert (
            read_artifact(ref, offset=offset, limit=limit, store=store)
            == (text[offset : offset + limit])
        )
    assert opens() == opened  # no open of the artifact after the first read
    # The bare SHA-256 is another spelling: resolved (and read) the whole way once, and
    # the descriptor already open is kept.
    key = Path(ref).stem
    assert read_artifact(key, offset=3, limit=7, store=store) == text[3:10]
    assert opens() == opened + 1
    assert read_artifact(key, offset=4, limit=7, store=store) == text[4:11]
    assert read_artifact(ref, offset=4, limit=7, store=store) == text[4:11]
    assert opens() == opened + 1
    assert cache.held_descriptors() == 1


def test_every_window_is_read_again_after_a_recheck(
    store: LocalArtifactStore, opens: Callable[[], int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # At least once a RECHECK a read goes the whole way (the store's verification and
    # last-use refresh); the descriptor is kept when the name still names its file.
    monkeypatch.setattr(cache, "RECHECK", 0.0)
    ref = store.put(ASCII)
    assert read_artifact(ref, limit=9, store=store) == ASCII[:9]
    opened = opens()
    for offset in range(1, 5):
        assert read_artifact(ref, offset=offset, limit=9, store=store) == ASCII[offset:][:9]
        opened += 1  # the store's own read; the cache's descriptor is kept
        assert opens() == opened
    assert cache.held_descriptors() == 1


@pytest.mark.parametrize("text", [ASCII, MIXED], ids=["ascii", "mixed"])
def test_an_artifact_deleted_between_two_reads_is_not_found(
    store: LocalArtifactStore, text: str
) -> None:
    ref = store.put(text)
    assert read_artifact(ref, limit=10, store=store) == text[:10]
    assert cache.held_descriptors() == 1
    os.unlink(ref)  # by hand, or another process's sweep: this store was not told
    with pytest.raises(ArtifactNotFound):
        read_artifact(ref, limit=10, store=store)
    assert cache.held_descriptors() == 0  # its disk space is not held


def test_an_artifact_pruned_between_two_reads_is_not_found(store: LocalArtifactStore) -> None:
    ref = store.put(ASCII)
    assert read_artifact(ref, limit=10, store=store) == ASCII[:10]
    other = LocalArtifactStore(store.directory)  # another process sharing the store
    other.prune(max_total_bytes=0, now=1e12)
    with pytest.raises(ArtifactNotFound):
        read_artifact(ref, limit=10, store=store)


@pytest.mark.parametrize("text", [ASCII, MIXED], ids=["ascii", "mixed"])
def test_an_artifact_replaced_by_other_bytes_between_two_reads_is_not_found(
    store: LocalArtifactStore, text: str
) -> None:
    ref = store.put(text)
    assert read_artifact(ref, offset=100, limit=10, store=store) == text[100:110]
    # Another file of the same size renamed over the name: not the output the name hashes.
    forged = text.replace("PASSED", "FAILED").replace("😀", "🙁").encode()
    assert len(forged) == len(text.encode())
    planted = store.directory / "planted"
    planted.write_bytes(forged)
    os.replace(planted, ref)
    with pytest.raises(ArtifactNotFound):
        read_artifact(ref, offset=100, limit=10, store=store)
    with pytest.raises(ArtifactNotFound):
        read_artifact(ref, offset=100, limit=10, store=store)


def test_an_artifact_written_again_between_two_reads_is_read(
    store: LocalArtifactStore, opens: Callable[[], int]
) -> None:
    ref = store.put(MIXED)
    assert read_artifact(ref, limit=10, store=store) == MIXED[:10]
    os.unlink(ref)
    writer = LocalArtifactStore(store.directory)  # another process writes it again
    assert writer.put(MIXED) == ref
    before = opens()
    assert read_artifact(ref, offset=20, limit=10, store=store) == MIXED[20:30]
    assert opens() > before  # the new file was opened (and hashed) afresh


def test_a_symlink_renamed_over_the_name_is_refused(store: LocalArtifactStore) -> None:
    ref = store.put(ASCII)
    assert read_artifact(ref, limit=10, store=store) == ASCII[:10]
    outside = store.directory.parent / "outside.txt"
    outside.write_text(ASCII)  # the very same bytes, elsewhere
    link = store.directory / "link"
    link.symlink_to(outside)
    os.replace(link, ref)
    with pytest.raises(ArtifactNotFound):
        read_artifact(ref, limit=10, store=store)


@pytest.mark.parametrize("change", ["truncate", "append"])
def test_an_artifact_resized_between_two_reads_is_not_found(
    store: LocalArtifactStore, change: str
) -> None:
    ref = store.put(ASCII)
    assert read_artifact(ref, limit=10, store=store) == ASCII[:10]
    with open(ref, "r+b") as f:
        if change == "truncate":
            f.truncate(100)
        else:
            f.seek(0, os.SEEK_END)
            f.write(b"more\n")
    with pytest.raises(ArtifactNotFound, match="truncated or altered"):
        read_artifact(ref, limit=10, store=store)


def test_a_store_directory_made_anew_is_read(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "artifacts")
    ref = store.put(MIXED)
    assert read_artifact(ref, limit=10, store=store) == MIXED[:10]
    shutil.rmtree(store.directory)
    assert LocalArtifactStore(store.directory).put(MIXED) == ref
    assert read_artifact(ref, offset=7, limit=10, store=store) == MIXED[7:17]
    assert read_artifact(ref, offset=8, limit=10, store=store) == MIXED[8:18]
    cache.clear()


def test_descriptors_held_are_few(store: LocalArtifactStore) -> None:
    texts = [f"artifact {n}\n" * (100 + n) for n in range(3 * cache.DESCRIPTORS)]
    refs = [store.put(text) for text in texts]
    for _ in range(2):
        for ref, text in zip(refs, texts):
            assert read_artifact(ref, offset=3, limit=20, store=store) == text[3:23]
            assert cache.held_descriptors() <= cache.DESCRIPTORS
    assert cache.held_descriptors() == cache.DESCRIPTORS


def test_an_idle_descriptor_is_closed(
    store: LocalArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "IDLE", 0.05)
    monkeypatch.setattr(cache, "_next_idle_check", 0.0)
    first, second = store.put(ASCII), store.put(MIXED)
    assert read_artifact(first, limit=5, store=store) == ASCII[:5]
    assert cache.held_descriptors() == 1
    time.sleep(0.1)
    assert read_artifact(second, limit=5, store=store) == MIXED[:5]
    assert cache.held_descriptors() == 1  # the first one's, idle, is closed
    assert read_artifact(first, limit=5, store=store) == ASCII[:5]


def test_a_store_let_go_closes_its_descriptors(tmp_path: Path) -> None:
    ref = LocalArtifactStore(tmp_path / "artifacts").put(ASCII)
    store = LocalArtifactStore(tmp_path / "artifacts")  # a reader: it writes nothing
    assert read_artifact(ref, limit=5, store=store) == ASCII[:5]
    assert cache.held_descriptors() == 1
    del store
    gc.collect()
    assert cache.held_descriptors() == 0


def test_concurrent_readers_of_more_artifacts_than_descriptors_read_their_own(
    store: LocalArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Descriptors are closed (evicted) while other threads read: a read never preads a
    # descriptor number reused for another artifact.
    monkeypatch.setattr(cache, "RECHECK", 0.002)
    texts = [f"{n:02d}" * 5000 + "汉" * (n % 3) for n in range(2 * cache.DESCRIPTORS + 1)]
    refs = [store.put(text) for text in texts]
    wrong: list[str] = []

    def reader(seed: int) -> None:
        for step in range(300):
            n = (seed * 7 + step) % len(refs)
            offset = (step * 13) % 9000
            got = read_artifact(refs[n], offset=offset, limit=50, store=store)
            if got != texts[n][offset : offset + 50]:
                wrong.append(f"{n} at {offset}: {got[:10]!r}")

    threads = [threading.Thread(target=reader, args=(seed,)) for seed in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
    assert cache.held_descriptors() <= cache.DESCRIPTORS


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_reads_with_descriptors_of_its_own(store: LocalArtifactStore) -> None:
    ref = store.put(MIXED)
    assert read_artifact(ref, limit=10, store=store) == MIXED[:10]
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        ok = (
            cache.held_descriptors() == 0
            and read_artifact(ref, offset=30, limit=10, store=store) == MIXED[30:40]
            and cache.held_descriptors() == 1
        )
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert read_artifact(ref, offset=30, limit=10, store=store) == MIXED[30:40]
