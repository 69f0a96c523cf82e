"""Every script in examples/ runs offline and shows what it promises."""

from __future__ import annotations

import gc
import runpy
import sys
import tempfile
import warnings
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
def test_example_runs_and_shows_its_point(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # Run as ``python examples/<name>`` runs it (``__main__``, its path in sys.argv and
    # first on sys.path, this environment), in this process: an interpreter of its own
    # and its SDK's import cost up to 2 s of CPU an example, and what it prints is the
    # same. The MCP example still starts its server over stdio. Its own temporary
    # directories go with the test's (the examples never remove them).
    path = EXAMPLES / name
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(sys, "argv", [str(path)])
    monkeypatch.syspath_prepend(str(EXAMPLES))
    runpy.run_path(str(path), run_name="__main__")
    out = capfd.readouterr().out
    # What a script leaves open (an SDK client it never closes) goes when its interpreter
    # exits; here, before the next test, without a warning about it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    for line in EXPECTED[name]:
        assert line in out
