"""Handing the GIL to a waiting thread between pieces of long work.

A worker thread bounding a large output calls ``give_way()`` between short pieces: an
event loop waiting for the GIL takes it at once instead of after the interpreter's 5 ms
switch interval, which is half of the 10 ms a loop may be stalled (docs/benchmarks.md).
``time.sleep(0)`` hands it over (``os.sched_yield()`` mostly does not: the releasing
thread takes the GIL back first). With no other thread alive it does nothing.
"""

from __future__ import annotations

import threading
import time

__all__ = ["give_way"]

_active_count = threading.active_count


def _hand_over() -> None:
    time.sleep(0)


_YIELD = _hand_over


def give_way() -> None:
    """Let a thread waiting for the GIL take it now; nothing when no other thread runs."""
    if _active_count() > 1:
        _YIELD()
