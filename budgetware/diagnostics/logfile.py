"""The debug log file: append-only, created 0600, never through a symlink."""

from __future__ import annotations

import os
import stat

__all__ = ["LogFile"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class LogFile:
    """One log file, opened at its first line; callers serialize writes (one lock)."""

    def __init__(self) -> None:
        self.path: str | None = None
        self._fd: int | None = None

    def use(self, path: str | None) -> None:
        """Write to ``path`` from now on (None: nowhere); closes a file opened for another."""
        if path != self.path:
            self.close()
        self.path = path

    def write(self, line: bytes) -> None:
        """Append one line (its newline included); nothing when no path is set."""
        fd = self._open()
        if fd is None:
            return
        view = memoryview(line)
        while view:  # one write per line; a regular file takes it whole in practice
            written = os.write(fd, view)
            view = view[written:]

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def forget(self) -> None:
        """Drop the descriptor without closing it (a forked child: it is the parent's)."""
        self._fd = None

    def _open(self) -> int | None:
        if self._fd is not None:
            return self._fd
        if self.path is None:
            return None
        # Append-only, created 0600, never through a symlink at the path; non-blocking so
        # that a FIFO planted there cannot hang the caller (rejected below: not a file).
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC | _NONBLOCK | _BINARY
        fd = os.open(self.path, flags, 0o600)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError("the debug log path does not name a regular file")
            if _NONBLOCK and hasattr(os, "set_blocking"):
                os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return fd
