"""The narrow protocol through which the core persists full outputs, and their content address."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import sys
import threading
from collections.abc import Iterator
from typing import Protocol, runtime_checkable

__all__ = [
    "ArtifactNotFound",
    "ArtifactStore",
    "ArtifactStoreError",
    "FindsArtifacts",
    "PredictsReferences",
    "digest_scope",
    "text_digest",
    "text_key",
]


class ArtifactStoreError(OSError):
    """An artifact could not be written or read; the caller bounds without a reference."""


class ArtifactNotFound(ArtifactStoreError, LookupError):
    """A reference that names no artifact of the store (outside it, missing, or altered)."""


def text_key(text: str) -> str:
    """The content address of a text: hex SHA-256 of its UTF-8 bytes (surrogates kept)."""
    return text_digest(text).hex()


# One request measures and addresses the same large strings several times (is the batch
# over budget, the split, the content address, an exact token count): the digest of a
# string object is remembered while the object lives. An entry holds its string (a str has
# no weak reference), so the strings of one request are remembered inside that request's
# ``digest_scope()`` and forgotten when it ends; outside any scope only a little is kept.
_SCOPE: contextvars.ContextVar[_DigestCache | None] = contextvars.ContextVar(
    "budgetware_digest_scope", default=None
)
_DIGEST_MIN_CHARS = 4096
# Memory (sys.getsizeof: 1, 2 or 4 bytes a character) the strings of the cache may hold:
# in a scope, what one request holds anyway; outside, a few outputs past their lifetime.
_SCOPE_MAX_BYTES = 256 * 1024 * 1024
_GLOBAL_MAX_BYTES = 4 * 1024 * 1024


class _DigestCache:
    """Digests by string object, holding at most ``limit`` bytes of strings (then cleared)."""

    __slots__ = ("bytes", "entries", "limit", "lock")

    def __init__(self, limit: int) -> None:
        self.entries: dict[int, tuple[str, bytes]] = {}
        self.bytes = 0
        self.limit = limit
        self.lock = threading.Lock()

    def get(self, text: str) -> bytes | None:
        hit = self.entries.get(id(text))
        return hit[1] if hit is not None and hit[0] is text else None

    def put(self, text: str, digest: bytes) -> None:
        size = sys.getsizeof(text)
        if size > self.limit:
            return
        with self.lock:
            if self.bytes + size > self.limit:
                self.entries.clear()
                self.bytes = 0
            previous = self.entries.get(id(text))
            if previous is not None:
                self.bytes -= sys.getsizeof(previous[0])
            self.entries[id(text)] = (text, digest)
            self.bytes += size


_GLOBAL = _DigestCache(_GLOBAL_MAX_BYTES)


@contextlib.contextmanager
def digest_scope() -> Iterator[None]:
    """Remember digests of the strings seen inside this block (one request) until it ends.

    Nested blocks share the outermost one's memory. Entry points (``finalize_body``,
    ``bound_payload``, the MCP rewrite) run each request in one.
    """
    if _SCOPE.get() is not None:
        yield
        return
    token = _SCOPE.set(_DigestCache(_SCOPE_MAX_BYTES))
    try:
        yield
    finally:
        _SCOPE.reset(token)


def text_digest(text: str) -> bytes:
    """SHA-256 of ``text``'s UTF-8 bytes (surrogates kept), computed once per string object
    inside a ``digest_scope()`` (and for small outputs outside one)."""
    if len(text) < _DIGEST_MIN_CHARS:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    cache = _SCOPE.get() or _GLOBAL
    digest = cache.get(text)
    if digest is None:
        digest = _sha256_in_pieces(text)
        cache.put(text, digest)
    return digest


# Characters encoded per piece of a long text's digest. Encoding 4 MB holds the GIL for
# milliseconds (hashing does not: hashlib releases it for more than 2 KiB), which a worker
# thread bounding a large MCP response off the event loop would make the loop wait for;
# between pieces the loop gets in. UTF-8 encodes each code point alone, so the bytes hashed
# are the same.
_DIGEST_PIECE_CHARS = 256 * 1024


def _sha256_in_pieces(text: str) -> bytes:
    if len(text) <= _DIGEST_PIECE_CHARS:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    sha = hashlib.sha256()
    for start in range(0, len(text), _DIGEST_PIECE_CHARS):
        sha.update(text[start : start + _DIGEST_PIECE_CHARS].encode("utf-8", "surrogatepass"))
    return sha.digest()


@runtime_checkable
class ArtifactStore(Protocol):
    """Persists full tool outputs and remembers producer decisions.

    ``put`` returns the reference a preview names (for the local store, the absolute path
    of the file). Decisions let a producer boundary (an MCP client) tell the finalizer
    downstream what it already did with a text it bounded, keyed by ``text_key`` of that
    bounded text: the tuple of references, or ``()`` for "decided, nothing reusable". The
    finalizer looks a decision up only for a text that may be a preview
    (``core/notice.may_be_preview``: it carries one of the preview's fixed phrases), so a
    producer records decisions for such texts only.
    Any method may raise; callers treat a failure as "no reference".
    """

    def put(self, text: str, *, key: str | None = None) -> str: ...

    def record_decision(self, key: str, refs: tuple[str, ...]) -> None: ...

    def lookup_decision(self, key: str) -> tuple[str, ...] | None: ...


@runtime_checkable
class PredictsReferences(Protocol):
    """A store that can say, without any I/O, what ``put(text, key=key)`` will return.

    The finalizer writes an artifact only when a preview can name it; with this, it knows
    before writing. A store without it is probed with an empty reference instead, which
    still avoids every write that no reference could fit, but not one whose reference turns
    out too long for the room.
    """

    def ref_for(self, key: str) -> str: ...


@runtime_checkable
class FindsArtifacts(Protocol):
    """A store that can say whether the artifact of a key is there already.

    ``stored_reference(key)`` is the reference of the artifact stored under ``key`` when
    its bytes verify, else None; it writes nothing. The finalizer asks it before a put of a
    text that no producer can have decided (``core/notice.may_be_preview``): an artifact
    another process wrote is then reused with one look (one ``HeadObject`` on S3, no
    upload), and a new one is written by the put that follows.
    """

    def stored_reference(self, key: str) -> str | None: ...
