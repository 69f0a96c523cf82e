"""One scripted agent session (``budgetware run --report`` of an agent program against the
fake provider), shared by the tests of ``budgetware report`` and ``budgetware inspect``:
mark them ``xdist_group("agent_session")`` so that one worker runs it once."""

from __future__ import annotations

import pytest
from testing.agent_session import TURNS, AgentSession, run_session

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
