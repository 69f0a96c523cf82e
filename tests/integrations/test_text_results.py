"""Agents that send tool results as user text: the real smolagents ToolCallingAgent."""

from __future__ import annotations

import functools
import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from budgetware.core.config import BudgetConfig, ConfigError, budget
from budgetware.http.instrument import instrument
from budgetware.testing import ApiName, FakeProvider, Reply
from budgetware.wire.body import finalize_body

pytestmark = pytest.mark.sdk

OUTPUT = "\n".join(f"log line {i}: " + "build step ok " * 3 for i in range(10_000))  # ~480 KB
TASK = "Find why the build fails. " + "Context: " + "c" * 30_000  # a long user message


@functools.cache
def _read_build_log() -> Any:
    """The agent's tool (smolagents is imported where a test runs it, not at collection)."""
    from smolagents import tool

    @tool
    def read_build_log(name: str) -> str:
        """Read a build log.

        Args:
            name: which log to read.
        """
        return OUTPUT

    return read_build_log


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
    from smolagents import LiteLLMModel, OpenAIServerModel

    if kind == "openai":
        return OpenAIServerModel(model_id="m", api_base=url + "/v1", api_key="k")
    return LiteLLMModel(model_id="openai/m", api_base=url + "/v1", api_key="k")


def _run(kind: str, provider: FakeProvider) -> str:
    from smolagents import ToolCallingAgent

    model = _model(kind, provider.url)
    tools = [_read_build_log()]
    agent = ToolCallingAgent(tools=tools, model=model, max_steps=4, verbosity_level=0)
    before = set(_litellm_clients()) if kind == "litellm" else set()
    try:
        return str(agent.run(TASK))
    finally:
        client = getattr(model, "client", None)
        if client is not None and hasattr(client, "close"):
            client.close()
        if kind == "litellm":
            _close_litellm_clients(before)


def _litellm_clients() -> dict[str, Any]:
    import litellm

    return dict(litellm.in_memory_llm_clients_cache.cache_dict)


def _close_litellm_clients(before: set[str]) -> None:
    """litellm keeps the SDK clients it made (here an ``openai.OpenAI`` with a connection to
    the fake provider) in a process-wide cache: close the sync ones this test made, or their
    sockets are reported unclosed at exit (the others are not this test's to close)."""
    import litellm

    cache = litellm.in_memory_llm_clients_cache
    for key, client in _litellm_clients().items():
        close = getattr(client, "close", None)
        if key in before or not callable(close) or inspect.iscoroutinefunction(close):
            continue
        close()
        cache.delete_cache(key)


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


SECOND_TASK = "Now also explain the flaky test. " + "important detail " * 2_000 + "END-OF-TASK"


def continuing_policy(api: ApiName, body: dict[str, Any] | None) -> Reply:
    """Read the log whenever asked for a step; answer the final-answer prompt with text."""
    if not (body or {}).get("tools"):
        return Reply("final text answer")  # provide_final_answer: no tools offered
    return Reply.tools([("call_0", "read_build_log", {"name": "ci"})])


def test_what_smolagents_joins_after_an_observation_is_never_cut(tmp_path: Path) -> None:
    # smolagents joins consecutive user messages: run(task2, reset=False) sends
    # "Observation:\n<480 KB>\nNew task:\n<task2>" as one message, and reaching max_steps
    # adds "Based on the above, please provide an answer to the following user task:".
    config = BudgetConfig(batch_budget=20_000, text_results=["smolagents"], artifact_dir=tmp_path)
    with FakeProvider(continuing_policy) as provider, instrument(config=config):
        from smolagents import ToolCallingAgent

        model = _model("openai", provider.url)
        agent = ToolCallingAgent(
            tools=[_read_build_log()], model=model, max_steps=1, verbosity_level=0
        )
        try:
            assert agent.run("first task") == "final text answer"
            assert agent.run(SECOND_TASK, reset=False, max_steps=1) == "final text answer"
        finally:
            model.client.close()
    joined = [
        text
        for request in provider.requests
        for text in _user_texts(json.loads(request.body))
        if text.startswith("Observation:") and "\nNew task:\n" in text
    ]
    assert joined, "smolagents did not join the next task to the observation"
    for text in joined:
        observation, task = text.split("\nNew task:\n", 1)
        assert observation.startswith("Observation:\n[Tool output truncated: ")
        assert len(observation) <= len("Observation:\n") + 20_000
        assert task.startswith(SECOND_TASK)  # the user's task, whole
    final = [
        text
        for request in provider.requests
        for text in _user_texts(json.loads(request.body))
        if "\nBased on the above, please provide an answer" in text
    ]
    assert final
    for text in final:
        observation, prompt = text.split("\nBased on the above, please provide an answer", 1)
        assert len(observation) <= len("Observation:\n") + 20_000
        assert prompt.startswith(" to the following user task:\n")
        assert "END-OF-TASK" in prompt or "first task" in prompt


def test_a_users_own_message_that_starts_like_an_observation_is_left_alone(
    tmp_path: Path,
) -> None:
    config = BudgetConfig(
        batch_budget=1_000, text_results=["smolagents", "react"], artifact_dir=tmp_path
    )
    own = "Observation: my notes from yesterday " + "n" * 5_000
    messages = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": own},  # the user's own first message
        {"role": "assistant", "content": "Calling tools: [read]"},
        {"role": "user", "content": "Observation:\n" + "r" * 5_000},  # a result
        {"role": "user", "content": "Observation: again " + "m" * 5_000},  # user after user
    ]
    body = json.dumps({"model": "m", "messages": messages}).encode()
    out = json.loads(finalize_body("https://x/v1/chat/completions", body, config=config))
    sent = [m["content"] for m in out["messages"]]
    assert sent[1] == own
    assert sent[3].startswith("Observation:\n[Tool output truncated: 5,000 chars")
    assert sent[4] == messages[4]["content"]
    # Gemini's assistant is "model".
    gemini = {
        "contents": [
            {"role": "user", "parts": [{"text": own}]},
            {"role": "model", "parts": [{"text": "Calling tools: [read]"}]},
            {"role": "user", "parts": [{"text": "Observation:\n" + "r" * 5_000}]},
        ]
    }
    url = "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent"
    out = json.loads(finalize_body(url, json.dumps(gemini).encode(), config=config))
    texts = [c["parts"][0]["text"] for c in out["contents"]]
    assert texts[0] == own
    assert texts[2].startswith("Observation:\n[Tool output truncated: 5,000 chars")
