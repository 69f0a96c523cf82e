"""Core benchmark: the JSON byte ruler and fitting, as ratios to baselines in the same run.

Targets (issue 2): json_string_bytes <= 1.5x len(orjson.dumps(s)) (the standard library's
json.dumps where orjson refuses the string); fitting a 10 MB string into a small allocation
costs less than measuring the whole string once. Issue 17: a JSON-structured preview of a
10 MB JSON output within 3x of one orjson.loads of it, number-dense documents included
(every number written as the document spells it).

Run: scripts/bench benchmarks/bench_core.py (the JSON preview rows alone: .venv/bin/python
benchmarks/bench_core.py --json-only)
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import print_table

from budgetware.core import jsonpreview
from budgetware.core.measure import _json_string_bytes_slow
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


# -- JSON previews (issue 17) ---------------------------------------------------------------


def json_documents() -> dict[str, str]:
    """The JSON outputs previewed: an API-like listing and two number-dense documents."""
    rng = random.Random(1)
    return {
        # The API case: objects of strings and small integers, indented (as bench_preview).
        "typical: 60,000 objects, indented": json.dumps(
            {
                "data": [
                    {"id": i, "name": f"item {i}", "tags": ["a", "b"], "text": "lorem ipsum " * 10}
                    for i in range(60_000)
                ]
            },
            indent=1,
        ),
        # 900,000 numbers as orjson writes them (json.dumps of floats of 4 decimals).
        "number-dense: 90,000 rows x 10 floats": json.dumps(
            {
                "series": [
                    [round(rng.uniform(-1000, 1000), 4) for _ in range(10)] for _ in range(90_000)
                ]
            }
        ),
        # Python's json.dumps of an embedding: 17 significant digits, and Python's own
        # spelling of small values (3.2e-05, where orjson writes 0.000032): about 800 of
        # the 450,000 numbers are spelled otherwise and kept as spelled.
        "number-dense: 450,000 floats from json.dumps": json.dumps(
            {"embedding": [rng.gauss(0, 0.05) for _ in range(450_000)]}
        ),
    }


def json_previews(rounds: int = 9) -> None:
    """fit_text of each document into 5,000 against one orjson.loads of it, interleaved in
    every round (and the literal parse alone: every number read as an object, as before)."""
    rows = []
    for name, doc in json_documents().items():
        assert fit_text(doc, 5_000).split("\n", 1)[0].startswith("[")

        def literal(doc: str = doc) -> object:
            saved = getattr(jsonpreview, "loads_spelled", None)  # (None: the code before)
            jsonpreview.loads_spelled = lambda text: None  # type: ignore[assignment]
            try:
                return fit_text(doc, 5_000)
            finally:
                jsonpreview.loads_spelled = saved  # type: ignore[assignment]

        cases: dict[str, Callable[[], object]] = {
            "loads": lambda doc=doc: orjson.loads(doc),  # type: ignore[misc]
            "preview": lambda doc=doc: fit_text(doc, 5_000),  # type: ignore[misc]
            "literal": literal,
        }
        times: dict[str, list[float]] = {case: [] for case in cases}
        for _ in range(rounds):
            for case, fn in cases.items():
                start = time.perf_counter()
                fn()
                times[case].append(time.perf_counter() - start)

        rows.append(
            (
                f"{name}, {len(doc) / 1e6:.1f} MB",
                f"{statistics.median(times['loads']) * 1e3:.0f} ms",
                _ratio(times, "preview"),
                _ratio(times, "literal"),
            )
        )
    print_table(
        "JSON preview into 5,000 vs one orjson.loads of the document (target <= 3x; "
        f"{rounds} interleaved rounds: median (range) of the per-round ratios)",
        rows,
        ("document", "orjson.loads", "preview / loads", "literal parse only / loads"),
    )


def _ratio(times: dict[str, list[float]], case: str) -> str:
    per_round = sorted(t / b for t, b in zip(times[case], times["loads"]))
    median = statistics.median(per_round)
    return f"{median:.2f}x ({per_round[0]:.2f}x to {per_round[-1]:.2f}x)"


def main() -> None:
    if orjson is not None:
        json_previews()
    if "--json-only" in sys.argv:
        return
    rows = []
    fit_rows = []
    for size_name, size in (("1 MB", MB), ("10 MB", 10 * MB)):
        for kind in ("ascii", "cjk", "emoji", "escapes", "surrogates"):
            s = sample(kind, size)
            base_name, base = baseline(s)
            ruler = time_fresh(json_string_bytes, s)
            slow = time_fresh(_json_string_bytes_slow, s, repeat=3)
            rows.append(
                (kind, size_name, base_name, f"{ruler / base:.2f}x", f"{slow / base:.2f}x")
            )
            fit = time_fresh(lambda c: fit_text(c, 2_000, refs=["/a/ref.txt"]), s)
            fit_rows.append((kind, size_name, f"{fit / ruler:.4f}x", f"{fit * 1e6:.1f} us"))
    print_table(
        "json_string_bytes vs a C serializer on the same string (target <= 1.5x)",
        rows,
        ("text", "size", "baseline", "ruler / baseline", "no-orjson fallback / baseline"),
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
