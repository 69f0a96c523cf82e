"""How much finalize_body costs, as ratios to parsing (and serializing) the same body once.

Run: .venv/bin/python benchmarks/bench_body.py
Every figure is measured against a baseline taken in the same run, on the same body:
the fastest parser available (orjson) and, where the body changes, its serializer.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from budgetware.core.config import BudgetConfig
from budgetware.wire.body import finalize_body

URL = "https://api.openai.com/v1/chat/completions"


def _best(fn: Callable[[], object], *, repeat: int = 7, number: int = 1) -> float:
    """Best per-call time in seconds over ``repeat`` runs of ``number`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return min(times)


def _tool_text(size: int, seed: int) -> str:
    # Log-like output: newlines, quotes and a little non-ASCII, as real tool output has.
    line = f'[{seed:04d}] GET /api/items?id=42 -> 200 "ok" size=1.2kB naïve path=/srv/app\n'
    return (line * (size // len(line) + 1))[:size]


def _conversation(turns: list[list[int]]) -> bytes:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful assistant."},
        {"role": "user", "content": "Investigate the failing service and fix it."},
    ]
    for t, sizes in enumerate(turns):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{t}_{i}",
                        "type": "function",
                        "function": {"name": "shell", "arguments": '{"cmd": "ls -la"}'},
                    }
                    for i in range(len(sizes))
                ],
            }
        )
        for i, size in enumerate(sizes):
            messages.append(
                {"role": "tool", "tool_call_id": f"call_{t}_{i}", "content": _tool_text(size, t)}
            )
    value = {"model": "gpt-4o-mini", "messages": messages, "temperature": 0.2}
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


_RSS_CHILD = """
import gc, sys
from budgetware.wire.body import finalize_body
from budgetware.core.config import BudgetConfig

def high_water():
    # VmHWM: this process's peak resident set (ru_maxrss would include the parent's
    # resident set at fork time on Linux).
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise SystemExit("no VmHWM")

with open(sys.argv[1], "rb", buffering=0) as f:
    body = f.readall()
config = BudgetConfig(batch_budget=200_000, artifact_dir=sys.argv[2])
gc.collect()
before = high_water()
out = finalize_body(sys.argv[3], body, config=config)
after = high_water()
assert out is not body
print(after - before)
"""


def _rss_growth(body: bytes, artifacts: Path) -> str:
    """Growth of peak resident memory while a fresh process finalizes ``body`` once."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        f.write(body)
        f.flush()
        out = subprocess.run(
            [sys.executable, "-c", _RSS_CHILD, f.name, str(artifacts), URL],
            capture_output=True,
            text=True,
            check=True,
        )
    growth = int(out.stdout)
    return f"{growth / len(body):.2f}x body size  ({growth / 1e6:.1f} MB, VmHWM)"


def _small_body(*, realistic: bool) -> bytes:
    """A 2 KB request with no tool results: a realistic chat request, or one long string."""
    value: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": "You are a careful assistant."}],
        "temperature": 0.2,
    }
    if realistic:
        for i in range(6):
            role = "user" if i % 2 == 0 else "assistant"
            value["messages"].append({"role": role, "content": f"Message {i}: " + "word " * 30})
        value["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": "search",
                    "description": "Search the docs.",
                    "parameters": {
                        "type": "object",
                        "properties": {"q": {"type": "string"}, "k": {"type": "integer"}},
                        "required": ["q"],
                    },
                },
            }
        ]
    value["messages"].append({"role": "user", "content": ""})
    filler = 2048 - len(json.dumps(value).encode())
    value["messages"][-1]["content"] = "n" * filler
    body = json.dumps(value).encode()
    assert len(body) == 2048
    return body


def main() -> None:
    artifacts = Path(tempfile.mkdtemp(prefix="budgetware-bench-"))
    config = BudgetConfig(batch_budget=200_000, artifact_dir=artifacts)
    figures: dict[str, str] = {}
    try:
        # 1. A 2 KB body with no tool results (the loop's own overhead is not subtracted).
        for realistic, label in ((True, "chat request"), (False, "one long string")):
            small = _small_body(realistic=realistic)
            parse = _best(lambda small=small: orjson.loads(small), number=20_000)
            given = _best(
                lambda small=small: finalize_body(URL, small, config=config), number=20_000
            )
            figures[f"1. 2 KB body, no tool results ({label})"] = (
                f"{given / parse:.3f}x one parse  ({given * 1e9:.0f} ns vs {parse * 1e9:.0f} ns)"
            )
        resolved = _best(lambda: finalize_body(URL, small), number=2_000)
        figures["1b. same, config=None (resolve_config on every call)"] = (
            f"{resolved / parse:.2f}x one parse  ({resolved * 1e6:.1f} us)"
        )

        # 2. 1 MB body, 20 turns, every batch within budget.
        within = _conversation([[25_000, 25_000] for _ in range(20)])
        assert finalize_body(URL, within, config=config) is within
        parse = _best(lambda: orjson.loads(within), number=20)
        cost = _best(lambda: finalize_body(URL, within, config=config), number=20)
        figures[f"2. {len(within) / 1e6:.1f} MB body, 20 turns within budget"] = (
            f"{cost / parse:.2f}x one parse  ({cost * 1e3:.2f} ms vs {parse * 1e3:.2f} ms)"
        )

        # 3. 3 MB body, one batch of 10 x 300 KB results, over a 200,000 budget.
        over = _conversation([[300_000] * 10])
        baseline = _best(lambda: orjson.dumps(orjson.loads(over)), number=5)
        start = time.perf_counter()
        cold_out = finalize_body(URL, over, config=config)
        cold = time.perf_counter() - start
        assert cold_out is not over
        warm = _best(lambda: finalize_body(URL, over, config=config), number=5)
        label = f"3. {len(over) / 1e6:.1f} MB body, 10 x 300 KB over 200,000"
        figures[label + " (warm: artifacts stored)"] = (
            f"{warm / baseline:.2f}x parse+serialize  ({warm * 1e3:.2f} ms vs "
            f"{baseline * 1e3:.2f} ms)"
        )
        figures[label + " (cold: writing artifacts)"] = (
            f"{cold / baseline:.2f}x parse+serialize  ({cold * 1e3:.2f} ms)"
        )

        # 4. Scaling: the shape of (3) at 0.1, 1 and 10 MB, with a 20,000 budget (warm).
        scaled = BudgetConfig(batch_budget=20_000, artifact_dir=artifacts)
        per_mb = []
        for megabytes in (0.1, 1, 10):
            size = int(megabytes * 1_000_000) // 10
            body = _conversation([[size] * 10])
            assert finalize_body(URL, body, config=scaled) is not body
            seconds = _best(lambda body=body: finalize_body(URL, body, config=scaled), repeat=5)
            parse = _best(lambda body=body: orjson.loads(body), repeat=5)
            per_mb.append(
                f"{megabytes:g} MB: {seconds * 1e3 / (len(body) / 1e6):.2f} ms/MB "
                f"({seconds / parse:.2f}x parse)"
            )
        figures["4. time per MB (shape of 3, 20,000 budget, warm)"] = ", ".join(per_mb)

        # 5. Peak extra memory for (3). Resident memory is what a process pays; tracemalloc
        # also counts address space orjson reserves and never touches (about 13x its
        # input), so both are reported, each parser alone for reference.
        figures["5. peak extra resident memory for 3 (warm)"] = _rss_growth(over, artifacts)
        # At 3 MB the interpreter's own freed memory can absorb the work; the same shape at
        # ten times the size shows the growth clearly.
        big = _conversation([[3_000_000] * 10])
        finalize_body(URL, big, config=config)  # store the artifacts: a warm run
        figures["5. same shape, 32 MB body (warm)"] = _rss_growth(big, artifacts)
        del big
        parse_peaks = {}
        for name, parse in (("orjson.loads", orjson.loads), ("json.loads", json.loads)):
            tracemalloc.start()
            parse(over)
            parse_peaks[name] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        tracemalloc.start()
        finalize_body(URL, over, config=config)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        figures["5b. peak traced allocations for 3 (tracemalloc)"] = (
            f"{peak / len(over):.2f}x body; a parse alone: "
            + ", ".join(f"{n} {v / len(over):.2f}x" for n, v in parse_peaks.items())
        )
    finally:
        shutil.rmtree(artifacts, ignore_errors=True)

    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")


if __name__ == "__main__":
    main()
