"""Core benchmark: the JSON byte ruler and fitting, against baselines in the same run.

json_string_bytes against len(orjson.dumps(s)) (the standard library's json.dumps where
orjson refuses the string), and its time; fitting a 10 MB string into a small allocation
against measuring the whole string once. What a JSON preview of a 10 MB document costs a
request is in bench_targets.py.

Run: scripts/bench benchmarks/bench_core.py
"""

from __future__ import annotations

import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import print_table

from budgetware.finalizer import fit_text, json_string_bytes

try:
    import orjson
except ImportError:  # pragma: no cover
    orjson = None  # type: ignore[assignment]

MB = 1024 * 1024


def sample(kind: str, size: int) -> str:
    unit = {
        "ascii": "The quick brown fox jumps over the lazy dog 0123456789. ",
        "cjk": "汉字编码测试的文本内容。",
        "emoji": "😀🚀✨🎉",
        "escapes": 'line\t"quoted"\\path\n\x01\r',
        "surrogates": "text \ud800 more \udc00 end ",
    }[kind]
    # Sizes are in UTF-8 bytes of the text, roughly.
    reps = size // len(unit.encode("utf-8", "surrogatepass")) + 1
    return unit * reps


def fresh(s: str) -> str:
    """An equal string in a new object: CPython caches a str's UTF-8 form on first use,
    so timing the same object twice would time a memcpy, not the encoding."""
    return (s + ".")[:-1]


def time_fresh(fn: Callable[[str], object], s: str, repeat: int = 7) -> float:
    """Best time of ``fn`` over ``repeat`` fresh copies of ``s`` (copies made untimed)."""
    best = float("inf")
    for _ in range(repeat):
        copy = fresh(s)
        start = time.perf_counter()
        fn(copy)
        best = min(best, time.perf_counter() - start)
        del copy
    return best


def peak_memory(fn: Callable[[str], object], s: str) -> int:
    """Peak bytes allocated while ``fn`` measures a fresh copy of ``s`` (made untraced)."""
    copy = fresh(s)
    tracemalloc.start()
    try:
        fn(copy)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def baseline(s: str) -> tuple[str, float]:
    if orjson is not None:
        try:
            orjson.dumps(s)
            return "orjson", time_fresh(lambda c: len(orjson.dumps(c)), s)
        except TypeError:
            pass
    return "json.dumps", time_fresh(lambda c: len(json.dumps(c, ensure_ascii=False)), s)


def main() -> None:
    rows = []
    fit_rows = []
    for size_name, size in (("1 MB", MB), ("10 MB", 10 * MB)):
        for kind in ("ascii", "cjk", "emoji", "escapes", "surrogates"):
            s = sample(kind, size)
            base_name, base = baseline(s)
            ruler = time_fresh(json_string_bytes, s)
            rows.append(
                (kind, size_name, base_name, f"{ruler / base:.2f}x", f"{ruler * 1e3:.1f} ms")
            )
            fit = time_fresh(lambda c: fit_text(c, 2_000, refs=["/a/ref.txt"]), s)
            fit_rows.append((kind, size_name, f"{fit / ruler:.4f}x", f"{fit * 1e6:.1f} us"))
    print_table(
        "json_string_bytes vs a C serializer on the same string",
        rows,
        ("text", "size", "baseline", "ruler / baseline", "ruler"),
    )
    mem_rows = []
    for kind in ("ascii", "cjk", "emoji"):
        s = sample(kind, 10 * MB)
        size = len(s.encode("utf-8"))
        ruler_peak = peak_memory(json_string_bytes, s)
        base_peak = peak_memory(lambda c: len(orjson.dumps(c)), s)
        mem_rows.append((kind, f"{ruler_peak / size:.2f}x", f"{base_peak / size:.2f}x"))
    print_table(
        "peak memory while measuring a 10 MB string, as a multiple of its UTF-8 size",
        mem_rows,
        ("text", "json_string_bytes", "len(orjson.dumps(s))"),
    )
    print_table(
        "fit_text into 2,000 chars vs measuring the whole string once (target < 1x)",
        fit_rows,
        ("text", "size", "fit / ruler", "fit time"),
    )


if __name__ == "__main__":
    main()
