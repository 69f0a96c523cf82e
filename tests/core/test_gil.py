"""give_way: the GIL handed to a waiting thread between pieces of long work, and only then."""

from __future__ import annotations

import subprocess
import sys
import textwrap

TOUCHES_NO_FILES = True  # the scans run in a program of their own


def test_only_a_worker_beside_another_thread_yields() -> None:
    # Nothing can take the GIL from a single-threaded program, and the main thread's own
    # bounding is what its caller waits for: neither gives the GIL away. A worker thread
    # (bounding off an event loop) does, between the pieces of a scan. Run in a fresh
    # interpreter: pytest's own threads are not there.
    program = textwrap.dedent(
        """
        import itertools, threading, time
        from budgetware.core import salient
        calls = []
        time.sleep = lambda seconds: calls.append(seconds)
        ticks = itertools.count()
        time.monotonic = lambda: next(ticks) * 0.002  # 2 ms a reading: every call may yield
        pattern = salient.compile_salient()
        text = "x\\n" * 600_000
        scan = lambda: salient.salient_spans(text, 0, len(text), pattern)
        scan()
        alone = len(calls)
        waiting = threading.Event()
        other = threading.Thread(target=waiting.wait)
        other.start()
        scan()
        main = len(calls)
        worker = threading.Thread(target=scan)
        worker.start()
        worker.join()
        waiting.set()
        other.join()
        worker = threading.Thread(target=scan)
        worker.start()
        worker.join()
        print(alone, main, len(calls))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    alone, main, total = map(int, done.stdout.split())
    assert (alone, main) == (0, 0)
    # 4 yields between the 5 pieces of the worker's scan beside the waiting thread; the
    # last worker's scan also runs beside the main thread, which waits for it in join().
    assert total == 2 * (1_200_000 // (1 << 18))


def test_a_worker_yields_at_most_once_a_millisecond() -> None:
    program = textwrap.dedent(
        """
        import threading, time
        from budgetware.core import gil
        calls = []
        time.sleep = lambda seconds: calls.append(seconds)
        time.monotonic = lambda: 5.0  # no time passes
        worker = threading.Thread(target=lambda: [gil.give_way() for _ in range(1000)])
        worker.start()
        worker.join()
        print(calls)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[2e-05]"  # a real sleep, long enough for another thread
