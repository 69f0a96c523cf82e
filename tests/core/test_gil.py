"""give_way: the GIL handed to a waiting thread between pieces of long work, and only then."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_program_with_one_thread_does_not_yield() -> None:
    # Nothing can take the GIL: a scan in a single-threaded program makes no system call
    # to give it away (run in a fresh interpreter: pytest's own threads are not there).
    program = textwrap.dedent(
        """
        import threading, time
        from budgetware.core import salient
        calls = []
        time.sleep = lambda seconds: calls.append(seconds)
        pattern = salient.compile_salient()
        text = "x\\n" * 600_000
        salient.salient_spans(text, 0, len(text), pattern)
        alone = len(calls)
        threading.Thread(target=lambda: None).start()  # ends at once: alone again
        salient.salient_spans(text, 0, len(text), pattern)
        waiting = threading.Event()
        other = threading.Thread(target=waiting.wait)
        other.start()
        salient.salient_spans(text, 0, len(text), pattern)
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
