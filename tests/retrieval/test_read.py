"""read_artifact: exactly ``full[offset:offset + limit]`` in code points, from any store,
through an index that is built once, checked on every read, and rebuilt when it lies."""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetware import ArtifactNotFound, BudgetConfig, InvalidReadArgument, budget, read_artifact
from budgetware.core.artifacts import text_key
from budgetware.finalizer import LocalArtifactStore
from budgetware.store import charindex
from budgetware.store.base import ContentStore
from budgetware.store.charindex import BLOCK, CharIndex, build_index

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


def test_the_index_is_written_once_beside_the_artifact_and_reused(tmp_path: Path) -> None:
    text = mixed_text(5 * BLOCK)
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put(text)
    index_path = Path(ref).with_suffix(".index")
    assert not index_path.exists()  # built by the first reader, not on the request path
    read_artifact(ref, offset=BLOCK * 3, limit=10, store=store)
    written = index_path.read_bytes()
    assert index_path.stat().st_mode & 0o777 == 0o600
    # Another process (a new store object) loads it instead of reading the artifact through.
    other = LocalArtifactStore(tmp_path / "a")
    reads: list[tuple[int, int]] = []
    original = other.read_window

    def counting(key: str, start: int, end: int) -> tuple[bytes, int]:
        reads.append((start, end))
        return original(key, start, end)

    other.read_window = counting  # type: ignore[method-assign]
    key = text_key(text)
    other.verify(key)
    assert (
        read_artifact(ref, offset=4 * BLOCK, limit=100, store=other)
        == text[4 * BLOCK : 4 * BLOCK + 100]
    )
    assert len(reads) == 1
    assert reads[0][1] - reads[0][0] <= 4 * (2 * BLOCK + 100)
    assert index_path.read_bytes() == written


def test_an_ascii_artifact_needs_no_checkpoints(any_store: ContentStore) -> None:
    text = "log line\n" * 10_000
    any_store.put(text)
    index = any_store.char_index(text_key(text))
    assert index.ascii
    assert len(index.offsets) == 0
    assert len(index.dumps()) < 200


