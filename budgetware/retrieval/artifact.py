"""Reading an artifact: only bytes whose SHA-256 is its name, a window for the cost of the
window.

The first read in a process hashes the artifact and builds its character index in one
pass; later reads name the version hashed, and a changed artifact is hashed again.
"""

from __future__ import annotations

import errno
import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from dataclasses import dataclass

from budgetware.core.artifacts import ArtifactNotFound, ArtifactStoreError
from budgetware.retrieval.charindex import CharIndex, NotText, build_index
from budgetware.store.base import MIB, ArtifactChanged, ContentStore

__all__ = ["Artifact", "Reader", "reader_for"]

# Artifacts a reader remembers having hashed (LRU), with their indexes.
ARTIFACTS = 256
# The pass that hashes and indexes an artifact reads it in pieces of this size.
READ_CHUNK = 8 * MIB
_STRIPES = 64


@dataclass(frozen=True, slots=True)
class Artifact:
    """An artifact a reader hashed: its key, index, and the version it hashed."""

    store: ContentStore
    key: str
    index: CharIndex
    version: Hashable

    def read(self, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end`` (exclusive; fewer at the end) of the bytes hashed."""
        return self.store.read_piece(self.key, start, end, self.version)[0]

    def pieces(self, chunk: int) -> Iterator[bytes]:
        """The bytes hashed, in pieces of ``chunk`` bytes (the last one shorter)."""
        for at in range(0, self.index.size, chunk):
            data = self.read(at, min(at + chunk, self.index.size))
            if not data:
                raise ArtifactChanged("the artifact changed while it was read")
            yield data


class Reader:
    """What one store's reader knows: the artifacts it hashed."""

    def __init__(self, store: ContentStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._stripes = [threading.Lock() for _ in range(_STRIPES)]
        self._hashed: OrderedDict[str, Artifact] = OrderedDict()

    def open(self, key: str) -> Artifact:
        """The artifact ``key`` as this reader hashed it; ArtifactNotFound if there is none
        or its bytes are not its name's."""
        with self._lock:
            known = self._hashed.get(key)
            if known is not None:
                self._hashed.move_to_end(key)
                return known
        with self._stripes[int(key[:8], 16) % _STRIPES]:
            with self._lock:
                known = self._hashed.get(key)
            if known is not None:
                return known
            artifact = self._hash(key)
            with self._lock:
                self._hashed[key] = artifact
                while len(self._hashed) > ARTIFACTS:
                    self._hashed.popitem(last=False)
        self.store.used(key)
        return artifact

    def forget(self, key: str) -> None:
        """Hash the artifact again at its next read (it changed)."""
        with self._lock:
            self._hashed.pop(key, None)

    def text(self, key: str, start: int, stop: int) -> tuple[str, int]:
        """Characters ``start`` to ``stop`` (clamped) and the text's length in characters,
        reading only the bytes around them."""
        for _ in range(2):
            artifact = self.open(key)
            index = artifact.index
            first, last = min(start, index.chars), min(stop, index.chars)
            if first == last:
                return "", index.chars
            begin, end, begin_char, end_char = index.span(first, last)
            try:
                data = artifact.read(begin, end)
            except ArtifactChanged:
                self.forget(key)
                continue  # hashed again: the same bytes are read, other bytes are not found
            except ArtifactNotFound:
                self.forget(key)  # deleted
                raise
            try:
                text = data.decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                text = ""
            if len(data) == end - begin and len(text) == end_char - begin_char:
                self.store.used(key)
                return text[first - begin_char : last - begin_char], index.chars
            # The same version holds other bytes (rewritten in place): hash it again.
            self.forget(key)
        raise ArtifactNotFound("the artifact changed after it was verified")

    def _hash(self, key: str) -> Artifact:
        """Read the artifact whole: hash it, index it, and note the version read."""
        digest = hashlib.sha256()
        first, size, version = self.store.read_piece(key, 0, READ_CHUNK)

        def pieces() -> Iterator[bytes]:
            data, at = first, len(first)
            while True:
                digest.update(data)
                yield data
                if at >= size:
                    return
                data = self.store.read_piece(key, at, min(at + READ_CHUNK, size), version)[0]
                if not data:
                    raise ArtifactChanged("the artifact changed while it was read")
                at += len(data)

        stream = pieces()
        try:
            index = build_index(stream)
        except NotText:
            for _ in stream:  # hash the rest: only an artifact that is its name's is
                pass  # "not text"
            if digest.hexdigest() != key:
                raise ArtifactNotFound("no such artifact in this store (altered)") from None
            raise ArtifactStoreError(errno.EILSEQ, "the artifact is not UTF-8 text") from None
        if digest.hexdigest() != key or index.size != size:
            raise ArtifactNotFound("no such artifact in this store (altered)")
        return Artifact(self.store, key, index, version)


_READERS: weakref.WeakKeyDictionary[ContentStore, Reader] = weakref.WeakKeyDictionary()
_READERS_LOCK = threading.Lock()


def reader_for(store: ContentStore) -> Reader:
    """The reader of ``store`` (one per store object, gone with it)."""
    reader = _READERS.get(store)
    if reader is None:
        with _READERS_LOCK:
            reader = _READERS.get(store)
            if reader is None:
                reader = _READERS[store] = Reader(store)
    return reader
