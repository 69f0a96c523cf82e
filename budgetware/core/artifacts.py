"""The narrow protocol through which the core persists full outputs, and their content address."""

from __future__ import annotations

import hashlib
import re
from typing import Protocol, runtime_checkable

__all__ = [
    "ArtifactNotFound",
    "ArtifactStore",
    "ArtifactStoreError",
    "FindsArtifacts",
    "PredictsReferences",
    "check_key",
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


_HEX64 = re.compile(r"[0-9a-f]{64}")


def check_key(key: str) -> str:
    """``key`` if it is a content address (lower-case hex SHA-256), the only thing an
    artifact's name is made of; else ValueError."""
    if not isinstance(key, str) or _HEX64.fullmatch(key) is None:
        raise ValueError("artifact keys are lower-case hex SHA-256 digests")
    return key


# Characters encoded per piece of a long text's digest. Encoding 4 MB holds the GIL for
# milliseconds (hashing does not: hashlib releases it for more than 2 KiB), which a worker
# thread bounding a large MCP response off the event loop would make the loop wait for;
# between pieces the loop gets in. UTF-8 encodes each code point alone, so the bytes hashed
# are the same.
_DIGEST_PIECE_CHARS = 256 * 1024


def text_digest(text: str) -> bytes:
    """SHA-256 of ``text``'s UTF-8 bytes (surrogates kept), encoded in pieces."""
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
