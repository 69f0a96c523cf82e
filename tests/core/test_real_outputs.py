"""Real outputs (tests/core/outputs): the lines a model needs to act on are in the preview.

What another tool-output library kept and budgetware dropped (issue 30, items 13 and 14):
the frame that raised an exception, beside the exception line; pytest's ``>`` line beside
its ``E`` line. Each output here is cut to rooms a busy batch gives a result.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetware.finalizer import fit_text

# Measuring, fitting and parsing touch no file: one file API is enough (fs_watch.py).
TOUCHES_NO_FILES = True

OUTPUTS = Path(__file__).parent / "outputs"

NEEDED = {
    "service_py310.log": [
        "ERROR worker job 47 failed",
        '  File "/srv/worker/svc.py", line 7, in fetch',
        '    raise ConnectionError(f"upstream refused job {job}")',
        "ConnectionError: upstream refused job 47",
        "KeyError: 'b'",
        '    raise ValueError("bad config") from exc',
        "ValueError: bad config",
    ],
    "service_py311.log": [
        "ERROR worker job 47 failed",
        '  File "/srv/worker/svc.py", line 7, in fetch',
        '    raise ConnectionError(f"upstream refused job {job}")',
        "ConnectionError: upstream refused job 47",
        "KeyError: 'b'",
        '    raise ValueError("bad config") from exc',
        "ValueError: bad config",
    ],
    "pytest_long.txt": [
        '>       return sum(line["qty"] * line["price"] for line in order["lines"])',
        "E       TypeError: unsupported operand type(s) for +: 'int' and 'str'",
        '>       return json.loads(raw)["order"]',
        "E       KeyError: 'order'",
        "E       assert 2.67 == 2.68",
        "5 failed, 76 passed",
    ],
    "pytest_native.txt": [
        '    return sum(line["qty"] * line["price"] for line in order["lines"])',
        "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
        '    return json.loads(raw)["order"]',
        "KeyError: 'order'",
        "AssertionError: assert 2.67 == 2.68",
        "5 failed, 76 passed",
    ],
}


@pytest.mark.parametrize("room", [2_500, 4_000])
@pytest.mark.parametrize("name", list(NEEDED))
def test_the_lines_a_model_needs_are_kept(name: str, room: int) -> None:
    text = (OUTPUTS / name).read_text()
    preview = fit_text(text, room)
    assert len(preview) <= room
    missing = [line for line in NEEDED[name] if line not in preview]
    assert missing == []


def test_every_failed_result_of_a_json_report_is_kept() -> None:
    text = (OUTPUTS / "pytest_results.json").read_text()
    failed = [r["nodeid"] for r in json.loads(text) if r["outcome"] == "failed"]
    preview = fit_text(text, 8_000)
    shown = json.loads(preview.split("\n", 1)[1])
    assert [r["nodeid"] for r in shown if isinstance(r, dict) and r["outcome"] == "failed"] == (
        failed
    )
