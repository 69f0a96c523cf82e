"""Core benchmark: the JSON byte ruler and fitting, as ratios to baselines in the same run.

Targets (issue 2): json_string_bytes <= 1.5x len(orjson.dumps(s)) (the standard library's
json.dumps where orjson refuses the string); fitting a 10 MB string into a small allocation
costs less than measuring the whole string once.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import best_time, print_table

from budgetware import fit_text, json_string_bytes
from budgetware._measure import _json_string_bytes_slow

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


def baseline(s: str) -> tuple[str, float]:
    if orjson is not None:
        try:
            orjson.dumps(s)
            return "orjson", best_time(lambda: len(orjson.dumps(s)))
        except TypeError:
            pass
    return "json.dumps", best_time(lambda: len(json.dumps(s, ensure_ascii=False)))


def main() -> None:
    rows = []
    fit_rows = []
    for size_name, size in (("1 MB", MB), ("10 MB", 10 * MB)):
        for kind in ("ascii", "cjk", "emoji", "escapes", "surrogates"):
            s = sample(kind, size)
            base_name, base = baseline(s)
            ruler = best_time(lambda s=s: json_string_bytes(s))
            slow = best_time(lambda s=s: _json_string_bytes_slow(s), repeat=3)
            rows.append(
                (kind, size_name, base_name, f"{ruler / base:.2f}x", f"{slow / base:.2f}x")
            )
            fit = best_time(lambda s=s: fit_text(s, 2_000, refs=["/a/ref.txt"]), number=20)
            fit_rows.append((kind, size_name, f"{fit / ruler:.4f}x", f"{fit * 1e6:.1f} us"))
    print_table(
        "json_string_bytes vs a C serializer on the same string (target <= 1.5x)",
        rows,
        ("text", "size", "baseline", "ruler / baseline", "no-orjson fallback / baseline"),
    )
    print_table(
        "fit_text into 2,000 chars vs measuring the whole string once (target < 1x)",
        fit_rows,
        ("text", "size", "fit / ruler", "fit time"),
    )


if __name__ == "__main__":
    main()
