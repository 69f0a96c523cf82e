"""One background thread per process for the stores' upkeep (sweeps, deferred refreshes),
at the lowest CPU priority; a request only queues a job. Restarted in a forked child, and
stopped at exit so that a sweep ends between two deletions.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
import threading
from collections import deque
from collections.abc import Callable

__all__ = ["THREAD_NAME", "Stopping", "check_stopping", "stopping", "submit"]

logger = logging.getLogger("budgetware")

THREAD_NAME = "budgetware-sweeper"

_Job = Callable[[], object]


class Stopping(Exception):
    """The interpreter is exiting: a long job ends here."""


class _Sweeper:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: deque[tuple[str, _Job]] = deque()
        self.wake = threading.Event()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def submit(self, what: str, job: _Job) -> None:
        with self.lock:
            if self.stop.is_set():
                return
            self.jobs.append((what, job))
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self.run, name=THREAD_NAME, daemon=True)
                self.thread.start()
        self.wake.set()

    def run(self) -> None:
        _lower_priority()
        while not self.stop.is_set():
            self.wake.wait()
            self.wake.clear()
            while not self.stop.is_set():
                with self.lock:
                    if not self.jobs:
                        break
                    what, job = self.jobs.popleft()
                try:
                    job()
                except Stopping:
                    return
                except Exception as exc:  # upkeep must never end the thread
                    logger.warning(
                        "budgetware could not %s (%s); it is tried again later",
                        what,
                        type(exc).__name__,
                    )
                del job  # it holds its store: not kept while the thread waits


def _lower_priority() -> None:
    """Let request threads have the CPU first (Linux: a nice value per thread)."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


_SWEEPER = _Sweeper()


def submit(what: str, job: _Job) -> None:
    """Run ``job`` on the background thread ("what" names it in a log line if it fails)."""
    _SWEEPER.submit(what, job)


def stopping() -> bool:
    """Whether the interpreter is exiting: long jobs end at their next safe point."""
    return _SWEEPER.stop.is_set()


def check_stopping() -> None:
    """Raise Stopping when the interpreter is exiting."""
    if _SWEEPER.stop.is_set():
        raise Stopping()


def _after_fork_in_child() -> None:
    # The parent's thread does not exist here, and its lock may have been held mid-fork.
    global _SWEEPER
    _SWEEPER = _Sweeper()


def _at_exit() -> None:
    sweeper = _SWEEPER
    sweeper.stop.set()
    sweeper.wake.set()
    thread = sweeper.thread
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout=1.0)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_at_exit)
