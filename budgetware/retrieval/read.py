"""Reading a window of an artifact: exactly ``full[offset:offset + limit]``, at the cost of
the window whatever its offset (the store's character index)."""

from __future__ import annotations

from typing import Any

from budgetware.core.artifacts import ArtifactNotFound
from budgetware.core.config import BudgetConfig, resolve_config
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


def resolve_ref(
    ref: object, *, store: ContentStore | None = None, config: BudgetConfig | None = None
) -> tuple[ContentStore, str]:
    """The store and key of ``ref``: a reference as a preview prints it (a path or an
    ``s3://`` URL) or a bare SHA-256 hex, naming a verified artifact of the store.
    ArtifactNotFound for anything else; nothing outside the store is ever opened."""
    if store is None:
        store = configured_store(config)
    elif not isinstance(store, ContentStore):
        raise TypeError(
            f"store must be a LocalArtifactStore or S3ArtifactStore, not {type(store).__name__}"
        )
    if not isinstance(ref, str) or not ref.strip():
        raise ArtifactNotFound("a reference is the path or URL a preview names, or a SHA-256")
    return store, store.resolve(ref.strip())


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
    store, key = resolve_ref(ref, store=store, config=config)
    total = store.char_index(key).chars
    if offset > total:
        raise InvalidReadArgument(
            f"offset {offset:,} is past the end of the output ({total:,} chars)"
        )
    return Window(store.read_text(key, offset, offset + limit), offset, total)


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
    return read_window(ref, offset=offset, limit=limit, store=store, config=config).text
