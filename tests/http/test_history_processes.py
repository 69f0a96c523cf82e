"""The masked set is a function of the request alone: two agent processes (and one that
restarts) taking turns in one conversation send what a single process would, byte for byte,
and each request extends the one before it except at a step."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from http_helpers import tool_result_texts

from budgetware.core.notice import is_masked
from budgetware.testing import FakeProvider

pytestmark = [pytest.mark.sdk, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
TURNS = 16


class Agent:
    """``history_agent.py`` in a subprocess: ``send(n)`` returns once turn n was sent."""

    def __init__(self, url: str, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-W", "error", str(HERE / "history_agent.py"), url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )

    def send(self, n: int) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(f"{n}\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline() == "sent\n"

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        assert self.process.wait(timeout=60) == 0
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETWARE_")}
    environ.update(
        PYTHONPATH=os.pathsep.join([str(HERE.parent), environ.get("PYTHONPATH", "")]),
        BUDGETWARE_ARTIFACT_DIR=str(tmp_path / "artifacts"),
        BUDGETWARE_RAISE_ERRORS="1",
        BUDGETWARE_TELEMETRY="0",
        BUDGETWARE_ARTIFACT_SWEEP_INTERVAL="0",
        BUDGETWARE_BATCH_BUDGET="8000",
        BUDGETWARE_HISTORY_BUDGET="30000",
    )
    return environ


def text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else content[0]["text"]


def messages(provider: FakeProvider) -> list[list[dict[str, Any]]]:
    return [json.loads(r.body)["messages"] for r in provider.requests if r.api == "openai_chat"]


def _sent_alone(provider: FakeProvider, env: dict[str, str]) -> list[bytes]:
    """What ``history_agent.py`` sends for turns 1 to TURNS, sent from this process."""
    import httpx
    from history_agent import send

    from budgetware.core.config import BudgetConfig
    from budgetware.http.instrument import instrument, uninstrument

    settings = {
        name[len("BUDGETWARE_") :].lower(): value
        for name, value in env.items()
        if name.startswith("BUDGETWARE_")
    }
    instrument(config=BudgetConfig(**settings))
    try:
        with httpx.Client(timeout=60) as client:
            for n in range(1, TURNS + 1):
                send(client, provider.url, n)
    finally:
        uninstrument()
    return [r.body for r in provider.requests]


def test_agents_in_two_processes_and_a_restart_send_the_same_bytes(
    fake_provider: FakeProvider, env: dict[str, str]
) -> None:
    # One process (this one, with the agents' settings) sends the whole conversation: the
    # reference.
    alone = _sent_alone(fake_provider, env)
    fake_provider.clear()

    # Two processes take turns; the first restarts half way.
    agents = [Agent(fake_provider.url, env), Agent(fake_provider.url, env)]
    for n in range(1, TURNS + 1):
        if n == TURNS // 2:
            agents[0].stop()
            agents[0] = Agent(fake_provider.url, env)
        agents[n % 2].send(n)
    for agent in agents:
        agent.stop()
    assert [r.body for r in fake_provider.requests] == alone

    steps = 0
    sent = messages(fake_provider)
    for before, after in itertools.pairwise(sent):
        if after[: len(before)] == before:
            continue  # the request before, extended
        # A step: the only change is results of the request before that became stubs.
        steps += 1
        for old, new in zip(before, after):
            if old != new:
                assert old["role"] == new["role"] == "tool"
                assert is_masked((text(new),))
                assert not is_masked((text(old),))
    texts = tool_result_texts("openai_chat", {"messages": sent[-1]})
    assert sum(map(len, texts)) <= 30_000
    assert 2 <= steps < TURNS // 2
