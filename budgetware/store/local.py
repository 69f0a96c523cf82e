"""The local content-addressed artifact store: one directory of ``<sha256>.txt`` files."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import threading
from pathlib import Path

from budgetware.core.artifacts import ArtifactStoreError
from budgetware.core.jsonio import dumps_bytes, loads
from budgetware.store.files import Folder, open_private_dir
from budgetware.store.lifecycle import Entry, StoreUsage, plan_prune, summarize

__all__ = ["LocalArtifactStore", "store_for"]

_KEY = re.compile(r"[0-9a-f]{64}")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)


def _file_name(key: str, suffix: str) -> str:
    # Keys become file names: only a SHA-256 digest may, never anything a tool chose.
    if not _KEY.fullmatch(key):
        raise ValueError("artifact keys are lower-case hex SHA-256 digests")
    return key + suffix


class LocalArtifactStore:
    """Content-addressed files in one directory: ``<sha256>.txt``, written once, atomically.

    The directory is created 0700 and files 0600; no path component chosen by a tool (call
    id, tool name) ever reaches the file system, and the last component is never followed
    as a symlink. Sizes are reserved before writing so concurrent writers cannot overshoot
    ``max_store_bytes`` (counted per store object, that is per process session).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        max_artifact_bytes: int = 50 * 1024 * 1024,
        max_store_bytes: int = 500 * 1024 * 1024,
    ) -> None:
        self.directory = Path(os.path.abspath(os.fspath(directory)))
        self._dir = str(self.directory)
        self.max_artifact_bytes = max_artifact_bytes
        self.max_store_bytes = max_store_bytes
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}
        self._reserved = 0
        self._known: set[str] = set()
        # Decisions are written once and never change: a found one is remembered.
        self._decisions: dict[str, tuple[str, ...]] = {}

    # -- public API ------------------------------------------------------------------

    @property
    def reserved_bytes(self) -> int:
        """Bytes this store has written or reserved so far."""
        return self._reserved

    def path_for(self, key: str) -> Path:
        """The file a key lives in (whether or not it exists yet)."""
        return self.directory / _file_name(key, ".txt")

    def put(self, text: str, *, key: str | None = None) -> str:
        """Store ``text`` (once) and return its reference: the artifact's absolute path."""
        return self.put_reporting(text, key=key)[0]

    def put_reporting(self, text: str, *, key: str | None = None) -> tuple[str, bool]:
        """``put``, and whether this call wrote the artifact (False: it was there already).

        The finalizer uses it, when a store has it, to report the artifacts a batch wrote.
        """
        if key is not None and key in self._known:
            # Already written or found by this store: no need to encode the text again.
            return os.path.join(self._dir, _file_name(key, ".txt")), False
        data = text.encode("utf-8", "surrogatepass")
        if key is None:
            key = hashlib.sha256(data).hexdigest()
        name = _file_name(key, ".txt")
        ref = os.path.join(self._dir, name)
        wrote = False
        with self._key_lock(key):
            if key in self._known:
                return ref, False
            folder = self._open_dir()
            try:
                if self._existing_size(folder, name) != len(data):
                    self._write_new(folder, name, data)
                    wrote = True
                else:
                    _mark_used(folder, name)
            finally:
                folder.close()
            self._known.add(key)
        return ref, wrote

    def record_decision(self, key: str, refs: tuple[str, ...]) -> None:
        """Remember what a producer decided for the text with this key."""
        name = _file_name(key, ".decision.json")
        data = dumps_bytes({"refs": list(refs)})
        with self._key_lock("d" + key):
            folder = self._open_dir()
            try:
                if self._existing_size(folder, name) is None:
                    self._write_new(folder, name, data, count=False)
            finally:
                folder.close()

    def lookup_decision(self, key: str) -> tuple[str, ...] | None:
        """What a producer decided for the text with this key, or None if nothing."""
        known = self._decisions.get(key)
        if known is not None:
            return known
        path = os.path.join(self._dir, _file_name(key, ".decision.json"))
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _BINARY)
        except (FileNotFoundError, NotADirectoryError):
            return None  # the usual case: no producer bounded this text
        with os.fdopen(fd, "rb") as f:
            record = loads(f.read(1024 * 1024))
        refs = record.get("refs") if isinstance(record, dict) else None
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise ArtifactStoreError(errno.EINVAL, "malformed decision record")
        self._decisions[key] = decided = tuple(refs)
        return decided

    def usage(self) -> StoreUsage:
        """How many artifacts the directory holds, their total size, and their age range."""
        return summarize(self._entries())

    def prune(
        self,
        *,
        older_than: float | None = None,
        max_total_bytes: int | None = None,
        now: float,
        dry_run: bool = False,
    ) -> StoreUsage:
        """Delete artifacts unused for ``older_than`` seconds, then the least recently used
        until the rest fits ``max_total_bytes``; returns what was (or would be) deleted.

        "Used" is the file's modification time, refreshed the first time a process reuses
        an artifact. Decision records that name a deleted artifact go with it, so no
        preview ever names a file that pruning removed. ``now`` is passed in (the store
        reads no clock).
        """
        doomed = plan_prune(
            self._entries(), older_than=older_than, max_total_bytes=max_total_bytes, now=now
        )
        if not dry_run:
            gone = {os.path.join(self._dir, e.name) for e in doomed}
            for entry in doomed:
                self._remove(entry.name)
                self._known.discard(entry.name[: -len(".txt")])
            self._remove_decisions_naming(gone)
        return summarize(doomed)

    def _entries(self) -> list[Entry]:
        try:
            names = os.listdir(self._dir)
        except FileNotFoundError:
            return []
        entries = []
        for name in names:
            if not (name.endswith(".txt") and _KEY.fullmatch(name[: -len(".txt")])):
                continue  # temporary files, decisions, anything that is not an artifact
            try:
                info = os.stat(os.path.join(self._dir, name), follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(info.st_mode):
                entries.append(Entry(name, info.st_size, info.st_mtime))
        return entries

    def _remove(self, name: str) -> None:
        try:
            os.unlink(os.path.join(self._dir, name))
        except FileNotFoundError:
            pass

    def _remove_decisions_naming(self, gone: set[str]) -> None:
        if not gone:
            return
        for name in os.listdir(self._dir):
            if not name.endswith(".decision.json"):
                continue
            try:
                refs = self.lookup_decision(name[: -len(".decision.json")])
            except (OSError, ValueError):
                continue
            if refs and gone.intersection(refs):
                self._remove(name)
                self._decisions.pop(name[: -len(".decision.json")], None)

    # -- internals -----------------------------------------------------------------------

    def _key_lock(self, key: str) -> threading.Lock:
        with self._lock:
            lock = self._key_locks.get(key)
            if lock is None:
                lock = self._key_locks[key] = threading.Lock()
            return lock

    def _open_dir(self, *, create: bool = True) -> Folder:
        return open_private_dir(self._dir, create=create)

    @staticmethod
    def _existing_size(folder: Folder, name: str) -> int | None:
        try:
            info = folder.lstat(name)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(info.st_mode):
            raise ArtifactStoreError(errno.EEXIST, "artifact name is taken by a non-file")
        return info.st_size

    def _reserve(self, size: int) -> None:
        if size > self.max_artifact_bytes:
            raise ArtifactStoreError(errno.EFBIG, "artifact exceeds max_artifact_bytes")
        with self._lock:
            if self._reserved + size > self.max_store_bytes:
                raise ArtifactStoreError(errno.ENOSPC, "store exceeds max_store_bytes")
            self._reserved += size

    def _release(self, size: int) -> None:
        with self._lock:
            self._reserved -= size

    def _write_new(self, folder: Folder, name: str, data: bytes, *, count: bool = True) -> None:
        if count:
            self._reserve(len(data))
        tmp = f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            fd = folder.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, 0o600
            )
            try:
                with os.fdopen(fd, "wb", closefd=False) as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            finally:
                os.close(fd)
            try:
                # link() refuses to replace: a concurrent writer (another process) that got
                # there first wins, and its identical bytes are reused.
                folder.link(tmp, name)
            except FileExistsError:
                if self._existing_size(folder, name) != len(data):
                    raise ArtifactStoreError(
                        errno.EEXIST, "artifact exists with other size"
                    ) from None
                if count:
                    self._release(len(data))
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV):
                    raise
                folder.replace(tmp, name)
        except BaseException:
            # Keep the reservation only for bytes that stayed on disk.
            if count and self._existing_size_quiet(folder, name) != len(data):
                self._release(len(data))
            raise
        finally:
            try:
                folder.unlink(tmp)
            except FileNotFoundError:
                pass

    def _existing_size_quiet(self, folder: Folder, name: str) -> int | None:
        try:
            return self._existing_size(folder, name)
        except OSError:
            return None


def _mark_used(folder: Folder, name: str) -> None:
    # Reuse refreshes the modification time, which prune() reads as "last used".
    try:
        folder.touch(name)
    except OSError:
        pass  # a read-only store still serves its artifacts


_STORES: dict[tuple[str, int, int], LocalArtifactStore] = {}
_STORES_LOCK = threading.Lock()


def store_for(
    directory: str | os.PathLike[str], max_artifact_bytes: int, max_store_bytes: int
) -> LocalArtifactStore:
    """The process-wide store for a directory and limits, so reservations are shared."""
    key = (os.path.abspath(os.fspath(directory)), max_artifact_bytes, max_store_bytes)
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            store = _STORES[key] = LocalArtifactStore(
                key[0], max_artifact_bytes=max_artifact_bytes, max_store_bytes=max_store_bytes
            )
        return store
