"""The local content-addressed artifact store: one directory of ``<sha256>.txt`` files."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
import threading
from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING

from budgetware.core.artifacts import ArtifactNotFound, ArtifactStoreError, check_key
from budgetware.core.gil import give_way
from budgetware.store import sweeper
from budgetware.store.base import ArtifactChanged, ContentStore, Limits, Probe
from budgetware.store.files import Folder, open_private_dir
from budgetware.store.lifecycle import MARKER, Entry, Listing

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["LocalArtifactStore"]

# What a store directory holds, in one match (the group says which): an artifact, a
# decision record, or a temporary file of _write_file
# (".<name>.<pid>.<thread id>.tmp"); nothing else counts.
_LISTED = re.compile(
    r"[0-9a-f]{64}\.(?:(txt)|(decision\.json))"
    r"|(\.(?:[0-9a-f]{64}\.(?:txt|decision\.json)|" + re.escape(MARKER) + r")"
    r"\.\d+\.\d+\.tmp)"
)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_CHUNK = 1024 * 1024


class LocalArtifactStore(ContentStore):
    """Content-addressed files in one private directory (one another user owns or can write
    is refused): ``<sha256>.txt``, written once, atomically, 0600, never through a symlink.
    No automatic sweep unless ``sweep_interval`` is set.
    """

    local = True  # a lookup opens a file (the finalizer asks without searching a large text)

    def __init__(self, directory: str | os.PathLike[str], **limits: Unpack[Limits]) -> None:
        super().__init__(**limits)
        self.directory = Path(os.path.abspath(os.fspath(directory)))
        self._dir = str(self.directory)
        self.ref_prefix = os.path.join(self._dir, "")  # a reference is the artifact's path

    def __repr__(self) -> str:
        return f"LocalArtifactStore({self._dir!r})"

    # -- references ----------------------------------------------------------------------

    @property
    def location(self) -> str:
        """The store directory."""
        return self._dir

    # -- reading -------------------------------------------------------------------------

    def read_piece(
        self, key: str, start: int, end: int, version: Hashable | None = None
    ) -> tuple[bytes, int, Hashable]:
        """See ``ContentStore.read_piece``; the version is (device, inode, size)."""
        try:
            folder = self._open_dir(create=False)
        except FileNotFoundError:
            raise ArtifactNotFound("no such artifact in this store") from None
        with folder:
            try:
                fd = folder.open(check_key(key) + ".txt", os.O_RDONLY | _NOFOLLOW | _BINARY)
            except FileNotFoundError:
                raise ArtifactNotFound("no such artifact in this store") from None
            except OSError as exc:
                if exc.errno == errno.ELOOP:  # a symlink
                    raise ArtifactNotFound("no such artifact in this store") from None
                raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ArtifactNotFound("no such artifact in this store")
            if version is not None and _version(info) != version:
                raise ArtifactChanged("the artifact changed after it was verified")
            if hasattr(os, "pread"):
                data = os.pread(fd, end - start, start)
            else:  # pragma: no cover - Windows
                os.lseek(fd, start, os.SEEK_SET)
                data = os.read(fd, end - start)
            return data, info.st_size, _version(info)
        finally:
            os.close(fd)

    # -- backend primitives --------------------------------------------------------------

    def _open_dir(self, *, create: bool = True) -> Folder:
        try:
            return open_private_dir(self._dir, create=create)
        except PermissionError as exc:
            raise ArtifactStoreError(exc.errno or errno.EACCES, str(exc.strerror)) from None

    def _probe(self, key: str) -> Probe:
        name = key + ".txt"
        try:
            folder = self._open_dir(create=False)
        except FileNotFoundError:
            return "absent"
        with folder:
            try:
                info = folder.lstat(name)
            except FileNotFoundError:
                return "absent"
            if not stat.S_ISREG(info.st_mode):
                raise ArtifactStoreError(errno.EEXIST, "artifact name is taken by a non-file")
            return "verified" if _digest(folder, name) == key else "false"

    def _write(self, key: str, data: bytes, *, replace: bool) -> bool:
        with self._open_dir() as folder:
            return _write_file(folder, key + ".txt", data, replace=replace, key=key)

    def _refresh(self, key: str) -> bool:
        # The modification time is the last use the sweep and prune read.
        name = key + ".txt"
        try:
            folder = self._open_dir(create=False)
        except FileNotFoundError:
            return False
        except OSError:
            return True  # cannot tell; the artifact was verified
        with folder:
            try:
                if folder.fd is None and not stat.S_ISREG(folder.lstat(name).st_mode):
                    return False  # by path, utime would follow a symlink
                folder.touch(name)
            except FileNotFoundError:
                return False
            except OSError:
                pass  # a read-only store still serves its artifacts
        return True

    def _still_there(self, key: str) -> bool:
        # A directory or artifact removed under a running process is written again.
        try:
            info = os.stat(os.path.join(self._dir, key + ".txt"), follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError:
            return True  # cannot tell (as _refresh): the artifact was verified
        return stat.S_ISREG(info.st_mode)

    def _read_record(self, name: str) -> bytes | None:
        try:
            folder = self._open_dir(create=False)
        except FileNotFoundError:
            return None  # the usual case: no producer bounded this text
        with folder:
            return _read_small(folder, name)

    def _write_record(self, name: str, data: bytes, *, replace: bool) -> None:
        with self._open_dir() as folder:
            _write_file(folder, name, data, replace=replace)

    def _scan(self) -> Listing:
        listing = Listing()
        try:
            folder = self._open_dir(create=False)
        except FileNotFoundError:
            return listing
        with folder:
            kinds = (listing.artifacts, listing.decisions, listing.temps)
            with os.scandir(self._dir if folder.fd is None else folder.fd) as entries:
                for count, item in enumerate(entries, 1):
                    if count % 64 == 0:
                        give_way()  # to request threads waiting for the GIL
                        sweeper.check_stopping()
                    match = _LISTED.fullmatch(item.name)
                    if match is None or match.lastindex is None:
                        continue
                    into = kinds[match.lastindex - 1]
                    name = item.name
                    try:
                        info = item.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if stat.S_ISREG(info.st_mode):
                        into.append(Entry(name, info.st_size, info.st_mtime))
        return listing

    def _delete(self, names: list[str]) -> None:
        try:
            folder = self._open_dir(create=False)
        except FileNotFoundError:
            return
        with folder:
            for name in names:
                if sweeper.stopping():
                    return
                with contextlib.suppress(FileNotFoundError):
                    folder.unlink(name)


def _version(info: os.stat_result) -> Hashable:
    """What tells a file from another put under its name: a new inode, or a new size."""
    return (info.st_dev, info.st_ino, info.st_size)


def _digest(folder: Folder, name: str) -> str:
    """SHA-256 of a regular file in ``folder``, read without following a symlink."""
    fd = folder.open(name, os.O_RDONLY | _NOFOLLOW | _BINARY)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ArtifactStoreError(errno.EEXIST, "artifact name is taken by a non-file")
        digest = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def _read_small(folder: Folder, name: str) -> bytes | None:
    try:
        fd = folder.open(name, os.O_RDONLY | _NOFOLLOW | _BINARY)
    except FileNotFoundError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ArtifactStoreError(errno.EINVAL, "record is not a regular file")
        return os.read(fd, _CHUNK)
    finally:
        os.close(fd)


def _write_file(
    folder: Folder, name: str, data: bytes, *, replace: bool, key: str | None = None
) -> bool:
    """Write ``data`` as ``name`` atomically; True when these bytes were written. Without
    ``replace`` an existing file is kept (False), unless it does not hash to ``key``.
    """
    tmp = f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        fd = folder.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, 0o600)
        try:
            # No fsync: a file torn by a crash never hashes to its name, so it is never
            # served and the next write of the same output replaces it.
            with os.fdopen(fd, "wb", closefd=False) as f:
                f.write(data)
        finally:
            os.close(fd)
        if replace:
            folder.replace(tmp, name)
            return True
        try:
            # link() never replaces: a concurrent writer that got there first wins.
            folder.link(tmp, name)
        except FileExistsError:
            if key is None:
                return False
            info = folder.lstat(name)
            if not stat.S_ISREG(info.st_mode):
                raise ArtifactStoreError(
                    errno.EEXIST, "artifact name is taken by a non-file"
                ) from None
            if _digest(folder, name) == key:
                return False
            folder.replace(tmp, name)
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV):
                raise
            folder.replace(tmp, name)  # a file system without hard links
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            folder.unlink(tmp)
