"""read_artifact: exactly ``full[offset:offset + limit]`` in code points, from any store,
through an index built in the pass that hashes the artifact, and checked on every read."""

from __future__ import annotations

import os
import random
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetware import ArtifactNotFound, BudgetConfig, InvalidReadArgument, budget, read_artifact
from budgetware.core.artifacts import text_key
from budgetware.finalizer import LocalArtifactStore
from budgetware.retrieval import charindex
from budgetware.retrieval.artifact import reader_for
from budgetware.retrieval.charindex import BLOCK, build_index
from budgetware.store.base import ContentStore

MIXED = "ascii é 汉字 😀 \ud800 end\n"


def mixed_text(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(MIXED) for _ in range(n))


@pytest.mark.parametrize("text", ["", "x", "plain ascii\n" * 5000, mixed_text(3 * BLOCK + 17)])
def test_every_window_is_the_slice_of_the_full_text(any_store: ContentStore, text: str) -> None:
    ref = any_store.put(text)
    n = len(text)
    points = sorted({0, 1, BLOCK - 1, BLOCK, BLOCK + 1, n // 2, max(n - 1, 0), n})
    for offset in (p for p in points if p <= n):
        for limit in (0, 1, 7, BLOCK, 2 * BLOCK + 3, n + 10):
            got = read_artifact(ref, offset=offset, limit=limit, store=any_store)
            assert got == text[offset : offset + limit]


@settings(max_examples=60, deadline=None)
@given(text=st.text(st.characters(codec="utf-8", exclude_categories=())), data=st.data())
def test_windows_match_slices_for_any_text(
    tmp_path_factory: pytest.TempPathFactory, text: str, data: st.DataObject
) -> None:
    store = LocalArtifactStore(tmp_path_factory.mktemp("h") / "a")
    ref = store.put(text)
    offset = data.draw(st.integers(0, len(text)))
    limit = data.draw(st.integers(0, len(text) + 3))
    assert (
        read_artifact(ref, offset=offset, limit=limit, store=store)
        == text[offset : offset + limit]
    )


def test_lone_surrogates_come_back_as_they_went_in(any_store: ContentStore) -> None:
    text = "a\ud800b" * 3000
    ref = any_store.put(text)
    assert read_artifact(ref, offset=2, limit=5000, store=any_store) == text[2:5002]


def test_a_bare_sha256_names_the_artifact(any_store: ContentStore) -> None:
    any_store.put("by its hash")
    assert read_artifact(text_key("by its hash"), store=any_store) == "by its hash"


def test_a_window_reads_only_the_bytes_around_it(any_store: ContentStore) -> None:
    text = mixed_text(50 * BLOCK)
    ref = any_store.put(text)
    reads: list[tuple[int, int]] = []
    original = any_store.read_piece

    def counting(key: str, start: int, end: int, version: object = None) -> Any:
        reads.append((start, end))
        return original(key, start, end, version)

    any_store.read_piece = counting  # type: ignore[method-assign]
    # The first read hashes the artifact whole (and indexes it in the same pass) ...
    assert read_artifact(ref, offset=7, limit=3, store=any_store) == text[7:10]
    assert sum(end - start for start, end in reads) >= len(text.encode("utf-8", "surrogatepass"))
    reads.clear()
    # ... and from then on a window reads the window and at most two blocks around it.
    offset = 40 * BLOCK + 17
    assert (
        read_artifact(ref, offset=offset, limit=100, store=any_store)
        == text[offset : offset + 100]
    )
    ((start, end),) = reads
    assert end - start <= 4 * (2 * BLOCK + 100)


def test_an_ascii_artifact_needs_no_checkpoints(any_store: ContentStore) -> None:
    text = "log line\n" * 10_000
    any_store.put(text)
    index = reader_for(any_store).open(text_key(text)).index
    assert index.ascii
    assert len(index.offsets) == 0


def test_an_artifact_written_by_another_process_is_read(tmp_path: Path) -> None:
    # What another writer left (an older budgetware, another process): the artifact only.
    text = mixed_text(2 * BLOCK + 5, seed=3)
    directory = tmp_path / "a"
    directory.mkdir(mode=0o700)
    path = directory / f"{text_key(text)}.txt"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    path.chmod(0o600)
    store = LocalArtifactStore(directory)
    assert (
        read_artifact(str(path), offset=BLOCK + 1, limit=50, store=store)
        == text[BLOCK + 1 : BLOCK + 51]
    )
    assert sorted(p.name for p in directory.iterdir()) == [path.name]  # nothing beside it


def test_concurrent_first_readers_agree(tmp_path: Path) -> None:
    text = mixed_text(20 * BLOCK, seed=9)
    LocalArtifactStore(tmp_path / "a").put(text)
    ref = str(tmp_path / "a" / f"{text_key(text)}.txt")
    results: list[str] = []
    errors: list[BaseException] = []

    def reader(i: int) -> None:
        store = LocalArtifactStore(tmp_path / "a")  # each its own process, in effect
        try:
            results.append(read_artifact(ref, offset=i * 1000, limit=1000, store=store))
        except BaseException as exc:  # pragma: no cover - the failure shows below
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(results) == sorted(text[i * 1000 : i * 1000 + 1000] for i in range(8))


def test_the_configured_store_is_read_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", str(tmp_path / "env"))
    from budgetware.store.select import store_for_config

    store = store_for_config(BudgetConfig.from_env())
    assert store is not None
    ref = store.put("configured")
    assert read_artifact(ref) == "configured"
    assert read_artifact(text_key("configured")) == "configured"
    # budget() names the store like every other setting; a reference printed in this
    # process still reads back from the store that printed it.
    other = tmp_path / "other"
    elsewhere = store_for_config(BudgetConfig.from_env(artifact_dir=other))
    assert elsewhere is not None
    elsewhere.put("configured")
    with budget(artifact_dir=str(other)):
        assert read_artifact(ref) == "configured"
        assert read_artifact(text_key("configured"), limit=4) == "conf"
    shutil.rmtree(other)  # the bare name: the configured store first, then the others
    with budget(artifact_dir=str(other)):
        assert read_artifact(text_key("configured")) == "configured"


def test_no_store_when_persist_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from budgetware.retrieval import read

    monkeypatch.setattr(read, "named_stores", list)  # no store named anything here
    with pytest.raises(ArtifactNotFound, match="persist is off"):
        read_artifact("0" * 64, config=BudgetConfig(persist=False))


# -- bad input ------------------------------------------------------------------------------


def test_references_outside_the_store_are_refused_and_never_opened(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put("inside")
    key = text_key("inside")
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    (tmp_path / "a" / "sub").mkdir()
    os.symlink(secret, tmp_path / "a" / f"{text_key('outside')}.txt")
    os.mkdir(tmp_path / "a" / f"{text_key('dir')}.txt")
    bad = [
        str(secret),
        str(tmp_path / "a" / ".." / "a" / f"{key}.txt"),
        str(tmp_path / "a" / "sub" / ".." / f"{key}.txt"),
        f"{tmp_path}/a//{key}.txt",
        str(tmp_path / "a" / f"{text_key('outside')}.txt"),  # a symlink
        text_key("outside"),
        str(tmp_path / "a" / f"{text_key('dir')}.txt"),  # a directory
        text_key("dir"),
        "../" + key + ".txt",
        "f" * 64,  # unknown
        "",
        "file://" + ref,
    ]
    for ref_ in bad:
        with pytest.raises(ArtifactNotFound):
            read_artifact(ref_, store=store)
    assert read_artifact(ref, store=store) == "inside"


def test_near_misses_of_a_reference_are_read(any_store: ContentStore) -> None:
    # What a model copies from '[... Full output: <ref>; read_tool_output can ...]' with a
    # slip: the notice's punctuation, quotes, the hex in upper case, the bare file name.
    ref = any_store.put("inside")
    key = text_key("inside")
    head = ref[: -len(key + ".txt")]  # the store's own directory or s3://bucket/prefix/
    for near in (
        ref + "]",
        ref + ";",
        ref + "];",
        ref + ".",
        f"'{ref}'",
        f"`{ref}`;",
        f"  {ref}]  ",
        f"{head}{key.upper()}.txt",
        f"{head}{key.upper()}.TXT]",
        key.upper(),
        key + ".txt",
        key.upper() + ".txt];",
    ):
        assert read_artifact(near, store=any_store) == "inside", near


def test_near_misses_never_reach_another_place(any_store: ContentStore) -> None:
    # Only the name is forgiven: a directory, bucket or prefix other than the store's stays
    # not found, whatever is done to the name; so do the files kept beside an artifact.
    ref = any_store.put("inside")
    key = text_key("inside")
    assert read_artifact(ref, store=any_store) == "inside"
    decision = text_key("a batch")
    any_store.record_decision(decision, (ref,))
    head = ref[: -len(key + ".txt")]
    for far in (
        f"{head}sub/{key}.txt",
        f"{head[:-1]}x/{key}.txt",
        f"{head.upper()}{key}.txt",
        f"/elsewhere/{key}.txt]",
        f"s3://other-bucket/artifacts/{key.upper()}.txt",
        f"./{key}.txt",
        f"{head}{key}.index",
        f"{head}{key}.index]",
        f"{head}{decision}.decision.json",
        f"{key}.index",
        f"{decision}.decision.json",
        f"{head}{key}",  # no ".txt": not a name the store gives
        f"{head}{key}.txt.bak",
        f"{head}x{key}.txt",
        key[:63],
    ):
        with pytest.raises(ArtifactNotFound, match="64-hex SHA-256 name") as caught:
            read_artifact(far, store=any_store)
        assert key not in str(caught.value)  # the message names no reference


def test_the_files_beside_an_artifact_are_refused_as_references(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put("汉字 inside")
    key = text_key("汉字 inside")
    assert read_artifact(ref, store=store) == "汉字 inside"
    decision = text_key("a batch")
    store.record_decision(decision, (ref,))
    index = tmp_path / "a" / f"{key}.index"  # as an earlier version kept one
    index.write_bytes(b"BWCHIDX2")
    record = tmp_path / "a" / f"{decision}.decision.json"
    assert record.is_file()
    for path in (index, record):
        with pytest.raises(ArtifactNotFound):
            read_artifact(str(path), store=store)


def test_an_evicted_artifact_is_not_found(any_store: ContentStore) -> None:
    ref = any_store.put("soon gone " * 100)
    assert read_artifact(ref, limit=4, store=any_store) == "soon"
    any_store.prune(max_total_bytes=0, now=1e12)
    with pytest.raises(ArtifactNotFound):
        read_artifact(ref, store=any_store)


def test_a_truncated_artifact_is_not_found(tmp_path: Path) -> None:
    text = mixed_text(4 * BLOCK, seed=2)
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put(text)
    assert read_artifact(ref, offset=10, limit=10, store=store) == text[10:20]
    with open(ref, "r+b") as f:
        f.truncate(100)
    # This process read it before: the read sees another version, hashes it again.
    with pytest.raises(ArtifactNotFound, match="altered"):
        read_artifact(ref, offset=10, limit=10, store=store)
    # A process that never saw it whole refuses it at once (its bytes do not match its name).
    with pytest.raises(ArtifactNotFound):
        read_artifact(ref, store=LocalArtifactStore(tmp_path / "a"))


def test_a_file_torn_by_a_crash_is_written_again_by_the_next_put(tmp_path: Path) -> None:
    # Artifacts are written without an fsync: after a crash a file may hold part of its
    # bytes. It is never served, and the next process that puts the output mends it.
    text = mixed_text(4 * BLOCK, seed=3)
    ref = LocalArtifactStore(tmp_path / "a").put(text)
    with open(ref, "r+b") as f:
        f.truncate(100)
    after_restart = LocalArtifactStore(tmp_path / "a")
    with pytest.raises(ArtifactNotFound):
        read_artifact(ref, store=after_restart)
    assert after_restart.put(text) == ref
    assert read_artifact(ref, limit=len(text), store=after_restart) == text


@pytest.mark.parametrize(
    ("offset", "limit"), [(-1, 10), (0, -1), (1.5, 1), ("3", 1), (True, 1), (0, None)]
)
def test_offsets_and_limits_are_whole_numbers(
    any_store: ContentStore, offset: object, limit: object
) -> None:
    ref = any_store.put("abc")
    with pytest.raises(InvalidReadArgument):
        read_artifact(ref, offset=offset, limit=limit, store=any_store)  # type: ignore[arg-type]


def test_an_offset_past_the_end_says_where_the_end_is(any_store: ContentStore) -> None:
    ref = any_store.put("汉" * 10)
    assert read_artifact(ref, offset=10, store=any_store) == ""
    with pytest.raises(InvalidReadArgument, match="past the end of the output \\(10 chars\\)"):
        read_artifact(ref, offset=11, store=any_store)
    with pytest.raises(InvalidReadArgument):
        read_artifact(ref, offset=10**30, store=any_store)


@pytest.mark.parametrize("value", [10**5000, -(10**5000)], ids=["huge", "huge-negative"])
@pytest.mark.parametrize("name", ["offset", "limit"])
def test_a_number_too_long_to_print_is_an_invalid_argument(
    any_store: ContentStore, name: str, value: int
) -> None:
    ref = any_store.put("abc")
    with pytest.raises(InvalidReadArgument, match=f"^{name} must be"):
        read_artifact(ref, store=any_store, **{name: value})


def test_build_index_agrees_however_the_bytes_are_cut() -> None:
    text = mixed_text(3 * BLOCK + 1, seed=11)
    data = text.encode("utf-8", "surrogatepass")
    whole = build_index([data])
    for size in (1, 2, 3, 5, 4096, 10_000):
        pieces = [data[i : i + size] for i in range(0, len(data), size)]
        assert build_index(pieces) == whole
    assert whole.chars == len(text)
    assert list(whole.offsets) == [
        len(text[: i * BLOCK].encode("utf-8", "surrogatepass")) for i in range(4)
    ]


def test_an_artifact_that_is_not_text_is_a_store_error(tmp_path: Path) -> None:
    import hashlib

    data = b"\xff\xfe binary"
    key = hashlib.sha256(data).hexdigest()
    directory = tmp_path / "a"
    directory.mkdir(mode=0o700)
    (directory / f"{key}.txt").write_bytes(data)
    from budgetware import ArtifactStoreError

    with pytest.raises(ArtifactStoreError, match="not UTF-8"):
        read_artifact(key, store=LocalArtifactStore(directory))
    assert charindex.NotText.__mro__[1] is ValueError
