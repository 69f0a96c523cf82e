"""Handing the GIL to a waiting thread (an event loop) between pieces of long work."""

from __future__ import annotations

import threading
import time

__all__ = ["give_way"]


def give_way() -> None:
    """Let a waiting thread (an event loop) take the GIL now; never from the main thread."""
    if threading.active_count() > 1 and threading.current_thread() is not threading.main_thread():
        time.sleep(0)  # os.sched_yield() mostly lets this thread take the GIL back first
