"""Text-result presets in every chat format that carries user text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from budgetware.core.config import BudgetConfig
from budgetware.wire.body import finalize_body

OBSERVATION = "Observation:\n" + "o" * 5_000
OTHER = "please read " + "u" * 5_000

BODIES: dict[str, tuple[str, dict[str, Any], Any, Any]] = {
    # name: (url, body, getter of the observation text, getter of the other user text)
    "anthropic_messages": (
        "https://api.anthropic.com/v1/messages",
        {
            "model": "m",
            "max_tokens": 10,
            "messages": [
                {"role": "user", "content": OTHER},
                {"role": "assistant", "content": "Calling tools: [...]"},
                {"role": "user", "content": [{"type": "text", "text": OBSERVATION}]},
            ],
        },
        lambda b: b["messages"][2]["content"][0]["text"],
        lambda b: b["messages"][0]["content"],
    ),
    "gemini": (
        "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent",
        {
            "contents": [
                {"role": "user", "parts": [{"text": OTHER}]},
                {"role": "model", "parts": [{"text": "Calling tools: [...]"}]},
                {"role": "user", "parts": [{"text": OBSERVATION}]},
            ]
        },
        lambda b: b["contents"][2]["parts"][0]["text"],
        lambda b: b["contents"][0]["parts"][0]["text"],
    ),
    "openai_responses": (
        "https://api.openai.com/v1/responses",
        {
            "model": "m",
            "input": [
                {"role": "user", "content": OTHER},
                {"role": "assistant", "content": "Calling tools: [...]"},
                {"role": "user", "content": [{"type": "input_text", "text": OBSERVATION}]},
            ],
        },
        lambda b: b["input"][2]["content"][0]["text"],
        lambda b: b["input"][0]["content"],
    ),
    "ollama_chat": (
        "http://127.0.0.1:11434/api/chat",
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": OTHER},
                {"role": "assistant", "content": "Calling tools: [...]"},
                {"role": "user", "content": OBSERVATION},
            ],
        },
        lambda b: b["messages"][2]["content"],
        lambda b: b["messages"][0]["content"],
    ),
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_an_observation_is_bounded_and_nothing_else(name: str, tmp_path: Path) -> None:
    url, body, observation, other = BODIES[name]
    config = BudgetConfig(batch_budget=1_000, text_results=["react"], artifact_dir=tmp_path)
    raw = json.dumps(body).encode()
    out = json.loads(finalize_body(url, raw, config=config))
    assert other(out) == OTHER
    text = observation(out)
    assert text.startswith("Observation:\n[Tool output truncated: 5,000 chars")
    assert len(text) <= len("Observation:\n") + 1_000


@pytest.mark.parametrize("name", sorted(BODIES))
def test_without_a_preset_nothing_changes(name: str, tmp_path: Path) -> None:
    url, body, _, _ = BODIES[name]
    raw = json.dumps(body).encode()
    config = BudgetConfig(batch_budget=1_000, artifact_dir=tmp_path)
    assert finalize_body(url, raw, config=config) is raw
