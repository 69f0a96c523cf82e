"""A setting that turns bad after setup is logged once; model calls go on, never broken."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from http_helpers import big_results
from testing import drivers

from budgetware.core.config import BudgetConfig
from budgetware.http.instrument import instrument
from budgetware.testing import FakeProvider

pytestmark = [
    pytest.mark.sdk,
    pytest.mark.filterwarnings("ignore:Items? .*ReadOnly.*qualifier:UserWarning"),
]
BIG = big_results()


def _warnings_naming(caplog: pytest.LogCaptureFixture, variable: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if variable in r.getMessage()]


def test_the_anthropic_middleware_never_breaks_a_call_when_a_value_turns_bad(
    fake_provider: FakeProvider,
    artifact_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import anthropic

    from budgetware.integrations.anthropic import budget_middleware

    middleware = budget_middleware(config=BudgetConfig(artifact_dir=artifact_dir))
    monkeypatch.setenv("BUDGETWARE_UNIT", "words")
    with (
        caplog.at_level(logging.WARNING, logger="budgetware"),
        anthropic.Anthropic(
            base_url=fake_provider.url,
            api_key=drivers.DUMMY_KEY,
            max_retries=0,
            middleware=[middleware],
        ) as client,
    ):
        for _ in range(2):
            client.messages.create(
                model=drivers.ANTHROPIC_MODEL,
                max_tokens=64,
                messages=drivers.anthropic_messages(BIG),
            )
    assert len(fake_provider.requests) == 2
    assert len(_warnings_naming(caplog, "BUDGETWARE_UNIT")) == 1


def test_instrument_logs_a_value_that_turns_bad_once_and_sends_every_request(
    fake_provider: FakeProvider,
    artifact_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with instrument(config=BudgetConfig(artifact_dir=artifact_dir)):
        monkeypatch.setenv("BUDGETWARE_MAX_ARTIFACT_BYTES", "huge")
        with caplog.at_level(logging.WARNING, logger="budgetware"):
            for _ in range(3):
                drivers.send_openai_chat(fake_provider.url, BIG)
    assert len(fake_provider.requests) == 3
    (message,) = _warnings_naming(caplog, "BUDGETWARE_MAX_ARTIFACT_BYTES")
    assert "huge" not in message
    # The setting is left out, the others still apply: the batch is bounded.
    sent = fake_provider.last.json()["messages"]
    assert sum(len(m["content"]) for m in sent if m["role"] == "tool") <= 200_000
