"""budget_aiohttp_client on either openai line: 3.x (httpx2, its vendored aiohttp transport)
and 2.x (classic httpx, the httpx-aiohttp package its DefaultAioHttpClient is built on)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from budgetware.core.config import BudgetConfig
from budgetware.testing import FakeProvider

BIG = ["t" * 40_000, "u" * 40_000]


def _config(tmp_path: Path) -> BudgetConfig:
    return BudgetConfig(batch_budget=20_000, artifact_dir=tmp_path)


def _openai_2x(monkeypatch: pytest.MonkeyPatch) -> type:
    """openai 2.x's DefaultAioHttpClient, as its _base_client builds it."""
    import openai
    from httpx_aiohttp import HttpxAiohttpClient

    class DefaultAioHttpClient(HttpxAiohttpClient):
        def __init__(self, **kwargs: Any) -> None:
            kwargs.setdefault("follow_redirects", True)
            super().__init__(**kwargs)

    monkeypatch.setattr(openai, "DefaultAioHttpClient", DefaultAioHttpClient)
    return DefaultAioHttpClient


async def _chat(http_client: Any, url: str) -> None:
    import openai

    client = openai.AsyncOpenAI(api_key="k", base_url=url + "/v1", http_client=http_client)
    messages: list[Any] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                for i in range(len(BIG))
            ],
        },
        *({"role": "tool", "tool_call_id": f"c{i}", "content": b} for i, b in enumerate(BIG)),
    ]
    await client.chat.completions.create(model="m", messages=messages)
    await client.close()


def _sent(provider: FakeProvider) -> int:
    return sum(len(m["content"]) for m in provider.last.json()["messages"] if m["role"] == "tool")


@pytest.mark.parametrize("line", ["3.x", "2.x"])
def test_budget_aiohttp_client_bounds_on_either_openai_line(
    line: str, monkeypatch: pytest.MonkeyPatch, fake_provider: FakeProvider, tmp_path: Path
) -> None:
    from budgetware.http.transport import AsyncBudgetTransport
    from budgetware.integrations.openai import budget_aiohttp_client

    if line == "2.x":
        import httpx

        client_class = _openai_2x(monkeypatch)
        http_client = budget_aiohttp_client(config=_config(tmp_path))
        assert isinstance(http_client, client_class)
        assert isinstance(http_client, httpx.AsyncClient)
    else:
        http_client = budget_aiohttp_client(config=_config(tmp_path))
    assert isinstance(http_client._transport, AsyncBudgetTransport)
    asyncio.run(_chat(http_client, fake_provider.url))
    assert _sent(fake_provider) <= 20_000
