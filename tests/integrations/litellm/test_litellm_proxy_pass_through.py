"""The proxy's pass-through routes (``/anthropic/...``, ``/openai/...``, ``/gemini/...``,
``/cohere/...``), with budgetware's callback: bounded like the unified routes.

litellm sends a pass-through request's body to the provider as the client wrote it, with
the client's headers, and calls the pre-call hook with ``call_type="pass_through_endpoint"``
and the body alone. Every assertion is on what the fake provider received behind the proxy;
the session's proxies send the pass-through routes there (``pass_through_env``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from litellm_proxy_helpers import BUDGET, assert_bounded, big_results, small_results
from proxy_server_helpers import model_requests, only_request, upstream_tool_texts
from testing import drivers
from testing.litellm_proxy import LiteLLMProxy
from wire import _bodies

from budgetware.testing import FakeProvider, Reply

# One worker starts the session's proxies and runs every test that uses them.
pytestmark = [pytest.mark.sdk, pytest.mark.slow, pytest.mark.xdist_group("litellm_proxy")]

SIZE = 60_000
BIG = big_results(4, SIZE)
MODEL = "claude-haiku-4-5"


def pass_through_messages(
    proxy: LiteLLMProxy,
    messages: list[dict[str, Any]],
    headers: dict[str, str] | None = None,
    *,
    key: str | None = None,
) -> str:
    """The real anthropic SDK pointed at the proxy's Anthropic pass-through route."""
    import anthropic

    with anthropic.Anthropic(
        base_url=proxy.url + "/anthropic", api_key=key or proxy.master_key, max_retries=0
    ) as client:
        reply = client.messages.create(
            model=MODEL, max_tokens=64, messages=messages, extra_headers=headers
        )
    return "".join(block.text for block in reply.content if block.type == "text")


def test_anthropic_pass_through_tool_results_reach_the_provider_bounded(
    gateway: LiteLLMProxy,
    baseline: LiteLLMProxy,
    upstream: FakeProvider,
    gateway_artifact_dir: Path,
) -> None:
    messages = drivers.anthropic_messages(BIG)
    assert pass_through_messages(gateway, messages) == "ok"
    request = only_request(upstream)
    assert request.route == "/v1/messages"
    assert_bounded(upstream_tool_texts(request), BIG, gateway_artifact_dir)
    # Everything but the tool results is as the proxy forwards it without budgetware.
    upstream.clear()
    pass_through_messages(baseline, messages)
    without = only_request(upstream)
    assert upstream_tool_texts(without) == BIG
    bounded = request.json()
    assert bounded["messages"][:-1] == without.json()["messages"][:-1]
    assert {k: v for k, v in bounded.items() if k != "messages"} == {
        k: v for k, v in without.json().items() if k != "messages"
    }


def test_anthropic_pass_through_under_budget_is_forwarded_as_without_budgetware(
    gateway: LiteLLMProxy, baseline: LiteLLMProxy, upstream: FakeProvider
) -> None:
    messages = drivers.anthropic_messages(small_results())
    pass_through_messages(gateway, messages)
    through_gateway = only_request(upstream)
    upstream.clear()
    pass_through_messages(baseline, messages)
    assert through_gateway.body == only_request(upstream).body


def test_pass_through_budget_header_is_honored_and_never_forwarded(
    gateway: LiteLLMProxy, upstream: FakeProvider
) -> None:
    headers = {"x-budgetware-batch-budget": "8000", "x-request-tag": "t-1"}
    pass_through_messages(gateway, drivers.anthropic_messages(BIG), headers)
    request = only_request(upstream)
    assert sum(map(len, upstream_tool_texts(request))) <= 8000
    # A pass-through route forwards the client's headers, but never budgetware's.
    assert request.headers.get("x-request-tag") == "t-1"
    assert not [name for name in request.headers if name.startswith("x-budgetware-")]


def test_pass_through_disable_header_is_held_to_the_operators_budget(
    gateway: LiteLLMProxy, upstream: FakeProvider
) -> None:
    pass_through_messages(gateway, drivers.anthropic_messages(BIG), {"x-budgetware-disable": "1"})
    request = only_request(upstream)
    assert sum(map(len, upstream_tool_texts(request))) <= BUDGET  # client_overrides: clamp
    assert "x-budgetware-disable" not in request.headers


