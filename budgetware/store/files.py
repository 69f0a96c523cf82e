"""Private directories and the files in them, without following symlinks where possible."""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # without importing typing (start-up hooks)
if TYPE_CHECKING:
    from typing import Any

    from budgetware.core.config import BudgetConfig

__all__ = [
    "USE_DIR_FD",
    "Folder",
    "check_trusted",
    "directory_problem",
    "open_private_dir",
    "plainly_accepted",
    "plainly_private",
    "untrusted_reason",
]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)

# Relative to an open directory descriptor where the platform allows it (POSIX), so the
# directory cannot be swapped for a symlink between checks and writes; elsewhere by path.
# (os.replace is os.rename, but is not listed in supports_dir_fd.)
USE_DIR_FD = {os.open, os.stat, os.link, os.unlink, os.rename, os.utime} <= os.supports_dir_fd


class Folder:
    """File operations on names inside the store directory; ``with`` closes it."""

    def __init__(self, path: str, fd: int | None) -> None:
        self.path = path
        self.fd = fd

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _at(self, name: str) -> tuple[str, dict[str, Any]]:
        if self.fd is None:
            return os.path.join(self.path, name), {}
        return name, {"dir_fd": self.fd}

    def open(self, name: str, flags: int, mode: int = 0o777) -> int:
        path, kw = self._at(name)
        return os.open(path, flags, mode, **kw)

    def lstat(self, name: str) -> os.stat_result:
        path, kw = self._at(name)
        return os.stat(path, follow_symlinks=False, **kw)

    def link(self, src: str, dst: str) -> None:
        if self.fd is None:
            os.link(os.path.join(self.path, src), os.path.join(self.path, dst))
        else:
            os.link(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)

    def replace(self, src: str, dst: str) -> None:
        if self.fd is None:
            os.replace(os.path.join(self.path, src), os.path.join(self.path, dst))
        else:
            os.replace(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def unlink(self, name: str) -> None:
        path, kw = self._at(name)
        os.unlink(path, **kw)

    def touch(self, name: str) -> None:
        path, kw = self._at(name)
        if self.fd is None:
            os.utime(path)  # the name was just checked to be a regular file
        else:
            os.utime(path, follow_symlinks=False, **kw)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)


def open_private_dir(path: str, *, create: bool = True) -> Folder:
    """The directory at ``path`` (created, or kept, 0700), opened without following a
    symlink; PermissionError if another user owns it or may write into it."""
    if create:
        os.makedirs(path, mode=0o700, exist_ok=True)
    if not USE_DIR_FD:
        if not os.path.lexists(path):
            raise FileNotFoundError(errno.ENOENT, "no such directory", path)
        if os.path.islink(path) or not os.path.isdir(path):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)
        check_trusted(os.stat(path, follow_symlinks=False))
        return Folder(path, None)
    fd = os.open(path, os.O_RDONLY | _DIRECTORY | _NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISDIR(info.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)
        check_trusted(info)
        if create and stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, 0o700)
    except BaseException:
        os.close(fd)
        raise
    return Folder(path, fd)


def untrusted_reason(info: os.stat_result) -> str | None:
    """Why a directory with this status must not hold artifacts, or None."""
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return "it is owned by another user"
    if os.name == "posix" and stat.S_IMODE(info.st_mode) & 0o022:
        return "other users can write into it"
    return None


def directory_problem(path: str) -> str | None:
    """Why the directory at ``path`` must not hold artifacts (a phrase), or None; a missing
    one is fine (created 0700 on the first write)."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return f"it cannot be examined ({type(exc).__name__})"
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    return untrusted_reason(info)


def plainly_private(path: str) -> bool:
    """Whether ``path`` surely may hold artifacts, from one ``stat`` (False: run the full
    check, ``store/select.check_store``, which names the problem)."""
    return directory_problem(path) is None


def default_plainly_private() -> bool:
    """``plainly_private`` of the default store; True without a home directory (outputs
    are then bounded without references): with no setting, nothing more to check."""
    from budgetware.core.paths import default_artifact_path

    try:
        return plainly_private(default_artifact_path())
    except (RuntimeError, KeyError, OSError):
        return True


def plainly_accepted(config: BudgetConfig, *, s3_later: bool) -> bool:
    """Whether ``check_store`` surely accepts ``config``'s store, without loading the stores
    (``s3_later``: an ``s3://`` store is checked later). False: run ``check_store``."""
    if not config.persist:
        return True
    try:
        location = config.store_location()
    except (RuntimeError, KeyError, OSError):
        return True
    except ValueError:
        return False  # check_store names the bad value
    if location.scheme == "s3":
        return s3_later
    return location.scheme == "file" and plainly_private(location.path)


def check_trusted(info: os.stat_result) -> None:
    """Raise PermissionError for a directory another user owns or can write."""
    reason = untrusted_reason(info)
    if reason is not None:
        raise PermissionError(errno.EACCES, f"refused: {reason}")
