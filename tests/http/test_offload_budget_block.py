"""The first request of a ``budget(artifact_store="s3://...")`` block is bounded off the loop.

Whether a small request may wait for a store over the network was decided by a process
flag that only a store already set up raises: in a process where nothing named S3
before, a ``budget(...)`` block naming one sets none up, so its first request over its
budget was bounded on the event loop, and its artifact's PUT (seconds, when the endpoint
hangs) held the loop. The PUT is held here until the loop has turned beside it
(``held_s3``: structural, no wall-time threshold).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
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

from budgetware.core.config import BudgetConfig, budget
from budgetware.http.instrument import instrument
from budgetware.http.transport import off_loop_for_size
from budgetware.store import select
from budgetware.testing import FakeProvider

pytestmark = pytest.mark.sdk


RESULT = "r" * 30_000
"""One tool result: far below the size that goes to a worker thread for the CPU."""


@pytest.fixture
def store(s3_endpoint: str) -> Iterator[HeldS3]:
    with held_s3(s3_endpoint) as held:
        yield held


def _s3_block(monkeypatch: pytest.MonkeyPatch, store: HeldS3) -> dict[str, Any]:
    url = held_s3_store_url(monkeypatch, store)
    settings = {"artifact_store": url, "artifact_store_timeout": TIMEOUT, "batch_budget": 2000}
    prepare_store(BudgetConfig(**settings))  # its client ready: not what the loop measures
    monkeypatch.setattr(select, "_remote_in_use", False)  # nothing named S3 before
    return settings


async def test_the_first_request_of_an_s3_budget_block_waits_off_the_loop(
    fake_provider: FakeProvider,
    store: HeldS3,
    monkeypatch: pytest.MonkeyPatch,
    finalize_threads: list[int],
) -> None:
    import openai

    settings = _s3_block(monkeypatch, store)
    messages = drivers.openai_chat_messages([RESULT])
    with instrument(), budget(**settings):
        async with openai.AsyncOpenAI(
            base_url=f"{fake_provider.url}/v1", api_key=drivers.DUMMY_KEY, max_retries=0
        ) as client:
            held = await ticks_while_held(
                store,
                client.chat.completions.create(model=drivers.OPENAI_MODEL, messages=messages),
            )
    assert held.ticks >= TICKS, held
    assert not held.done_while_held
    assert store.abandoned == 0
    assert finalize_threads
    assert threading.get_ident() not in finalize_threads
    (text,) = tool_result_texts("openai_chat", json.loads(fake_provider.last.body))
    assert len(text) <= 2000
    assert settings["artifact_store"] + "/" in text


@pytest.mark.parametrize(("store_from", "off_loop"), [("s3", True), ("local", False)])
async def test_an_sdk_hook_in_a_budget_block_decides_by_the_block_store(
    store: HeldS3,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    store_from: str,
    off_loop: bool,
) -> None:
    # off_loop_for_size: the SDK hooks' and the LiteLLM Proxy's way off the loop.
    settings = _s3_block(monkeypatch, store)
    if store_from == "local":
        settings["artifact_store"] = str(tmp_path)
    with budget(**settings):
        thread = await off_loop_for_size(len(RESULT), threading.get_ident, config=None)
    assert (thread != threading.get_ident()) is off_loop
