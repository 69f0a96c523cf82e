"""The narrow protocol through which the core persists full outputs, and their content address."""

from __future__ import annotations

import hashlib
from typing import Protocol, runtime_checkable

__all__ = [
    "ArtifactNotFound",
    "ArtifactStore",
    "ArtifactStoreError",
    "PredictsReferences",
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
# string object is remembered while the object lives here, bounded by the characters held.
_DIGESTS: dict[int, tuple[str, bytes]] = {}
_DIGEST_MIN_CHARS = 4096
_DIGEST_MAX_CHARS = 16 * 1024 * 1024
_digest_chars = 0


def text_digest(text: str) -> bytes:
    """SHA-256 of ``text``'s UTF-8 bytes (surrogates kept), computed once per string object."""
    global _digest_chars
    if len(text) < _DIGEST_MIN_CHARS:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    hit = _DIGESTS.get(id(text))
    if hit is not None and hit[0] is text:
        return hit[1]
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    if _digest_chars + len(text) > _DIGEST_MAX_CHARS:
        _DIGESTS.clear()
        _digest_chars = 0
    _DIGESTS[id(text)] = (text, digest)
    _digest_chars += len(text)
    return digest


@runtime_checkable
class ArtifactStore(Protocol):
    """Persists full tool outputs and remembers producer decisions.

    ``put`` returns the reference a preview names (for the local store, the absolute path
    of the file). Decisions let a producer boundary (an MCP client) tell the finalizer
    downstream what it already did with a text it bounded, keyed by ``text_key`` of that
    bounded text: the tuple of references, or ``()`` for "decided, nothing reusable".
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
