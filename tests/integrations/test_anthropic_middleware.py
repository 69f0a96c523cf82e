"""The anthropic middleware's async path never holds the SDK's event loop while a store waits.

``AsyncAnthropic(middleware=[budget_middleware()])`` bounds each request body before the
SDK serializes it: with an S3 store whose writes hang, the bounding waits for the store.
A large body is bounded in a worker thread: a ticker beside the real SDK call keeps
turning while the store holds the artifact's PUT (counted while it is held, no wall-time
threshold that load could eat), the request waits for the store, and once the store
answers it goes out bounded, naming the artifact that holds the full output.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from held_s3 import TICKS, TIMEOUT, held_s3, held_s3_store_url, prepare_store, ticks_while_held
from testing import drivers

from budgetware.core.config import BudgetConfig
from budgetware.store import s3 as store_s3
from budgetware.testing import FakeProvider

pytestmark = pytest.mark.sdk


def _client(url: str, config: Any) -> Any:
    import anthropic

    from budgetware.integrations.anthropic import budget_middleware

    return anthropic.AsyncAnthropic(
        base_url=url,
        api_key=drivers.DUMMY_KEY,
        max_retries=0,
        middleware=[budget_middleware(config=config)],
    )


def _tool_result_texts(body: dict[str, Any]) -> list[str]:
    return [
        block["content"]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


async def test_the_async_middleware_bounds_off_the_loop_while_the_store_hangs(
    fake_provider: FakeProvider, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The thread each S3 write was asked for from (the bounding's thread).
    writers: list[int] = []
    real_put = store_s3.S3ArtifactStore._put_object

    def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
        writers.append(threading.get_ident())
        return real_put(self, *args, **kwargs)

    monkeypatch.setattr(store_s3.S3ArtifactStore, "_put_object", recording)
    with held_s3(s3_endpoint) as store:
        config = BudgetConfig(
            batch_budget=5000,
            artifact_store=held_s3_store_url(monkeypatch, store),
            artifact_store_timeout=TIMEOUT,
        )
        prepare_store(config)
        async with _client(fake_provider.url, config) as client:
            held = await ticks_while_held(
                store,
                client.messages.create(
                    model=drivers.ANTHROPIC_MODEL,
                    max_tokens=64,
                    messages=drivers.anthropic_messages(["A" * 200_000]),
                ),
            )
    # The loop kept turning while the store held the write, and the request waited for it.
    assert held.ticks >= TICKS, held
    assert not held.done_while_held
    assert store.abandoned == 0
    assert writers
    assert threading.get_ident() not in writers
    # Released, the write went through: the request is bounded and names the artifact.
    (text,) = _tool_result_texts(fake_provider.last.json())
    assert len(text) <= 5000
    assert config.artifact_store is not None
    assert config.artifact_store + "/" in text
    assert any(path.endswith(".txt") for path in store.puts)
