"""Handing the GIL to a waiting thread (an event loop) between pieces of long work."""

from __future__ import annotations

import threading
import time

__all__ = ["give_way"]


def give_way() -> None:
    """From a worker or background thread, let a thread waiting for the GIL (an event loop)
    take it now. Nothing on the main thread, whose bounding the caller waits for (a sleep
    costs it about 0.1 ms), nor when no other thread runs."""
    if threading.active_count() > 1 and threading.current_thread() is not threading.main_thread():
        time.sleep(0)  # os.sched_yield() mostly lets this thread take the GIL back first
