"""The narrow protocol through which the core persists full outputs, and their content address."""

from __future__ import annotations

import hashlib
import re
from typing import Protocol, runtime_checkable

__all__ = [
    "ArtifactNotFound",
    "ArtifactStore",
    "ArtifactStoreError",
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
    """``key`` if it is a content address (lower-case hex SHA-256), else ValueError."""
    if not isinstance(key, str) or _HEX64.fullmatch(key) is None:
        raise ValueError("artifact keys are lower-case hex SHA-256 digests")
    return key


# Encoding holds the GIL (hashing does not): a long text is encoded in pieces, so that an
# event loop waiting on a worker thread gets in between them.
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

    ``put`` returns the reference a preview names (the local store: the file's path). A
    decision tells the finalizer downstream what a producer (the MCP boundary) did with a
    text it bounded, keyed by ``text_key`` of that text: its references, or ``()`` for
    none. Only texts that may be previews (``core/notice.may_be_preview``) are looked up.
    Any method may raise; callers treat a failure as "no reference".

    The finalizer also uses, where a store has them: ``ref_for(key)`` (what ``put`` will
    return, without I/O: it then knows before writing whether a preview can name the
    artifact), ``stored_reference(key)`` (the reference of an artifact already there and
    verified, else None: one ``HeadObject`` on S3, no upload), ``put_reporting(text, *,
    key, data)`` (``put`` of ``text`` whose UTF-8 bytes are ``data``, and whether it wrote)
    and ``note_named(text)``.
    """

    def put(self, text: str, *, key: str | None = None) -> str: ...

    def record_decision(self, key: str, refs: tuple[str, ...]) -> None: ...

    def lookup_decision(self, key: str) -> tuple[str, ...] | None: ...
