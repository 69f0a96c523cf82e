"""Projection benchmark: ACP tool_call_update projection as a ratio to serializing it.

Target (issue 5): projecting costs at most 2x serializing the same update with the fastest
JSON library available (orjson, else the standard library), and the work does not grow
with the input beyond one scan: a 10 MB rawOutput should cost about what a 1 MB one does,
because only the kept head and tail are measured.

Run: ``.venv/bin/python benchmarks/bench_projection.py``
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import best_time, print_table

from budgetware.display.projection import project_acp_update, project_headless_message

try:
    import orjson

    def serialize(value: Any) -> bytes:
        out: bytes = orjson.dumps(value)
        return out

    SERIALIZER = "orjson"
except ImportError:  # pragma: no cover

    def serialize(value: Any) -> bytes:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()

    SERIALIZER = "json (stdlib)"

MB = 1_000_000
LINE = "2026-11-30T10:20:37Z INFO worker-3 processed batch 8812 in 41 ms; queue depth 17\n"


def text(size: int, unit: str = LINE) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def raw_output_update(size: int, unit: str = LINE) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call-1",
        "status": "completed",
        "rawOutput": text(size, unit),
    }


def blocks_update(n: int, size: int) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call-1",
        "content": [
            {"type": "content", "content": {"type": "text", "text": f"{i}:" + text(size)}}
            for i in range(n)
        ],
    }


def combined_update(size: int) -> dict[str, Any]:
    s = text(size)
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call-1",
        "content": [{"type": "content", "content": {"type": "text", "text": s}}],
        "rawOutput": s,
    }


def headless_message(size: int) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": text(size)}],
        },
    }


CASES: list[tuple[str, dict[str, Any], Callable[[dict[str, Any]], dict[str, Any]]]] = [
    ("rawOutput 1 MB ASCII", raw_output_update(MB), project_acp_update),
    ("rawOutput 10 MB ASCII", raw_output_update(10 * MB), project_acp_update),
    ("rawOutput 1 MB CJK", raw_output_update(MB // 3, "汉字测试输出\n"), project_acp_update),
    ("rawOutput 10 MB CJK", raw_output_update(10 * MB // 3, "汉字测试输出\n"), project_acp_update),
    ("600 blocks x 40 KB", blocks_update(600, 40_000), project_acp_update),
    ("content + equal raw 1 MB", combined_update(MB), project_acp_update),
    ("headless tool_result 10 MB", headless_message(10 * MB), project_headless_message),
]


def main() -> None:
    rows: list[tuple[str, ...]] = []
    for name, value, project in CASES:
        t_project = best_time(lambda v=value, p=project: p(v), repeat=7)
        t_serialize = best_time(lambda v=value: serialize(v), repeat=7)
        rows.append(
            (
                name,
                f"{t_project * 1e3:.2f}",
                f"{t_serialize * 1e3:.2f}",
                f"{t_project / t_serialize:.3f}x",
                "ok" if t_project <= 2 * t_serialize else "OVER",
            )
        )
    print_table(
        f"project vs serialize ({SERIALIZER}); target <= 2x",
        rows,
        ("case", "project ms", "serialize ms", "ratio", "target"),
    )


if __name__ == "__main__":
    main()
