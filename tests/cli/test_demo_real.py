"""``budgetware demo --real``: the same agent against the provider the environment names, with
its key (here a local fake provider following the demo's script, on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

from budgetware.cli.demo import FINAL_TEXT, SCRIPT
from budgetware.testing import FakeProvider, scripted_tool_calls


def test_demo_real_talks_to_the_provider_the_environment_names(
    tmp_path: Path, run_demo: Callable[..., CompletedProcess[str]]
) -> None:
    # The Anthropic agent is the offline test's; the variables differ only by their prefix.
    with FakeProvider(reply=scripted_tool_calls(SCRIPT, FINAL_TEXT)) as fake:
        done = run_demo(
            "--real",
            "--artifact-dir",
            str(tmp_path),
            "--budget",
            "20000",
            OPENAI_API_KEY="sk-from-the-env",
            OPENAI_BASE_URL=fake.url + "/v1",
        )
        sent = fake.requests
    assert done.returncode == 0, done.stderr
    assert "a real provider" in done.stdout
    assert done.stdout.count("batch on the wire: 20,000 chars (budget 20,000)") == 3
    assert FINAL_TEXT in done.stdout
    assert len(sent) == 4
    for request in sent:
        assert request.headers["authorization"] == "Bearer sk-from-the-env"
    assert len(list(tmp_path.glob("*.txt"))) == 4
