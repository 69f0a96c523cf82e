"""A reference budgetware printed in this process reads back, whatever entry point set up
the store that holds it: ``instrument(config=)``, ``finalize_body(config=)``, the pytest
plugin's ``budgetware_capture`` (issue 30, item 1). Before, the reader looked only in the
store of the environment and blamed the model: "not a reference to an artifact of this
store"."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from budgetware import ArtifactNotFound, BudgetConfig, instrument, read_artifact
from budgetware.retrieval.grep import grep_artifact
from budgetware.testing import FakeProvider
from budgetware.tools import run_read_tool_output
from budgetware.wire.body import finalize_body

URL = "https://api.openai.com/v1/chat/completions"
OUTPUT = "".join(f"line {i}: PASSED\n" for i in range(3000)) + "line 3000: FAILED here\n"


def chat(output: str) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
    return {
        "model": "m",
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": output},
        ],
    }


def printed_reference(sent: bytes) -> str:
    (tool,) = [m for m in json.loads(sent)["messages"] if m.get("role") == "tool"]
    found = re.search(r"Full output: (\S+\.txt)", tool["content"])
    assert found is not None, tool["content"]
    return found[1]


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environment names one store; the entry point is given another."""
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", str(tmp_path / "environment"))
    return tmp_path / "given"


def reads_back(ref: str) -> None:
    assert read_artifact(ref) == OUTPUT[:20_000]
    assert read_artifact(ref, offset=len(OUTPUT) - 10) == OUTPUT[-10:]
    (match,) = grep_artifact(ref, "FAILED")
    assert match.line_number == 3001
    answer = run_read_tool_output({"ref": ref, "pattern": "FAILED"})
    assert answer.startswith("1 match"), answer
    # The bare SHA-256 of what it printed names it too.
    bare = Path(ref).name[:64]
    assert read_artifact(bare, limit=5) == OUTPUT[:5]


def test_a_reference_from_finalize_body_with_a_config_reads_back(elsewhere: Path) -> None:
    config = BudgetConfig(artifact_dir=elsewhere, batch_budget=4000)
    ref = printed_reference(finalize_body(URL, json.dumps(chat(OUTPUT)).encode(), config=config))
    assert ref.startswith(str(elsewhere))
    reads_back(ref)


def test_a_reference_from_instrument_with_a_config_reads_back(
    elsewhere: Path, fake_provider: FakeProvider
) -> None:
    config = BudgetConfig(artifact_dir=elsewhere, batch_budget=4000)
    with instrument(config=config), httpx.Client() as client:
        client.post(f"{fake_provider.url}/v1/chat/completions", json=chat(OUTPUT))
    ref = printed_reference(fake_provider.last.body)
    assert ref.startswith(str(elsewhere))
    reads_back(ref)


def test_a_reference_from_budgetware_capture_reads_back(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_provider: FakeProvider,
) -> None:
    # As in a user's suite: no artifact setting, so the capture keeps artifacts in a
    # directory of the test's own; the default directory (read by default) is elsewhere.
    monkeypatch.delenv("BUDGETWARE_ARTIFACT_DIR")
    monkeypatch.delenv("BUDGETWARE_ARTIFACT_STORE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    request.node.add_marker(pytest.mark.budgetware(batch_budget=4000))
    capture = request.getfixturevalue("budgetware_capture")
    with httpx.Client() as client:
        client.post(f"{fake_provider.url}/v1/chat/completions", json=chat(OUTPUT))
    assert capture.results_cut == 1
    ref = printed_reference(fake_provider.last.body)
    assert ref.startswith(str(tmp_path / "budgetware-artifacts"))
    reads_back(ref)


def test_a_store_this_process_never_named_is_still_refused(tmp_path: Path) -> None:
    # Only the stores that printed a reference here are searched: a directory that merely
    # looks like a store stays outside.
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    name = "a" * 64 + ".txt"
    (other / name).write_text("x")
    with pytest.raises(ArtifactNotFound, match="not a reference to an artifact of this store"):
        read_artifact(str(other / name))
