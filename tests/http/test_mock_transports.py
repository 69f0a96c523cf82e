"""instrument() inside a user's own test suite that mocks HTTP with pytest-httpx / httpx2-pytest.

Those plugins replace the transports' ``handle_request``; budgetware patches ``send``
above them, so requests are bounded before the mock sees them, for both libraries.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import httpx
import httpx2
import pytest

import budgetware
from budgetware import BudgetConfig

# Each plugin pins its HTTP library (pytest-httpx: httpx 0.28); where one cannot be installed
# (scripts/ci-matrix with the lowest declared httpx), its tests skip.
needs_pytest_httpx = pytest.mark.skipif(
    importlib.util.find_spec("pytest_httpx") is None, reason="pytest-httpx is not installed"
)
needs_httpx2_pytest = pytest.mark.skipif(
    importlib.util.find_spec("pytest_httpx2") is None, reason="httpx2-pytest is not installed"
)

URL = "https://api.example.test/v1/chat/completions"
BIG = "".join(f"row {i:06d}\n" for i in range(30_000))


def _chat(*results: str) -> dict[str, Any]:
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": "q", "arguments": "{}"}}
        for i in range(len(results))
    ]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": calls},
    ]
    messages += [
        {"role": "tool", "tool_call_id": f"c{i}", "content": r} for i, r in enumerate(results)
    ]
    return {"model": "m", "messages": messages}


def _tool_texts(body: bytes) -> list[str]:
    return [m["content"] for m in json.loads(body)["messages"] if m["role"] == "tool"]


@needs_pytest_httpx
def test_pytest_httpx_mock_receives_the_bounded_request(
    httpx_mock: Any, config: BudgetConfig
) -> None:
    httpx_mock.add_response(url=URL, json={"ok": True})
    small_budget = config.model_copy(update={"batch_budget": 5_000})
    with budgetware.instrument(config=small_budget), httpx.Client() as client:
        client.post(URL, json=_chat(BIG, "small"))
    texts = _tool_texts(httpx_mock.get_request().content)
    assert sum(map(len, texts)) <= 5_000
    assert texts[1] == "small"
    assert texts[0].startswith("[Tool output truncated")


@needs_httpx2_pytest
def test_httpx2_pytest_mock_receives_the_bounded_request(
    httpx2_mock: Any, config: BudgetConfig
) -> None:
    httpx2_mock.add_response(url=URL, json={"ok": True})
    small_budget = config.model_copy(update={"batch_budget": 5_000})
    with budgetware.instrument(config=small_budget), httpx2.Client() as client:
        client.post(URL, json=_chat(BIG, BIG))
    texts = _tool_texts(httpx2_mock.get_request().content)
    assert sum(map(len, texts)) <= 5_000


@needs_httpx2_pytest
async def test_httpx2_pytest_mock_sees_async_requests_bounded_and_headers_removed(
    httpx2_mock: Any, config: BudgetConfig
) -> None:
    httpx2_mock.add_response(url=URL, json={"ok": True})
    with budgetware.instrument(config=config):
        async with httpx2.AsyncClient() as client:
            await client.post(URL, json=_chat(BIG), headers={"x-budgetware-batch-budget": "3000"})
    request = httpx2_mock.get_request()
    assert sum(map(len, _tool_texts(request.content))) <= 3_000
    assert not any(name.startswith("x-budgetware") for name in request.headers)


@needs_pytest_httpx
@pytest.mark.httpx_mock(assert_all_requests_were_expected=True)
def test_under_budget_requests_reach_the_mock_byte_identical(
    httpx_mock: Any, config: BudgetConfig
) -> None:
    httpx_mock.add_response(url=URL, json={"ok": True}, is_reusable=True)
    body = json.dumps(_chat("a few rows", "and a few more")).encode()
    with httpx.Client() as client:
        client.post(URL, content=body)
    with budgetware.instrument(config=config), httpx.Client() as client:
        client.post(URL, content=body)
    plain, instrumented = httpx_mock.get_requests()
    assert instrumented.content == plain.content == body