def test_an_artifact_written_before_indexes_existed_is_indexed_on_first_read(
    tmp_path: Path,
) -> None:
    # What an older budgetware left: the artifact only, no index beside it.
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
    assert path.with_suffix(".index").exists()


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda data: data[:-1],  # truncated
        lambda data: b"",  # empty
        lambda data: data[:40] + bytes([data[40] ^ 1]) + data[41:],  # a bit flipped
        "shifted",  # well formed and self-consistent, but every checkpoint one char late
        "foreign",  # the index of another artifact
    ],
)
def test_an_index_that_does_not_match_is_rebuilt(tmp_path: Path, corrupt: object) -> None:
    text = mixed_text(6 * BLOCK, seed=5)
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put(text)
    key = text_key(text)
    store.char_index(key)
    path = Path(ref).with_suffix(".index")
    good = path.read_bytes()
    if corrupt == "shifted":
        real = CharIndex.loads(good, key, len(text.encode("utf-8", "surrogatepass")))
        assert real is not None
        data = text.encode("utf-8", "surrogatepass")
        # each checkpoint moved onto the next character's first byte
        moved = [
            o + len(text[i * BLOCK].encode("utf-8", "surrogatepass"))
            for i, o in enumerate(real.offsets)
        ]
        moved[0] = 0  # keep the first one where a check would expect it
        shifted = CharIndex(key, len(data), real.chars, BLOCK, type(real.offsets)("Q", moved))
        path.write_bytes(shifted.dumps())
    elif corrupt == "foreign":
        other = mixed_text(6 * BLOCK, seed=6)
        store.put(other)
        store.char_index(text_key(other))
        path.write_bytes(Path(ref).with_name(f"{text_key(other)}.index").read_bytes())
    else:
        path.write_bytes(corrupt(good))  # type: ignore[operator]
    fresh = LocalArtifactStore(tmp_path / "a")  # another process: nothing in memory
    for offset in range(0, len(text), BLOCK // 2 + 1):
        assert (
            read_artifact(ref, offset=offset, limit=300, store=fresh)
            == text[offset : offset + 300]
        )
    assert path.read_bytes() == good


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
    assert [p.name for p in (tmp_path / "a").iterdir() if ".tmp" in p.name] == []


def test_the_configured_store_is_read_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", str(tmp_path / "env"))
    from budgetware.store.select import store_for_config

    store = store_for_config(BudgetConfig.from_env())
    assert store is not None
    ref = store.put("configured")
    assert read_artifact(ref) == "configured"
    # budget() narrows it like every other setting
    with budget(artifact_dir=str(tmp_path / "other")), pytest.raises(ArtifactNotFound):
        read_artifact(ref)
    assert read_artifact(ref, config=BudgetConfig(artifact_dir=tmp_path / "env")) == "configured"


def test_no_store_when_persist_is_off(tmp_path: Path) -> None:
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
    assert read_artifact(ref, store=any_store) == "inside"  # its .index is written now
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
    index = tmp_path / "a" / f"{key}.index"
    record = tmp_path / "a" / f"{decision}.decision.json"
    assert index.is_file()
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
    # This process verified it before: the read sees the size change.
    with pytest.raises(ArtifactNotFound, match="truncated"):
        read_artifact(ref, offset=10, limit=10, store=store)
    # A process that never saw it whole refuses it at once (its bytes do not match its name).
    with pytest.raises(ArtifactNotFound):
        read_artifact(ref, store=LocalArtifactStore(tmp_path / "a"))


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


def test_the_sweep_takes_the_index_with_its_artifact(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    keep = store.put("keep " * 1000)
    drop = store.put("drop " * 1000)
    for ref in (keep, drop):
        read_artifact(ref, store=store)
    os.utime(drop, (1, 1))
    store.prune(older_than=3600, now=10_000)
    # (prune leaves its measure in the sweep marker, for other processes' quotas)
    names = sorted(
        p.name for p in (tmp_path / "a").iterdir() if p.name != ".budgetware-sweep.json"
    )
    assert names == sorted([Path(keep).name, Path(keep).with_suffix(".index").name])


def test_an_orphaned_index_goes_once_it_is_old(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put("x" * 10)
    read_artifact(ref, store=store)
    Path(ref).unlink()
    index = Path(ref).with_suffix(".index")
    store.sweep(now=index.stat().st_mtime + 60)
    assert index.exists()  # young: its artifact may be on its way
    store.sweep(now=index.stat().st_mtime + 3600)
    assert not index.exists()


def test_a_read_only_store_keeps_the_index_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    text = mixed_text(3 * BLOCK)
    ref = store.put(text)
    reader = LocalArtifactStore(tmp_path / "a")

    def refused(*args: object) -> None:
        raise PermissionError(13, "read-only file system")

    # (the suite may run as root, which a directory's mode does not stop)
    monkeypatch.setattr(reader, "_write_sidecar", refused)
    assert read_artifact(ref, offset=BLOCK, limit=9, store=reader) == text[BLOCK : BLOCK + 9]
    assert (
        read_artifact(ref, offset=2 * BLOCK, limit=9, store=reader)
        == text[2 * BLOCK : 2 * BLOCK + 9]
    )
    assert not Path(ref).with_suffix(".index").exists()


def test_build_index_agrees_however_the_bytes_are_cut() -> None:
    text = mixed_text(3 * BLOCK + 1, seed=11)
    data = text.encode("utf-8", "surrogatepass")
    whole = build_index([data], text_key(text))
    for size in (1, 2, 3, 5, 4096, 10_000):
        pieces = [data[i : i + size] for i in range(0, len(data), size)]
        assert build_index(pieces, text_key(text)).dumps() == whole.dumps()
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


def test_on_s3_the_index_is_an_object_beside_the_artifact_and_goes_with_it(
    s3_bucket: Any,
) -> None:
    pytest.importorskip("boto3")
    from budgetware.store.s3 import S3ArtifactStore

    store = S3ArtifactStore(s3_bucket.name, "artifacts")
    text = mixed_text(3 * BLOCK, seed=4)
    ref = store.put(text)
    key = text_key(text)
    assert read_artifact(ref, offset=BLOCK, limit=10, store=store) == text[BLOCK : BLOCK + 10]
    assert s3_bucket.objects("artifacts/") == [f"artifacts/{key}.index", f"artifacts/{key}.txt"]
    # another process loads it instead of reading the artifact through
    other = S3ArtifactStore(s3_bucket.name, "artifacts")
    assert other.char_index(key) == store.char_index(key)
    store.prune(max_total_bytes=0, now=1e12)
    # (prune leaves its measure in the sweep marker, for other processes' quotas)
    assert s3_bucket.objects("artifacts/") == ["artifacts/.budgetware-sweep.json"]
