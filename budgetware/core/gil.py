"""Handing the GIL to a waiting thread (an event loop) between pieces of long work."""

from __future__ import annotations

import threading
import time

__all__ = ["give_way"]


def _hand_over() -> None:
    time.sleep(0)  # os.sched_yield() mostly lets this thread take the GIL back first


_YIELD = _hand_over  # replaced by tests that count the yields


def give_way() -> None:
    """Let a thread waiting for the GIL take it now; nothing when no other thread runs."""
    if threading.active_count() > 1:
        _YIELD()
