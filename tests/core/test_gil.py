"""give_way: the GIL handed to a waiting thread between pieces of long work, and only then."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time


def test_an_event_loop_thread_ticks_during_a_scan_in_a_worker() -> None:
    # What give_way is for: a 10 MB scan in a worker thread (asyncio.to_thread) must not
    # hold the loop for the switch interval at every piece.
    from budgetware.core import salient

    pattern = salient.compile_salient()
    assert pattern is not None
    text = "".join(f"2024-05-01 INFO request {n} handled\n" for n in range(900_000))

    async def run() -> tuple[float, float]:
        worst = 0.0
        done = False

        async def ticker() -> None:
            nonlocal worst
            while not done:
                start = time.perf_counter()
                await asyncio.sleep(0)
                worst = max(worst, time.perf_counter() - start)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        start = time.perf_counter()
        await asyncio.to_thread(salient._spans, text, 0, len(text), pattern, None)
        took = time.perf_counter() - start
        done = True
        await task
        return worst, took

    # At this switch interval the interpreter never takes the GIL from the worker: without
    # give_way the loop would wait for the whole scan (about 120 pieces, 20 ms or more),
    # with it about a piece.
    sys.setswitchinterval(1.0)
    try:
        worst, took = asyncio.run(run())
    finally:
        sys.setswitchinterval(0.005)
    assert worst < took / 4, (worst, took)


def test_a_program_with_one_thread_does_not_yield() -> None:
    # Nothing can take the GIL: a scan in a single-threaded program makes no system call
    # to give it away (run in a fresh interpreter: pytest's own threads are not there).
    program = textwrap.dedent(
        """
        import os, threading
        from budgetware.core import gil, salient
        calls = []
        gil._YIELD = lambda: calls.append(1)
        pattern = salient.compile_salient()
        text = "x\\n" * 600_000
        salient._spans(text, 0, len(text), pattern, None)
        alone = len(calls)
        threading.Thread(target=lambda: None).start()  # ends at once: alone again
        salient._spans(text, 0, len(text), pattern, None)
        waiting = threading.Event()
        other = threading.Thread(target=waiting.wait)
        other.start()
        salient._spans(text, 0, len(text), pattern, None)
        waiting.set()
        other.join()
        print(alone, len(calls))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    alone, total = map(int, done.stdout.split())
    assert alone == 0
    assert total == 1_200_000 // (1 << 18)  # 4 yields between the 5 pieces of one scan
