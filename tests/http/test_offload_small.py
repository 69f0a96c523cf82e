"""A small request over its budget, with a store over the network, is bounded off the loop.

Below the size that goes to a worker thread for the CPU (1 MiB), a request used to be
bounded on the event loop whatever it would do: with a small budget (a header
``x-budgetware-batch-budget: 2000``) a 30 KB tool result is cut, and its full output
written to the S3 store; a store that hangs then held the loop for its timeout. Each test
drives a real async SDK against the fake provider, with the store's PUT held until the
loop has turned beside it (``held_s3``: structural, no wall-time threshold). A small
request under its budget still stays on the loop, and so does one whose own store is
local while another entry point of the process uses S3.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from held_s3 import (
    TICKS,
    TIMEOUT,
    HeldS3,
    held_s3,
    held_s3_store_url,
    prepare_store,
    ticks_while_held,
)
from http_helpers import tool_result_texts
from testing import drivers

from budgetware.core.config import BudgetConfig
from budgetware.http.instrument import instrument
from budgetware.http.transport import (
    OFFLOAD_BYTES,
    AsyncBudgetTransport,
    sdk_http_library,
)
from budgetware.store import select
from budgetware.testing import FakeProvider

pytestmark = pytest.mark.sdk


RESULT = "r" * 30_000
"""One tool result: far below OFFLOAD_BYTES, over a 2,000-character budget."""
SMALL = {"x-budgetware-batch-budget": "2000"}


@pytest.fixture
def store(s3_endpoint: str) -> Iterator[HeldS3]:
    with held_s3(s3_endpoint) as held:
        yield held


def _openai_client(provider: FakeProvider, config: BudgetConfig | None, entry: str) -> Any:
    import openai

    if entry == "instrument":
        return openai.AsyncOpenAI(base_url=f"{provider.url}/v1", api_key=drivers.DUMMY_KEY)
    library = sdk_http_library(openai.DefaultAsyncHttpxClient, "openai")
    transport = AsyncBudgetTransport(library.AsyncHTTPTransport(), config=config)
    return openai.AsyncOpenAI(
        base_url=f"{provider.url}/v1",
        api_key=drivers.DUMMY_KEY,
        max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(transport=transport),
    )


def _sent(provider: FakeProvider) -> list[str]:
    return tool_result_texts("openai_chat", json.loads(provider.last.body))


@pytest.mark.parametrize("entry", ["transport", "instrument"])
@pytest.mark.parametrize("budget_from", ["header", "config"])
async def test_a_small_request_over_its_budget_waits_for_the_store_off_the_loop(
    fake_provider: FakeProvider,
    store: HeldS3,
    monkeypatch: pytest.MonkeyPatch,
    finalize_threads: list[int],
    entry: str,
    budget_from: str,
) -> None:
    url = held_s3_store_url(monkeypatch, store)
    budget = {"batch_budget": 2000} if budget_from == "config" else {}
    config = BudgetConfig(artifact_store=url, artifact_store_timeout=TIMEOUT, **budget)
    prepare_store(config)
    headers = SMALL if budget_from == "header" else {}
    messages = drivers.openai_chat_messages([RESULT])
    assert len(json.dumps({"messages": messages})) < OFFLOAD_BYTES // 20
    with instrument(config=config) if entry == "instrument" else _nothing():
        async with _openai_client(fake_provider, config, entry) as client:
            held = await ticks_while_held(
                store,
                client.chat.completions.create(
                    model=drivers.OPENAI_MODEL, messages=messages, extra_headers=headers
                ),
            )
    # The loop kept turning while the store held the artifact's PUT; the request waited.
    assert held.ticks >= TICKS, held
    assert not held.done_while_held
    assert store.abandoned == 0
    assert finalize_threads
    assert threading.get_ident() not in finalize_threads
    # Released, the write went through: bounded to the budget, naming the artifact.
    (text,) = _sent(fake_provider)
    assert len(text) <= 2000
    assert url + "/" in text


async def test_the_anthropic_middleware_bounds_a_small_request_over_its_budget_off_the_loop(
    fake_provider: FakeProvider, store: HeldS3, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anthropic

    from budgetware.integrations.anthropic import budget_middleware

    url = held_s3_store_url(monkeypatch, store)
    config = BudgetConfig(artifact_store=url, artifact_store_timeout=TIMEOUT)
    prepare_store(config)
    client = anthropic.AsyncAnthropic(
        base_url=fake_provider.url,
        api_key=drivers.DUMMY_KEY,
        max_retries=0,
        middleware=[budget_middleware(config=config)],
    )
    async with client:
        held = await ticks_while_held(
            store,
            client.messages.create(
                model=drivers.ANTHROPIC_MODEL,
                max_tokens=64,
                messages=drivers.anthropic_messages([RESULT]),
                extra_headers=SMALL,
            ),
        )
    assert held.ticks >= TICKS, held
    assert not held.done_while_held
    (text,) = tool_result_texts("anthropic", json.loads(fake_provider.last.body))
    assert len(text) <= 2000
    assert url + "/" in text


@pytest.mark.parametrize("entry", ["transport", "instrument"])
async def test_a_small_request_under_its_budget_stays_on_the_loop_with_an_s3_store(
    fake_provider: FakeProvider,
    store: HeldS3,
    monkeypatch: pytest.MonkeyPatch,
    finalize_threads: list[int],
    entry: str,
) -> None:
    url = held_s3_store_url(monkeypatch, store)
    config = BudgetConfig(artifact_store=url, artifact_store_timeout=TIMEOUT)
    prepare_store(config)
    assert select.remote_store_in_use()
    with instrument(config=config) if entry == "instrument" else _nothing():
        async with _openai_client(fake_provider, config, entry) as client:
            await client.chat.completions.create(
                model=drivers.OPENAI_MODEL,
                messages=drivers.openai_chat_messages([RESULT]),
                extra_headers={"x-budgetware-batch-budget": "50000"},
            )
    # Nothing to cut, so nothing to write: bounded in place, the store never asked.
    assert finalize_threads == [threading.get_ident()]
    assert store.held == 0
    assert _sent(fake_provider) == [RESULT]


async def test_a_small_request_with_a_local_store_stays_on_the_loop_beside_an_s3_one(
    fake_provider: FakeProvider,
    monkeypatch: pytest.MonkeyPatch,
    finalize_threads: list[int],
    tmp_path: Path,
) -> None:
    # Another entry point of this process named an S3 store; this one's store is local.
    monkeypatch.setattr(select, "_remote_in_use", True)
    config = BudgetConfig(artifact_dir=tmp_path)
    async with _openai_client(fake_provider, config, "transport") as client:
        await client.chat.completions.create(
            model=drivers.OPENAI_MODEL,
            messages=drivers.openai_chat_messages([RESULT]),
            extra_headers=SMALL,
        )
    assert finalize_threads == [threading.get_ident()]
    (text,) = _sent(fake_provider)
    assert len(text) <= 2000
    assert str(tmp_path) in text


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