def test_pass_through_headers_apply_to_their_own_request_only(
    gateway: LiteLLMProxy, upstream: FakeProvider
) -> None:
    tight = {"x-budgetware-batch-budget": "8000"}
    pass_through_messages(gateway, drivers.anthropic_messages(BIG), tight)
    assert sum(map(len, upstream_tool_texts(only_request(upstream)))) <= 8000
    upstream.clear()
    pass_through_messages(gateway, drivers.anthropic_messages(BIG))
    sent = sum(map(len, upstream_tool_texts(only_request(upstream))))
    assert 8000 < sent <= BUDGET


@pytest.mark.parametrize(("key", "budget"), [("sk-key-8000", 8000), ("sk-team-6000", 6000)])
def test_pass_through_key_and_team_metadata_budgets_apply(
    gateway: LiteLLMProxy, upstream: FakeProvider, key: str, budget: int
) -> None:
    pass_through_messages(gateway, drivers.anthropic_messages(BIG), key=key)
    assert sum(map(len, upstream_tool_texts(only_request(upstream)))) <= budget


def test_streamed_pass_through_passes_through_and_its_request_is_bounded(
    gateway: LiteLLMProxy, upstream: FakeProvider
) -> None:
    import anthropic

    reply = "streamed reply, word by word: " + "lorem ipsum " * 30
    upstream.reply = lambda api, body: Reply(reply)
    with (
        anthropic.Anthropic(
            base_url=gateway.url + "/anthropic", api_key=gateway.master_key, max_retries=0
        ) as client,
        client.messages.stream(
            model=MODEL, max_tokens=64, messages=drivers.anthropic_messages(BIG)
        ) as stream,
    ):
        text = "".join(stream.text_stream)
    assert text == reply
    request = only_request(upstream)
    assert request.json()["stream"] is True
    assert sum(map(len, upstream_tool_texts(request))) <= BUDGET


# --- every pass-through route of a model API litellm ships, that can reach a local provider

ROUTES = {
    "openai chat": ("/openai/v1/chat/completions", _bodies.openai_chat, "/v1/chat/completions"),
    # /openai/v1/responses is litellm's own Responses route (the unified one, above).
    "openai responses": (
        "/openai_passthrough/v1/responses",
        _bodies.openai_responses,
        "/v1/responses",
    ),
    "anthropic": ("/anthropic/v1/messages", _bodies.anthropic, "/v1/messages"),
    "gemini": (
        "/gemini/v1beta/models/gemini-2.5-flash:generateContent",
        _bodies.gemini,
        "/v1beta/models/gemini-2.5-flash:generateContent",
    ),
    "cohere v2": ("/cohere/v2/chat", _bodies.cohere, "/v2/chat"),
}


@pytest.mark.parametrize("route", ROUTES)
def test_each_model_pass_through_route_is_bounded_and_keeps_our_headers(
    gateway: LiteLLMProxy, upstream: FakeProvider, route: str
) -> None:
    path, build, upstream_path = ROUTES[route]
    first, second = big_results(3, 40_000), big_results(2, 30_000)
    body, slots = build([first, second])
    # The Gemini route takes the proxy key where Google's API takes its key.
    key = gateway.master_key
    auth = {"x-goog-api-key": key} if route == "gemini" else {"authorization": f"Bearer {key}"}
    with httpx.Client(trust_env=False, timeout=60) as http:
        response = http.post(
            gateway.url + path, json=body, headers={**auth, "x-budgetware-batch-budget": "9000"}
        )
    assert response.status_code == 200, response.text
    (request,) = model_requests(upstream)
    assert request.route == upstream_path
    sent = request.json()
    for batch, originals in zip(slots, (first, second)):
        texts = [_bodies.get(sent, path) for path in batch]
        assert sum(map(len, texts)) <= 9000
        for i, (text, original) in enumerate(zip(texts, originals)):
            assert f"HEAD-{i}:" in text
            assert text != original
    assert not [name for name in request.headers if name.startswith("x-budgetware-")]


def test_a_pass_through_route_that_is_no_model_api_passes_through(
    gateway: LiteLLMProxy, baseline: LiteLLMProxy, upstream: FakeProvider
) -> None:
    # The Anthropic route forwards any path: one budgetware does not know is left alone.
    body = {"messages": drivers.anthropic_messages(BIG), "model": MODEL}
    statuses = []
    sent = []
    for proxy in (gateway, baseline):
        upstream.clear()
        with httpx.Client(trust_env=False, timeout=60) as http:
            response = http.post(
                proxy.url + "/anthropic/v1/not-messages",
                json=body,
                headers={"authorization": f"Bearer {proxy.master_key}"},
            )
        statuses.append(response.status_code)
        sent.append([r.body for r in upstream.requests])
    assert statuses[0] == statuses[1]
    assert sent[0] == sent[1]
