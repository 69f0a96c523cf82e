"""Reading a window of an artifact, and which store a reference names."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from budgetware.core.artifacts import ArtifactNotFound
from budgetware.core.config import BudgetConfig, resolve_config
from budgetware.retrieval.artifact import Artifact, reader_for
from budgetware.retrieval.errors import InvalidReadArgument
from budgetware.store.base import ContentStore, named_stores
from budgetware.store.select import store_for_config

__all__ = [
    "DEFAULT_LIMIT",
    "LARGEST",
    "Window",
    "count",
    "read_artifact",
    "read_ref",
    "read_window",
]

DEFAULT_LIMIT = 20_000
T = TypeVar("T")


# What a model leaves around a reference it copied from a notice.
_TRAILING = "];,."
_QUOTES = "\"'`"
# An artifact's name as a model may write it.
_NAME = re.compile(r"([0-9a-fA-F]{64})(\.[tT][xX][tT])?")
_PASS_THE_NAME = (
    "pass the reference after 'Full output:' as it is, or just its 64-hex SHA-256 name"
)


def normalize_ref(ref: str) -> str:
    """``ref`` without what a model adds by mistake (the notice's punctuation, quotes,
    upper-case hex); the directory, bucket and prefix stay as written."""
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


def read_ref(
    ref: object,
    read: Callable[[Artifact], T],
    *,
    store: ContentStore | None = None,
    config: BudgetConfig | None = None,
) -> T:
    """``read`` of the artifact ``ref`` names (a path, ``s3://`` URL or bare SHA-256);
    ArtifactNotFound for anything else. The store is ``store``, else the configured one,
    then every store that named an artifact in this process."""
    if not isinstance(ref, str) or not ref.strip():
        raise ArtifactNotFound(f"no reference given: {_PASS_THE_NAME}")
    named: list[tuple[ContentStore, str]] = []
    for candidate in _stores(store, config):
        key = candidate.key_of(ref) or candidate.key_of(normalize_ref(ref))
        if key is not None:
            named.append((candidate, key))
    if not named:
        raise ArtifactNotFound(f"not a reference to an artifact of this store: {_PASS_THE_NAME}")
    for candidate, key in named[:-1]:
        try:
            return read(reader_for(candidate).open(key))
        except ArtifactNotFound:
            continue
    candidate, key = named[-1]
    return read(reader_for(candidate).open(key))


def _stores(store: ContentStore | None, config: BudgetConfig | None) -> list[ContentStore]:
    if store is not None:
        if not isinstance(store, ContentStore):
            raise TypeError(
                f"store must be a LocalArtifactStore or S3ArtifactStore, "
                f"not {type(store).__name__}"
            )
        return [store]
    others = named_stores()
    configured = store_for_config(resolve_config(config))
    if configured is None:
        if not others:
            raise ArtifactNotFound("no artifact store is configured (persist is off)")
        return others
    return [configured, *(other for other in others if other is not configured)]


# The largest count taken: a 64-bit index, and a number every message can print.
LARGEST = 2**63 - 1


def count(name: str, value: Any, *, minimum: int = 0) -> int:
    """``value`` as a whole number from ``minimum`` to ``LARGEST`` (InvalidReadArgument if
    not)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidReadArgument(f"{name} must be a whole number, not {type(value).__name__}")
    if value < minimum:
        got = f" (got {value})" if value > -LARGEST else ""
        raise InvalidReadArgument(f"{name} must be {minimum} or more{got}")
    if value > LARGEST:
        raise InvalidReadArgument(f"{name} must be a whole number up to {LARGEST:,}")
    return value


@dataclass(frozen=True, slots=True)
class Window:
    """A window of an artifact: its text, where it starts, and the artifact's length (all
    in characters)."""

    text: str
    offset: int
    total: int

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

    def window(artifact: Artifact) -> Window:
        total = artifact.index.chars
        if offset > total:
            raise InvalidReadArgument(
                f"offset {offset:,} is past the end of the output ({total:,} chars)"
            )
        text, total = reader_for(artifact.store).text(artifact.key, offset, offset + limit)
        return Window(text, offset, total)

    return read_ref(ref, window, store=store, config=config)


def read_artifact(
    ref: str,
    *,
    offset: int = 0,
    limit: int = DEFAULT_LIMIT,
    store: ContentStore | None = None,
    config: BudgetConfig | None = None,
) -> str:
    """Exactly ``full[offset:offset + limit]`` of a full output, in code points.

    ``ref`` is the reference a preview prints (a path or ``s3://`` URL) or the bare SHA-256
    hex. The store is ``store`` if given, else the configured one (``config``, the
    environment) or any store that named an artifact in this process.

    Raises ArtifactNotFound for a reference that is not an artifact of the store whose
    bytes hash to its name, and InvalidReadArgument for a negative offset or limit or an
    offset past the end.
    """
    return read_window(ref, offset=offset, limit=limit, store=store, config=config).text
