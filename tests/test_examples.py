"""Every script in examples/ runs offline and shows what it promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# What each example must print: the behavior it demonstrates, not just "it ran".
EXPECTED = {
    "core_finalize_batch.py": ["git_status: 32 -> 32 chars, unchanged", "batch total: 4,000"],
    "instrument_openai.py": ["what went on the wire:   10,000 chars", "Full output: "],
    "mcp_stdio_big_result.py": [
        "the server returned 2,450,000 chars; the agent received 100,000",
        "full output kept in",
    ],
    "per_request_budget.py": [
        "instrument(config): 50,000 chars",
        "budget() block:     5,000 chars",
        "request header:     2,000 chars",
        "disabled by header: 680,000 chars",
    ],
}


def test_every_example_is_covered() -> None:
    assert {p.name for p in EXAMPLES.glob("*.py")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_and_shows_its_point(name: str, tmp_path: Path) -> None:
    # The examples' own temporary directories go with the test's (they never remove them).
    env = {**os.environ, "BUDGETWARE_ARTIFACT_DIR": str(tmp_path), "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    for line in EXPECTED[name]:
        assert line in done.stdout
