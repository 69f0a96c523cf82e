"""Large bodies are bounded in a worker thread on the async paths, so the loop keeps going."""

from __future__ import annotations

import importlib
import json
import threading
from pathlib import Path
from typing import Any

import httpx2
import pytest
from http_helpers import big_results, tool_result_texts
from test_transport import URL, chat_body, mock

from budgetware.core.config import BudgetConfig, budget
from budgetware.http.instrument import instrument
from budgetware.http.transport import OFFLOAD_BYTES, AsyncBudgetTransport


def _sent_total(seen: list[Any]) -> int:
    return sum(map(len, tool_result_texts("openai_chat", json.loads(seen[-1].content))))


@pytest.mark.parametrize("name", ["httpx", "httpx2"])
async def test_a_large_body_is_bounded_off_the_event_loop_with_the_callers_budget(
    name: str, finalize_threads: list[int], tmp_path: Path
) -> None:
    lib = importlib.import_module(name)
    seen: list[Any] = []
    body = chat_body(big_results(10))
    assert len(body) > OFFLOAD_BYTES
    transport = AsyncBudgetTransport(mock(lib, seen), config=BudgetConfig(artifact_dir=tmp_path))
    async with lib.AsyncClient(transport=transport) as client:
        with budget(batch_budget=7_000):  # a ContextVar: must reach the worker thread
            await client.post(URL, content=body)
    assert finalize_threads != [threading.get_ident()]
    assert _sent_total(seen) <= 7_000


async def test_a_small_body_is_bounded_in_place(
    finalize_threads: list[int], tmp_path: Path
) -> None:
    seen: list[Any] = []
    transport = AsyncBudgetTransport(
        mock(httpx2, seen), config=BudgetConfig(artifact_dir=tmp_path)
    )
    async with httpx2.AsyncClient(transport=transport) as client:
        await client.post(URL, content=chat_body(big_results(2, 20_000)))
    assert finalize_threads == [threading.get_ident()]


async def test_instrument_bounds_large_async_requests_off_the_loop_too(
    finalize_threads: list[int], tmp_path: Path
) -> None:
    seen: list[Any] = []
    with instrument(config=BudgetConfig(batch_budget=9_000, artifact_dir=tmp_path)):
        async with httpx2.AsyncClient(transport=mock(httpx2, seen)) as client:
            await client.post(URL, content=chat_body(big_results(10)))
    assert finalize_threads != [threading.get_ident()]
    assert _sent_total(seen) <= 9_000
