"""One scripted agent session (``budgetware run --report`` of an agent program against the
fake provider), shared by the tests of ``budgetware report`` and ``budgetware inspect``:
mark them ``xdist_group("agent_session")`` so that one worker runs it once. And
``budgetware demo`` run in the test's process."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

import pytest
from testing.agent_session import TURNS, AgentSession, run_session

from budgetware.cli.main import main as cli
from budgetware.testing import FakeProvider, scripted_tool_calls


@pytest.fixture(scope="session")
def agent_session(tmp_path_factory: pytest.TempPathFactory) -> AgentSession:
    tmp = tmp_path_factory.mktemp("agent-session")
    with FakeProvider(scripted_tool_calls(TURNS)) as fake:
        done = run_session(fake.url, tmp, "--report")
        bodies = [request.body for request in fake.requests]
        usages = [request.usage for request in fake.requests]
    assert done.returncode == 0, done.stderr
    (path,) = (tmp / "sessions").iterdir()
    cache = [(u.input_tokens, u.cache_read_tokens) for u in usages if u is not None]
    return AgentSession(done, tmp / "sessions", path, bodies, cache)


@pytest.fixture
def run_demo(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run_demo(*args, **variables)``: ``budgetware demo args`` by the CLI's main() in this
    process, in this environment without its OPENAI_*, ANTHROPIC_* and BUDGETWARE_*
    variables but with ``variables``. A process of its own cost an interpreter start and
    the SDK's import (up to 2 s of CPU a run); the demo's client, fake provider and
    artifacts are its own either way."""

    def run(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
        for name in list(os.environ):
            if name.startswith(("OPENAI_", "ANTHROPIC_", "BUDGETWARE_")):
                monkeypatch.delenv(name)
        # OpenTelemetry stays off, as the suite has it: the demo reads the provider's usage
        # (its prompt cache lines) without a listener of its own.
        monkeypatch.setenv("BUDGETWARE_TELEMETRY", "0")
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        capsys.readouterr()
        try:
            code = cli(["demo", *args])
        except SystemExit as exit_:  # argparse's --help and usage errors
            code = exit_.code if isinstance(exit_.code, int) else 1
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["budgetware", "demo", *args], code, out, err)

    return run
