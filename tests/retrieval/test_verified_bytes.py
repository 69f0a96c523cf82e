"""A reader serves only bytes whose SHA-256 is the reference's (issue 30, item 2).

An artifact this process checked earlier (wrote it, or found it there and verified it)
but never read, then truncated or replaced by other bytes, was served as the full output:
the store remembered it had verified the key, and the reader believed it. Now a reader
hashes what it reads the first time (in the same pass that indexes it), and from then on
reads only the same file (local: the same inode and size) or object (S3: the same ETag).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from budgetware import ArtifactNotFound, grep_artifact, read_artifact
from budgetware.core.artifacts import text_key
from budgetware.store.base import ContentStore
from budgetware.store.local import LocalArtifactStore

TEXT = "".join(f"line {i} of the full output ✓\n" for i in range(4000))
OTHER = TEXT.replace("full", "fake")  # other bytes, the same size
assert len(OTHER.encode()) == len(TEXT.encode())


def replacing(store: ContentStore) -> Callable[[bytes], None]:
    """How someone else puts other bytes under the artifact's name in this store."""
    key = text_key(TEXT)
    if isinstance(store, LocalArtifactStore):
        path = store.directory / f"{key}.txt"

        def local(data: bytes) -> None:
            tmp = path.with_name("planted")
            tmp.write_bytes(data)
            os.replace(tmp, path)

        return local
    from budgetware.store.s3 import S3ArtifactStore

    assert isinstance(store, S3ArtifactStore)

    def s3(data: bytes) -> None:
        store.client().put_object(Bucket=store.bucket, Key=f"{store.prefix}{key}.txt", Body=data)

    return s3


def other_process(store: ContentStore) -> ContentStore:
    if isinstance(store, LocalArtifactStore):
        return LocalArtifactStore(store.directory)
    from budgetware.store.s3 import S3ArtifactStore

    assert isinstance(store, S3ArtifactStore)
    return S3ArtifactStore(store.bucket, store.prefix)


@pytest.mark.parametrize("how", ["written here", "verified here"])
@pytest.mark.parametrize("change", ["truncated", "other bytes, same size", "other bytes, longer"])
def test_an_artifact_checked_but_never_read_then_changed_is_not_served(
    any_store: ContentStore, how: str, change: str
) -> None:
    if how == "written here":
        store = any_store
        ref = store.put(TEXT)
    else:  # another process wrote it; this one found it and verified it (the finalizer)
        other_process(any_store).put(TEXT)
        store = any_store
        ref = store.stored_reference(text_key(TEXT)) or ""
        assert ref
    data = {
        "truncated": TEXT.encode()[:1000],
        "other bytes, same size": OTHER.encode(),
        "other bytes, longer": TEXT.encode() + b"appended\n",
    }[change]
    replacing(store)(data)
    with pytest.raises(ArtifactNotFound):
        read_artifact(ref, offset=10, limit=100, store=store)
    with pytest.raises(ArtifactNotFound):
        grep_artifact(ref, "fake", store=store)


def test_an_artifact_replaced_after_it_was_read_is_not_served(any_store: ContentStore) -> None:
    ref = any_store.put(TEXT)
    assert read_artifact(ref, offset=5, limit=10, store=any_store) == TEXT[5:15]
    replacing(any_store)(OTHER.encode())
    with pytest.raises(ArtifactNotFound):
        read_artifact(ref, offset=5, limit=100, store=any_store)


def test_the_same_bytes_written_again_are_served(any_store: ContentStore) -> None:
    # A writer that replaced the file with the same output (another process repairing a
    # false one): the bytes hash to the name, so they are read.
    ref = any_store.put(TEXT)
    assert read_artifact(ref, limit=10, store=any_store) == TEXT[:10]
    replacing(any_store)(TEXT.encode())
    assert read_artifact(ref, offset=100, limit=10, store=any_store) == TEXT[100:110]


def test_a_planted_file_is_never_read_even_if_it_is_text(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    store.directory.mkdir(mode=0o700)
    (store.directory / f"{text_key(TEXT)}.txt").write_bytes(OTHER.encode())
    with pytest.raises(ArtifactNotFound):
        read_artifact(text_key(TEXT), store=store)
