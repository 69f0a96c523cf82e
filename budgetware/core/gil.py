"""Handing the GIL to a waiting thread (an event loop) between pieces of long work."""

from __future__ import annotations

import threading
import time

__all__ = ["give_way"]


def give_way() -> None:
    """Let a thread waiting for the GIL take it now; nothing when no other thread runs."""
    if threading.active_count() > 1:
        time.sleep(0)  # os.sched_yield() mostly lets this thread take the GIL back first
