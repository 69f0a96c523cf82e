"""OpenTelemetry's own runner turns budgetware on: ``opentelemetry-instrument python agent.py``
loads ``BudgetwareInstrumentor`` from its entry point, and the agent's requests are bounded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.instrumentation")
pytestmark = pytest.mark.sdk

# The agent sends its turn with httpx (what the runner starts is the same whatever client the
# agent uses; the openai SDK's import costs half a second of CPU a run).
AGENT = """
import json
import httpx
from budgetware.testing import FakeProvider

with FakeProvider() as fake:
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
             for i in range(3)]
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": calls}]
    messages += [{"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} " + "x" * 100_000}
                 for i in range(3)]
    httpx.post(fake.url + "/v1/chat/completions", json={"model": "m", "messages": messages},
               headers={"authorization": "Bearer k"}, timeout=60).raise_for_status()
    sent = json.loads(fake.requests[-1].body)["messages"]
    print(sum(len(m["content"]) for m in sent if m["role"] == "tool"))
"""


def run_agent(tmp_path: Path, **variables: str) -> int:
    """The agent under ``opentelemetry-instrument``: the tool text the provider received."""
    (tmp_path / "agent.py").write_text(AGENT)
    runner = Path(sys.executable).with_name("opentelemetry-instrument")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BUDGETWARE_", "OTEL_"))}
    env.update(
        BUDGETWARE_BATCH_BUDGET="20000",
        BUDGETWARE_ARTIFACT_DIR=str(tmp_path / "artifacts"),
        OTEL_TRACES_EXPORTER="none",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        **variables,
    )
    done = subprocess.run(
        [str(runner), sys.executable, "agent.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().splitlines()[-1])


def test_opentelemetry_instrument_bounds_with_no_other_step(tmp_path: Path) -> None:
    assert run_agent(tmp_path) <= 20_000
    assert len(list((tmp_path / "artifacts").glob("*.txt"))) == 3
    # The runner's own switch turns it off, as for any instrumentation.
    assert run_agent(tmp_path, OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="budgetware") == 300_006


def test_the_instrumentor_is_instrument_and_uninstrument() -> None:
    from budgetware.core.config import BudgetConfig
    from budgetware.http.instrument import is_instrumented
    from budgetware.integrations.opentelemetry import BudgetwareInstrumentor

    instrumentor = BudgetwareInstrumentor()
    assert not is_instrumented()
    instrumentor.instrument(config=BudgetConfig(batch_budget=5_000))
    try:
        assert is_instrumented()
        assert instrumentor.instrumentation_dependencies() == ()
    finally:
        instrumentor.uninstrument()
    assert not is_instrumented()
