"""MCP producer boundary: what bounding a tool result costs, beside serializing it once.

Run: .venv/bin/python benchmarks/bench_mcp.py
The baseline is what any client does with a result anyway: one orjson serialization (the
SSE event it arrives in). Bounding a large result measures, cuts, hashes and persists it
once; a small result should cost next to nothing. Where the work runs (off an event loop)
and how long it may stall one is in bench_targets.py.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
from _harness import best_time, print_table

from budgetware.mcp.bound import DEFAULT_RESULT_BUDGET, bound_tool_result
from budgetware.store.local import LocalArtifactStore


def result_of(text: str, *, structured: bool) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": False}
    if structured:
        # Servers often repeat a string result in structuredContent.
        result["structuredContent"] = {"result": text}
    return result


def main() -> None:
    directory = Path(tempfile.mkdtemp(prefix="budgetware-bench-mcp-"))
    rows = []
    try:
        line = "2026-11-30T10:00:00Z INFO request handled path=/api/items status=200\n"
        cases = [
            ("small result, 2 KB", (line * 30)[:2_000], False),
            ("2 MB text", (line * 30_000)[:2_000_000], False),
            ("2 MB text + same structuredContent", (line * 30_000)[:2_000_000], True),
            ("10 MB text", (line * 150_000)[:10_000_000], False),
        ]
        for name, text, structured in cases:
            result = result_of(text, structured=structured)
            base = best_time(lambda r=result: orjson.dumps(r))
            cold_store = LocalArtifactStore(directory / name.replace(" ", "_"))
            cold = best_time(
                lambda r=result, s=cold_store: bound_tool_result(
                    r, budget=DEFAULT_RESULT_BUDGET, store=s
                ),
                repeat=1,
            )
            warm = best_time(
                lambda r=result, s=cold_store: bound_tool_result(
                    r, budget=DEFAULT_RESULT_BUDGET, store=s
                )
            )
            rows.append(
                (name, f"{base * 1e3:.3f} ms", f"{warm * 1e3:.3f} ms", f"{cold * 1e3:.1f} ms")
            )
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print_table(
        f"bound_tool_result (budget {DEFAULT_RESULT_BUDGET:,} chars) beside orjson.dumps(result)",
        rows,
        ("case", "serialize", "warm (artifact stored)", "cold (first write)"),
    )


if __name__ == "__main__":
    main()
