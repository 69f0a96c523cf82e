"""Running a child command for the CLI: its signals forwarded, its exit code passed back."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import IO, Any

__all__ = ["ChildOutput", "exit_code", "forward_signals", "restore_signals"]

_CHUNK = 64 * 1024


def exit_code(returncode: int) -> int:
    # Killed by a signal: report it as a shell would (128 + signal number).
    return 128 - returncode if returncode < 0 else returncode


_Handler = Callable[[int, FrameType | None], Any] | int | None


def forward_signals(child: subprocess.Popen[bytes]) -> dict[int, _Handler]:
    def forward(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(OSError, ValueError):  # gone, or a signal Windows can't send
            child.send_signal(signum)

    previous: dict[int, _Handler] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous  # signal handlers can only be set from the main thread
    signals = [signal.SIGINT, signal.SIGTERM]
    if os.name != "nt":
        signals.append(signal.SIGHUP)
    for signum in signals:
        previous[signum] = signal.signal(signum, forward)
    return previous


def restore_signals(previous: dict[int, _Handler]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)


class ChildOutput:
    """The chunks a child writes to its output pipe, ending once the child has exited and
    its output is read: a grandchild holding the pipe open cannot hold the reader (POSIX).
    Iterate in one thread; call ``child_exited()`` from another once the child is reaped."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._fd = pipe.fileno()
        self._exited = threading.Event()
        self._wake = os.pipe() if os.name != "nt" else None

    def child_exited(self) -> None:
        """Read what is in the pipe now, then end (the child wrote all it will)."""
        self._exited.set()
        if self._wake is not None:
            os.write(self._wake[1], b"x")

    def close(self) -> None:
        if self._wake is not None:
            for fd in self._wake:
                os.close(fd)
            self._wake = None

    def __iter__(self) -> Iterator[bytes]:
        if self._wake is None:  # no select on Windows pipes: read to the end of file
            while data := os.read(self._fd, _CHUNK):
                yield data
            return
        with selectors.DefaultSelector() as selector:
            selector.register(self._fd, selectors.EVENT_READ)
            selector.register(self._wake[0], selectors.EVENT_READ)
            left: int | None = None  # once the child is gone: the most left to read
            while True:
                if left is None and self._exited.is_set():
                    # What the child wrote is in the pipe now: at most its capacity is left.
                    left = _pipe_capacity(self._fd)
                ready = {key.fd for key, _ in selector.select(None if left is None else 0)}
                if self._fd not in ready:
                    if left is None:
                        continue  # woken: the child exited
                    return  # drained
                data = os.read(self._fd, _CHUNK)
                if not data:
                    return
                yield data
                if left is not None:
                    left -= len(data)
                    if left <= 0:
                        return


def _pipe_capacity(fd: int) -> int:
    try:
        import fcntl

        return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))  # Linux
    except (ImportError, AttributeError, OSError):
        return 1 << 20  # more than any other system's pipe holds
