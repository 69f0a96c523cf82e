"""Reading a window of an artifact: exactly ``full[offset:offset + limit]``, at the cost of
the window whatever its offset (the store's character index)."""

from __future__ import annotations

import os
import re
from typing import Any

from budgetware.core.artifacts import ArtifactNotFound
from budgetware.core.config import BudgetConfig, resolve_config
from budgetware.retrieval import cache
from budgetware.retrieval.errors import InvalidReadArgument
from budgetware.store.base import ContentStore
from budgetware.store.select import store_for_config

__all__ = ["DEFAULT_LIMIT", "Window", "count", "read_artifact", "read_window", "resolve_ref"]

DEFAULT_LIMIT = 20_000


def configured_store(config: BudgetConfig | None = None) -> ContentStore:
    """The store the configuration names (environment < ``config`` < ``budget()``)."""
    store = store_for_config(resolve_config(config))
    if store is None:
        raise ArtifactNotFound("no artifact store is configured (persist is off)")
    if not isinstance(store, ContentStore):  # pragma: no cover - store_for_config's stores
        raise TypeError(f"{type(store).__name__} cannot be read back")
    return store


# What a model leaves around a reference it copied from a notice: the notice's closing
# bracket, the tool hint's semicolon, a sentence's comma or full stop; quotes or backticks.
_TRAILING = "];,."
_QUOTES = "\"'`"
# An artifact's name as a model may write it: the hex in either case, with or without
# ".txt".
_NAME = re.compile(r"([0-9a-fA-F]{64})(\.[tT][xX][tT])?")
_PASS_THE_NAME = (
    "pass the reference after 'Full output:' as it is, or just its 64-hex SHA-256 name"
)


def normalize_ref(ref: str) -> str:
    """``ref`` with what a model adds by mistake taken off, where that is unambiguous: the
    punctuation of the notice after it (``]``, ``;``), quotes around it, upper-case hex in
    the artifact's name; and a bare ``<sha256>.txt`` is its SHA-256. The directory, bucket
    and prefix are left exactly as written: the store decides whether they are its own."""
    ref = ref.strip().strip(_QUOTES).rstrip(_TRAILING).strip(_QUOTES).strip()
    cut = max(ref.rfind("/"), ref.rfind(os.sep))
    head, name = ref[: cut + 1], ref[cut + 1 :]
    named = _NAME.fullmatch(name)
    if named is None:
        return ref
    key = named[1].lower()
    if not head:
        return key  # "<sha256>" or "<sha256>.txt": no directory to check
    return f"{head}{key}.txt" if named[2] else f"{head}{key}"


def resolve_ref(
    ref: object, *, store: ContentStore | None = None, config: BudgetConfig | None = None
) -> tuple[ContentStore, str]:
    """The store and key of ``ref``: a reference as a preview prints it (a path or an
    ``s3://`` URL) or a bare SHA-256 hex, naming a verified artifact of the store (see
    ``normalize_ref`` for the slips forgiven). ArtifactNotFound for anything else; nothing
    outside the store is ever opened."""
    if store is None:
        store = configured_store(config)
    elif not isinstance(store, ContentStore):
        raise TypeError(
            f"store must be a LocalArtifactStore or S3ArtifactStore, not {type(store).__name__}"
        )
    if not isinstance(ref, str) or not ref.strip():
        raise ArtifactNotFound(f"no reference given: {_PASS_THE_NAME}")
    # A reference as the preview printed it, the common case, is read as it is.
    key = store.key_of(ref) or store.key_of(normalize_ref(ref))
    if key is None:
        raise ArtifactNotFound(f"not a reference to an artifact of this store: {_PASS_THE_NAME}")
    if not store.verify(key):
        raise ArtifactNotFound("no such artifact in this store (missing or altered)")
    return store, key


def count(name: str, value: Any, *, minimum: int = 0) -> int:
    """``value`` as a whole number of at least ``minimum`` (InvalidReadArgument if not)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidReadArgument(f"{name} must be a whole number, not {type(value).__name__}")
    if value < minimum:
        raise InvalidReadArgument(f"{name} must be {minimum} or more (got {value})")
    return value


class Window:
    """A window of an artifact: its text, where it starts, and the artifact's length (all
    in characters)."""

    __slots__ = ("offset", "text", "total")

    def __init__(self, text: str, offset: int, total: int) -> None:
        self.text = text
        self.offset = offset
        self.total = total

    @property
    def end(self) -> int:
        return self.offset + len(self.text)


def read_window(
    ref: object,
    *,
    offset: int = 0,
    limit: int = DEFAULT_LIMIT,
    store: ContentStore | None = None,
    config: BudgetConfig | None = None,
) -> Window:
    """``read_artifact``, with where the window starts and the output's full length."""
    offset = count("offset", offset)
    limit = count("limit", limit)
    if store is None:
        store = configured_store(config)
    # An artifact read lately, and still the same file: one stat and one pread.
    remembered = cache.window(store, ref, offset, limit)
    if remembered is not None:
        return Window(remembered[0], offset, remembered[1])
    try:
        store, key = resolve_ref(ref, store=store)
        total = store.char_index(key).chars
        if offset > total:
            raise InvalidReadArgument(
                f"offset {offset:,} is past the end of the output ({total:,} chars)"
            )
        text = store.read_text(key, offset, offset + limit)
    except ArtifactNotFound:
        cache.discard(store, ref)
        raise
    cache.remember(store, ref, key, store.char_index(key))
    return Window(text, offset, total)


def read_artifact(
    ref: str,
    *,
    offset: int = 0,
    limit: int = DEFAULT_LIMIT,
    store: ContentStore | None = None,
    config: BudgetConfig | None = None,
) -> str:
    """Characters ``offset`` to ``offset + limit`` of a full output: exactly
    ``full[offset:offset + limit]`` in code points (shorter at the end).

    ``ref`` is the reference a preview prints (the artifact's path, or its ``s3://`` URL)
    or the bare SHA-256 hex. The store is the configured one (``artifact_store`` /
    ``artifact_dir``, from ``config`` or the environment), or ``store``.

    Raises ArtifactNotFound for a reference that is not a verified artifact of the store
    (outside it, ``..``, a symlink, a directory, unknown, evicted, truncated), and
    InvalidReadArgument for a negative offset or limit or an offset past the end.
    """
    whole = type(offset) is int and type(limit) is int and offset >= 0 and limit >= 0
    if store is not None and whole:
        # An artifact read lately, and still the same file: one stat and one pread.
        remembered = cache.window(store, ref, offset, limit)
        if remembered is not None:
            return remembered[0]
    return read_window(ref, offset=offset, limit=limit, store=store, config=config).text
