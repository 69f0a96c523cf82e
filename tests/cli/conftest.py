"""One scripted agent session (``budgetware run --report`` of the real openai SDK against the
fake provider), shared by the tests of ``budgetware report`` and ``budgetware inspect``:
mark them ``xdist_group("agent_session")`` so that one worker runs it once."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from testing.agent_session import TURNS, run_session

from budgetware.testing import FakeProvider, scripted_tool_calls


@dataclass
class AgentSession:
    done: subprocess.CompletedProcess[str]
    root: Path
    """The directory of sessions (``BUDGETWARE_SESSION_LOG``)."""
    path: Path
    """The session's own directory."""
    bodies: list[bytes]
    """What the provider received, request by request."""


@pytest.fixture(scope="session")
def agent_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentSession]:
    tmp = tmp_path_factory.mktemp("agent-session")
    with FakeProvider(scripted_tool_calls(TURNS)) as fake:
        done = run_session(fake.url, tmp, "--report")
        bodies = [request.body for request in fake.requests]
    assert done.returncode == 0, done.stderr
    (path,) = (tmp / "sessions").iterdir()
    return AgentSession(done, tmp / "sessions", path, bodies)
