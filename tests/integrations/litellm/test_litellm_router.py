"""The deployment hook end to end: litellm SDK and Router calls against the fake provider."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest
from litellm_proxy_helpers import assert_bounded, big_results, tool_texts
from testing import drivers

from budgetware.testing import FakeProvider

pytestmark = [
    pytest.mark.sdk,
    # litellm's first call builds pydantic schemas of its TypedDicts with `ReadOnly` items
    # (ChatCompletionThinkingBlock, ...): pydantic warns it cannot enforce them.
    pytest.mark.filterwarnings(
        "ignore:Items? .* on TypedDict class '\\w+' (is|are) using the `ReadOnly`"
        " qualifier:UserWarning"
    ),
]

BIG = big_results()


@pytest.fixture
async def openai_client(fake_provider: FakeProvider) -> AsyncIterator[Any]:
    """An ``openai.AsyncOpenAI`` on a plain transport, closed after the test (litellm's
    own cached clients would outlive the test's event loop)."""
    import httpx
    import openai

    http = httpx.AsyncClient()
    client = openai.AsyncOpenAI(
        api_key=drivers.DUMMY_KEY,
        base_url=f"{fake_provider.url}/v1",
        max_retries=0,
        http_client=cast(Any, http),
    )
    yield client
    await http.aclose()


def _sent(fake_provider: FakeProvider, field: str = "messages") -> list[str]:
    return tool_texts(field, fake_provider.last.json()[field])


async def test_acompletion_sends_a_bounded_body(
    registered: Any, fake_provider: FakeProvider, artifact_dir: Path
) -> None:
    await drivers.asend_litellm(fake_provider.url, BIG)
    assert_bounded(_sent(fake_provider), BIG, artifact_dir)


async def test_router_acompletion_sends_a_bounded_body(
    registered: Any, fake_provider: FakeProvider, openai_client: Any, artifact_dir: Path
) -> None:
    import litellm

    router = litellm.Router(
        model_list=[
            {
                "model_name": "budget-test",
                "litellm_params": {
                    "model": drivers.LITELLM_MODELS["openai"],
                    "api_base": f"{fake_provider.url}/v1",
                    "api_key": drivers.DUMMY_KEY,
                },
            }
        ],
        num_retries=0,
    )
    await router.acompletion(
        model="budget-test", messages=drivers.openai_chat_messages(BIG), client=openai_client
    )
    assert_bounded(_sent(fake_provider), BIG, artifact_dir)


async def test_aresponses_sends_a_bounded_input(
    registered: Any, fake_provider: FakeProvider, openai_client: Any, artifact_dir: Path
) -> None:
    import litellm

    await litellm.aresponses(
        model=drivers.LITELLM_MODELS["openai"],
        input=drivers.openai_responses_input(BIG),
        api_base=f"{fake_provider.url}/v1",
        api_key=drivers.DUMMY_KEY,
        client=openai_client,
    )
    assert_bounded(_sent(fake_provider, "input"), BIG, artifact_dir)


def test_sync_responses_runs_the_deployment_hook(
    registered: Any, fake_provider: FakeProvider, artifact_dir: Path
) -> None:
    import httpx
    import litellm
    import openai

    with httpx.Client() as http:
        client = openai.OpenAI(
            api_key=drivers.DUMMY_KEY,
            base_url=f"{fake_provider.url}/v1",
            max_retries=0,
            http_client=cast(Any, http),
        )
        litellm.responses(
            model=drivers.LITELLM_MODELS["openai"],
            input=drivers.openai_responses_input(BIG),
            api_base=f"{fake_provider.url}/v1",
            api_key=drivers.DUMMY_KEY,
            client=client,
        )
    assert_bounded(_sent(fake_provider, "input"), BIG, artifact_dir)


def test_sync_completion_does_not_run_the_deployment_hook(
    registered: Any, fake_provider: FakeProvider
) -> None:
    # litellm runs async_pre_call_deployment_hook only in its async wrapper: a sync
    # completion goes out unbounded (instrument() or budget_http_handler() cover it).
    drivers.send_litellm(fake_provider.url, BIG)
    assert _sent(fake_provider) == BIG


async def test_deployment_hook_bounds_a_history_holding_litellm_message_objects(
    callback: Any, artifact_dir: Path
) -> None:
    import litellm

    messages: list[Any] = drivers.openai_chat_messages(BIG)
    messages[1] = litellm.Message(**messages[1])
    kwargs = {"model": "openai/gpt-4o-mini", "messages": messages}
    result = await callback.async_pre_call_deployment_hook(kwargs, litellm.CallTypes.acompletion)
    assert_bounded(tool_texts("messages", result["messages"]), BIG, artifact_dir)


async def test_deployment_hook_leaves_a_proxy_request_to_the_proxy_hook(callback: Any) -> None:
    import litellm

    kwargs = {
        "model": "openai/gpt-4o-mini",
        "messages": drivers.openai_chat_messages(BIG),
        "proxy_server_request": {"headers": {"x-budgetware-disable": "1"}},
    }
    result = await callback.async_pre_call_deployment_hook(kwargs, litellm.CallTypes.acompletion)
    assert result is kwargs


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_the_providers_counters_are_reported_with_the_request(
    registered: Any, fake_provider: FakeProvider, provider: drivers.LitellmProvider
) -> None:
    import asyncio

    from budgetware.core import observe

    requests: list[observe.RequestReport] = []
    usage: list[observe.UsageReport] = []
    with observe.subscribe(request=requests.append, usage=usage.append):
        for _ in range(2):  # the same conversation again: its prefix is read from the cache
            await drivers.asend_litellm(fake_provider.url, BIG, provider=provider)
        for _ in range(200):  # litellm runs its success callbacks in a task of their own
            if len(usage) == 2:
                break
            await asyncio.sleep(0.01)
    assert [report.request for report in usage] == requests
    assert all(request.usage is report for request, report in zip(requests, usage))
    first, second = (recorded.usage for recorded in fake_provider.requests)
    assert first is not None
    assert second is not None
    # OpenAI caches by itself; Anthropic only what a request marks (this one marks nothing).
    assert (second.cache_read_tokens > 0) == (provider == "openai")
    # As litellm reports them: the prompt's tokens, the cached ones included.
    assert [(r.input_tokens, r.cache_read_tokens) for r in usage] == [
        (first.input_tokens, 0),
        (second.input_tokens, second.cache_read_tokens),
    ]
