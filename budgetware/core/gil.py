"""Handing the GIL to a waiting thread (an event loop) between pieces of long work."""

from __future__ import annotations

import threading
import time

__all__ = ["give_way"]

_last = [0.0]  # when a worker thread last handed the GIL over


def give_way() -> None:
    """Let a waiting thread (an event loop) take the GIL, at most once a millisecond; never
    from the main thread. Cheap to call often: between calls of a millisecond or less."""
    now = time.monotonic()
    if now - _last[0] >= 1e-3 and threading.current_thread() is not threading.main_thread():
        # A real sleep: with sleep(0) this thread mostly takes the GIL back before a waiting
        # one wakes, and each release restarts that thread's 5 ms wait for a forced switch.
        time.sleep(2e-5)
        _last[0] = time.monotonic()
