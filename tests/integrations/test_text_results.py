"""Agents that send tool results as user text: the real smolagents ToolCallingAgent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from smolagents import LiteLLMModel, OpenAIServerModel, ToolCallingAgent, tool

from budgetware.core.config import BudgetConfig, ConfigError, budget
from budgetware.http.instrument import instrument
from budgetware.testing import FakeProvider, Reply
from budgetware.testing.apis import ApiName
from budgetware.wire.body import finalize_body

pytestmark = pytest.mark.sdk

OUTPUT = "\n".join(f"log line {i}: " + "build step ok " * 3 for i in range(10_000))  # ~480 KB
TASK = "Find why the build fails. " + "Context: " + "c" * 30_000  # a long user message


@tool
def read_build_log(name: str) -> str:
    """Read a build log.

    Args:
        name: which log to read.
    """
    return OUTPUT


def _observations(body: dict[str, Any]) -> int:
    count = 0
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        texts = [content] if isinstance(content, str) else [p.get("text", "") for p in content]
        count += sum(
            1 for text in texts if isinstance(text, str) and text.startswith("Observation:")
        )
    return count


def policy(api: ApiName, body: dict[str, Any] | None) -> Reply:
    """Read the log once, then give the final answer (smolagents' final_answer tool)."""
    done = _observations(body or {})
    if done == 0:
        return Reply.tools([("call_0", "read_build_log", {"name": "ci"})])
    return Reply.tools([(f"call_{done}", "final_answer", {"answer": "fixed"})])


def _model(kind: str, url: str) -> Any:
    if kind == "openai":
        return OpenAIServerModel(model_id="m", api_base=url + "/v1", api_key="k")
    return LiteLLMModel(model_id="openai/m", api_base=url + "/v1", api_key="k")


def _run(kind: str, provider: FakeProvider) -> str:
    model = _model(kind, provider.url)
    agent = ToolCallingAgent(tools=[read_build_log], model=model, max_steps=4, verbosity_level=0)
    try:
        return str(agent.run(TASK))
    finally:
        client = getattr(model, "client", None)
        if client is not None and hasattr(client, "close"):
            client.close()


def _user_texts(body: dict[str, Any]) -> list[str]:
    texts = []
    for message in body["messages"]:
        if message.get("role") == "user":
            content = message["content"]
            texts.append(content if isinstance(content, str) else content[0]["text"])
    return texts


@pytest.mark.parametrize("kind", ["openai", "litellm"])
def test_observations_are_bounded_one_batch_each_and_nothing_else(
    kind: str, tmp_path: Path
) -> None:
    config = BudgetConfig(batch_budget=20_000, text_results=["smolagents"], artifact_dir=tmp_path)
    with FakeProvider(policy) as provider, instrument(config=config):
        assert _run(kind, provider) == "fixed"
    second = json.loads(provider.requests[1].body)
    task, observation = _user_texts(second)
    assert TASK in task  # the task (a user message, 30,000+ chars) is left whole
    assert observation.startswith("Observation:\n[Tool output truncated: ")
    assert len(observation) <= len("Observation:\n") + 20_000
    assert "log line 0:" in observation
    assert "log line 9999:" in observation
    (artifact,) = tmp_path.glob("*.txt")
    assert artifact.read_text() == OUTPUT.strip()  # the full output, as smolagents sent it


@pytest.mark.parametrize("kind", ["openai", "litellm"])
def test_without_the_preset_the_observation_goes_whole(kind: str, tmp_path: Path) -> None:
    config = BudgetConfig(batch_budget=20_000, artifact_dir=tmp_path)
    with FakeProvider(policy) as provider, instrument(config=config):
        _run(kind, provider)
    _, observation = _user_texts(json.loads(provider.requests[1].body))
    assert len(observation) > 480_000


def test_an_unknown_preset_names_the_valid_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    valid = r"'smolagent' \(valid: aider, react, smolagents\)"
    with pytest.raises(ValidationError, match=valid):
        BudgetConfig(text_results=["smolagent"])
    with (
        pytest.raises(ConfigError, match="text_results.*" + valid),
        budget(text_results=["smolagent"]),
    ):
        pass
    monkeypatch.setenv("BUDGETWARE_TEXT_RESULTS", "smolagents,crewai")
    with pytest.raises(ConfigError, match=r"BUDGETWARE_TEXT_RESULTS.*'crewai' \(valid: "):
        instrument()


def test_the_presets_never_touch_other_user_messages(tmp_path: Path) -> None:
    config = BudgetConfig(
        batch_budget=1_000, text_results=["smolagents", "aider"], artifact_dir=tmp_path
    )
    aider = "I ran this command:\n\npytest -q\n\nAnd got this output:\n\n" + "F" * 5_000
    messages = [
        {"role": "user", "content": "Observation is what I want: " + "a" * 5_000},
        {"role": "user", "content": " Observation: " + "b" * 5_000},  # not at the start
        {"role": "assistant", "content": "Observation: " + "c" * 5_000},  # not a user
        {"role": "user", "content": [{"type": "text", "text": "Observation:\n" + "d" * 5_000}]},
        {"role": "user", "content": aider},
    ]
    body = json.dumps({"model": "m", "messages": messages}).encode()
    out = json.loads(finalize_body("https://x/v1/chat/completions", body, config=config))
    sent = out["messages"]
    assert sent[:3] == messages[:3]
    observation = sent[3]["content"][0]["text"]
    assert observation.startswith("Observation:\n[Tool output truncated: 5,000 chars")
    assert len(observation) <= len("Observation:\n") + 1_000
    assert sent[4]["content"].startswith(
        "I ran this command:\n\npytest -q\n\nAnd got this output:\n\n[Tool output truncated"
    )
