"""The anthropic middleware's async path never holds the SDK's event loop while a store waits.

``AsyncAnthropic(middleware=[budget_middleware()])`` bounds each request body before the
SDK serializes it: with an S3 store that never answers, each of the output's S3 calls
waits for its timeout. A large body is bounded in a worker thread: a ticker beside the
real SDK call keeps ticking, and the request still goes out bounded, naming no artifact.
"""

from __future__ import annotations

from typing import Any

import pytest
from hung_s3 import TIMEOUT, hung_s3_config, hung_s3_endpoint, stalls
from testing import drivers

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
    fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    with hung_s3_endpoint() as endpoint:
        config = hung_s3_config(monkeypatch, endpoint)
        async with _client(fake_provider.url, config) as client:
            measured = await stalls(
                client.messages.create(
                    model=drivers.ANTHROPIC_MODEL,
                    max_tokens=64,
                    messages=drivers.anthropic_messages(["A" * 200_000]),
                )
            )
    (text,) = _tool_result_texts(fake_provider.last.json())
    assert len(text) <= 5000
    assert "s3://" not in text
    # The store made the request wait; the loop went on meanwhile.
    assert measured.seconds >= TIMEOUT
    assert measured.worst < measured.seconds / 3, (measured.worst, measured.seconds)
