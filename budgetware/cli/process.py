"""Running a child command for the CLI: its signals forwarded, its exit code passed back."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["exit_code", "forward_signals", "restore_signals"]


def exit_code(returncode: int) -> int:
    # Killed by a signal: report it as a shell would (128 + signal number).
    return 128 - returncode if returncode < 0 else returncode


_Handler = Callable[[int, FrameType | None], Any] | int | None


def forward_signals(child: subprocess.Popen[bytes]) -> dict[int, _Handler]:
    def forward(signum: int, frame: FrameType | None) -> None:
        try:
            child.send_signal(signum)
        except (OSError, ValueError):
            # Gone already (OSError), or a signal this platform cannot send to a process:
            # on Windows Popen.send_signal raises ValueError for SIGINT (only SIGTERM,
            # CTRL_C_EVENT and CTRL_BREAK_EVENT can be sent). Windows is not tested.
            pass

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
