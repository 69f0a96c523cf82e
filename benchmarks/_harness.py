"""Tiny timing harness shared by the benchmarks: best-of-N wall time, ratios, a table."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable


def best_time(fn: Callable[[], object], *, repeat: int = 7, number: int = 1) -> float:
    """Best wall time of ``number`` calls, over ``repeat`` rounds (noise only adds time)."""
    best = float("inf")
    gc.collect()
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def print_table(title: str, rows: list[tuple[str, ...]], header: tuple[str, ...]) -> None:
    """Print an aligned plain-text table."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n## {title}\n")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))
