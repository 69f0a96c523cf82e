"""A real LiteLLM Proxy with budgetware's callback, driven by the real openai and anthropic SDKs.

Every assertion is on what the fake provider received behind the proxy, byte for byte.
One proxy pair (with the callback and without) serves the whole session: see conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litellm_proxy_helpers import BUDGET, assert_bounded, big_results, small_results
from proxy_server_helpers import (
    ANTHROPIC_MODEL,
    OPENAI_MODEL,
    anthropic_client,
    chat,
    messages_call,
    new_proxy,
    only_request,
    openai_client,
    proxy_config,
    proxy_env,
    responses_call,
    upstream_tool_texts,
)
from testing import drivers
from testing.litellm_proxy import LiteLLMProxy, LiteLLMProxyError

from budgetware.testing import FakeProvider, Reply

# One worker starts the session's proxies and runs every test that uses them.
pytestmark = [pytest.mark.sdk, pytest.mark.slow, pytest.mark.xdist_group("litellm_proxy")]

SIZE = 60_000
BIG = big_results(4, SIZE)


def two_batches(first: list[str], second: list[str]) -> list[dict[str, Any]]:
    """A chat with two tool-call turns, each followed by its own batch of results."""
    later = drivers.openai_chat_messages(second)[1:]
    for message in later:
        if message["role"] == "assistant":
            for call in message["tool_calls"]:
                call["id"] = "second_" + call["id"]
        else:
            message["tool_call_id"] = "second_" + message["tool_call_id"]
    return [*drivers.openai_chat_messages(first), *later]


# --- bounding -------------------------------------------------------------------------------


def test_chat_tool_results_reach_the_provider_bounded(
    gateway: LiteLLMProxy,
    baseline: LiteLLMProxy,
    upstream: FakeProvider,
    gateway_artifact_dir: Path,
) -> None:
    messages = drivers.openai_chat_messages(BIG)
    assert chat(gateway, messages) == "ok"
    request = only_request(upstream)
    assert request.route == "/v1/chat/completions"
    assert_bounded(upstream_tool_texts(request), BIG, gateway_artifact_dir)
    # Everything but the tool results is as the proxy sends it without budgetware.
    upstream.clear()
    chat(baseline, messages)
    without = only_request(upstream).json()
    assert upstream_tool_texts(only_request(upstream)) == BIG
    bounded = request.json()
    assert bounded["messages"][:2] == without["messages"][:2]
    assert {k: v for k, v in bounded.items() if k != "messages"} == {
        k: v for k, v in without.items() if k != "messages"
    }


def test_each_batch_is_bounded_on_its_own(gateway: LiteLLMProxy, upstream: FakeProvider) -> None:
    first, second = big_results(3, 40_000), big_results(3, 41_000)
    chat(gateway, two_batches(first, second))
    sent = upstream_tool_texts(only_request(upstream))
    assert len(sent) == 6
    assert sum(map(len, sent[:3])) <= BUDGET
    assert sum(map(len, sent[3:])) <= BUDGET
    # Per batch, not per request: together they hold more than one budget.
    assert sum(map(len, sent)) > BUDGET


def test_anthropic_messages_route_bounds_tool_result_blocks(
    gateway: LiteLLMProxy, upstream: FakeProvider, gateway_artifact_dir: Path
) -> None:
    assert messages_call(gateway, drivers.anthropic_messages(BIG)) == "ok"
    request = only_request(upstream)
    assert request.route == "/v1/messages"
    assert_bounded(upstream_tool_texts(request), BIG, gateway_artifact_dir)


def test_chat_to_an_anthropic_model_is_bounded_before_translation(
    gateway: LiteLLMProxy, upstream: FakeProvider, gateway_artifact_dir: Path
) -> None:
    chat(gateway, drivers.openai_chat_messages(BIG), model=ANTHROPIC_MODEL)
    request = only_request(upstream)
    assert request.route == "/v1/messages"
    assert_bounded(upstream_tool_texts(request), BIG, gateway_artifact_dir)


def test_responses_route_bounds_function_call_outputs(
    gateway: LiteLLMProxy, upstream: FakeProvider, gateway_artifact_dir: Path
) -> None:
    with openai_client(gateway) as client:
        reply = client.responses.create(
            model=OPENAI_MODEL,
            input=drivers.openai_responses_input(BIG),
        )
    assert reply.output_text == "ok"
    request = only_request(upstream)
    assert request.route == "/v1/responses"
    assert_bounded(upstream_tool_texts(request), BIG, gateway_artifact_dir)


def test_under_budget_request_reaches_the_provider_as_without_budgetware(
    gateway: LiteLLMProxy, baseline: LiteLLMProxy, upstream: FakeProvider
) -> None:
    messages = drivers.openai_chat_messages(small_results())
    chat(gateway, messages)
    through_gateway = only_request(upstream)
    upstream.clear()
    chat(baseline, messages)
    without = only_request(upstream)
    assert upstream_tool_texts(through_gateway) == small_results()
    assert through_gateway.body == without.body


def test_under_budget_anthropic_request_reaches_the_provider_as_without_budgetware(
    gateway: LiteLLMProxy, baseline: LiteLLMProxy, upstream: FakeProvider
) -> None:
    messages = drivers.anthropic_messages(small_results())
    messages_call(gateway, messages)
    through_gateway = only_request(upstream)
    upstream.clear()
    messages_call(baseline, messages)
    assert through_gateway.body == only_request(upstream).body


# --- headers --------------------------------------------------------------------------------


def send_route(
    route: str, proxy: LiteLLMProxy, results: list[str], headers: dict[str, str] | None = None
) -> str:
    """``results`` as one batch through the real SDK of ``route``: chat, messages, responses."""
    if route == "chat":
        return chat(proxy, drivers.openai_chat_messages(results), headers=headers)
    if route == "messages":
        return messages_call(proxy, drivers.anthropic_messages(results), headers)
    return responses_call(proxy, drivers.openai_responses_input(results), headers)


def test_under_budget_responses_request_reaches_the_provider_as_without_budgetware(
    gateway: LiteLLMProxy, baseline: LiteLLMProxy, upstream: FakeProvider
) -> None:
    assert send_route("responses", gateway, small_results()) == "ok"
    through_gateway = only_request(upstream)
    assert upstream_tool_texts(through_gateway) == small_results()
    upstream.clear()
    send_route("responses", baseline, small_results())
    assert through_gateway.body == only_request(upstream).body


@pytest.mark.parametrize("route", ["chat", "messages", "responses"])
def test_budget_header_is_honored_and_never_forwarded(
    gateway: LiteLLMProxy, upstream: FakeProvider, route: str
) -> None:
    headers = {"x-budgetware-batch-budget": "8000", "x-request-tag": "t-1"}
    send_route(route, gateway, BIG, headers)
    request = only_request(upstream)
    assert sum(map(len, upstream_tool_texts(request))) <= 8000
    # The proxy forwards the client's x-* headers (the config says so) but not ours.
    assert request.headers.get("x-request-tag") == "t-1"
    assert not [name for name in request.headers if name.startswith("x-budgetware-")]


@pytest.mark.parametrize("route", ["chat", "responses"])
def test_budgetware_headers_in_the_body_extra_headers_never_reach_the_provider(
    gateway: LiteLLMProxy, upstream: FakeProvider, route: str
) -> None:
    # litellm sends a body's `extra_headers` to the provider as headers: budgetware's own
    # are settings for the gateway (read as the client's, under its policy), never sent on.
    own = {"x-budgetware-batch-budget": "8000", "x-request-tag": "t-2"}
    with openai_client(gateway) as client:
        if route == "chat":
            client.chat.completions.create(
                model=OPENAI_MODEL,
                messages=drivers.openai_chat_messages(BIG),
                extra_body={"extra_headers": own},
            )
        else:
            client.responses.create(
                model=OPENAI_MODEL,
                input=drivers.openai_responses_input(BIG),
                extra_body={"extra_headers": own},
            )
    request = only_request(upstream)
    assert not [name for name in request.headers if name.startswith("x-budgetware-")]
    assert request.headers.get("x-request-tag") == "t-2"  # the others go on, as litellm does
    assert sum(map(len, upstream_tool_texts(request))) <= 8000


@pytest.mark.parametrize("route", ["chat", "messages", "responses"])
def test_by_default_a_client_cannot_switch_bounding_off_or_loosen_it(
    gateway: LiteLLMProxy, upstream: FakeProvider, route: str
) -> None:
    for asked in ({"x-budgetware-disable": "1"}, {"x-budgetware-batch-budget": "inf"}):
        upstream.clear()
        send_route(route, gateway, BIG, asked)
        request = only_request(upstream)
        assert sum(map(len, upstream_tool_texts(request))) <= BUDGET
        assert not [name for name in request.headers if name.startswith("x-budgetware-")]
    assert "headers to the operator's bounds (client_overrides is 'clamp')" in gateway.log_since(0)


def test_the_operator_may_let_clients_switch_bounding_off_in_the_proxy_config(
    production: LiteLLMProxy, upstream: FakeProvider
) -> None:
    # The production proxy's config.yaml sets client_overrides: allow (conftest.py).
    send_route("chat", production, BIG, {"x-budgetware-disable": "1"})
    request = only_request(upstream)
    assert upstream_tool_texts(request) == BIG
    assert "x-budgetware-disable" not in request.headers
    assert "headers: allow (client_overrides)" in production.log_since(0)


def test_unit_header_is_honored(gateway: LiteLLMProxy, upstream: FakeProvider) -> None:
    results = [f"RESULT-{i}: " + "é" * 20_000 for i in range(3)]
    chat(
        gateway,
        drivers.openai_chat_messages(results),
        headers={"x-budgetware-batch-budget": "30000", "x-budgetware-unit": "utf8_bytes"},
    )
    sent = upstream_tool_texts(only_request(upstream))
    assert sum(len(text.encode()) for text in sent) <= 30_000
    assert sum(map(len, sent)) > 15_000  # measured in bytes, not characters


# --- keys and teams -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "budget"),
    [("sk-key-8000", 8000), ("sk-team-6000", 6000)],
)
def test_key_and_team_metadata_budgets_apply(
    gateway: LiteLLMProxy, upstream: FakeProvider, key: str, budget: int
) -> None:
    chat(gateway, drivers.openai_chat_messages(BIG), key=key)
    sent = upstream_tool_texts(only_request(upstream))
    assert sum(map(len, sent)) <= budget


def test_key_metadata_disable_wins_over_the_team_budget(
    gateway: LiteLLMProxy, upstream: FakeProvider
) -> None:
    chat(gateway, drivers.openai_chat_messages(BIG), key="sk-key-off-team-6000")
    assert upstream_tool_texts(only_request(upstream)) == BIG


def test_key_metadata_wins_over_a_request_header(
    gateway: LiteLLMProxy, upstream: FakeProvider
) -> None:
    # What the proxy's admin set on the key is narrower than what a client asks.
    chat(
        gateway,
        drivers.openai_chat_messages(BIG),
        key="sk-key-8000",
        headers={"x-budgetware-disable": "1"},
    )
    assert sum(map(len, upstream_tool_texts(only_request(upstream)))) <= 8000


# --- streaming ------------------------------------------------------------------------------

STREAMED = "streamed reply, word by word: " + "lorem ipsum " * 30


@pytest.fixture
def long_reply(upstream: FakeProvider) -> FakeProvider:
    upstream.reply = lambda api, body: Reply(STREAMED)
    return upstream


def test_streamed_chat_passes_through_and_its_request_is_bounded(
    gateway: LiteLLMProxy, long_reply: FakeProvider
) -> None:
    with openai_client(gateway) as client:
        stream = client.chat.completions.create(
            model=OPENAI_MODEL,
            messages=drivers.openai_chat_messages(BIG),
            stream=True,
        )
        deltas = [c.choices[0].delta.content or "" for c in stream if c.choices]
    assert "".join(deltas) == STREAMED
    request = only_request(long_reply)
    assert request.json()["stream"] is True
    assert sum(map(len, upstream_tool_texts(request))) <= BUDGET


def test_streamed_anthropic_messages_pass_through_and_the_request_is_bounded(
    gateway: LiteLLMProxy, long_reply: FakeProvider
) -> None:
    with (
        anthropic_client(gateway) as client,
        client.messages.stream(
            model=ANTHROPIC_MODEL,
            max_tokens=64,
            messages=drivers.anthropic_messages(BIG),
        ) as stream,
    ):
        text = "".join(stream.text_stream)
    assert text == STREAMED
    request = only_request(long_reply)
    assert request.json()["stream"] is True
    assert sum(map(len, upstream_tool_texts(request))) <= BUDGET


# --- failures -------------------------------------------------------------------------------


def anthropic_call(base_url: str, key: str, messages: list[dict[str, Any]]) -> str:
    """The real anthropic SDK at ``base_url`` (the proxy's unified or pass-through route)."""
    import anthropic

    with anthropic.Anthropic(base_url=base_url, api_key=key, max_retries=0) as client:
        reply = client.messages.create(model=ANTHROPIC_MODEL, max_tokens=64, messages=messages)
    return "".join(block.text for block in reply.content if block.type == "text")


@pytest.fixture
def unwritable_store(gateway_artifact_dir: Path) -> Iterator[Path]:
    """The gateway's artifact directory replaced by a file, restored after the test.

    (File modes would not do: the suite may run as root.)
    """
    aside = gateway_artifact_dir.with_name("artifacts-aside")
    if gateway_artifact_dir.exists():
        gateway_artifact_dir.rename(aside)
    gateway_artifact_dir.write_text("not a directory")
    yield gateway_artifact_dir
    gateway_artifact_dir.unlink()
    if aside.exists():
        aside.rename(gateway_artifact_dir)


@pytest.mark.parametrize("route", ["chat", "messages", "anthropic pass-through"])
def test_an_unwritable_store_never_fails_a_request(
    gateway: LiteLLMProxy, upstream: FakeProvider, unwritable_store: Path, route: str
) -> None:
    # New texts: the proxy has not persisted (and remembered) them before.
    results = [f"unwritable-{i}: {route}: " + "z" * SIZE for i in range(3)]
    mark = gateway.log_mark()
    if route == "chat":
        reply = chat(gateway, drivers.openai_chat_messages(results))
    else:
        base = gateway.url + ("/anthropic" if route == "anthropic pass-through" else "")
        reply = anthropic_call(base, gateway.master_key, drivers.anthropic_messages(results))
    assert reply == "ok"
    sent = upstream_tool_texts(only_request(upstream))
    # Still bounded, naming no artifact that does not exist.
    assert sum(map(len, sent)) <= BUDGET
    assert not any("Full output:" in text for text in sent)
    log = gateway.log_since(mark)
    assert "could not persist a tool output" in log
    # Sizes and types only: no tool output, no path.
    assert "unwritable-0" not in log
    assert str(unwritable_store) not in log


# --- setup ----------------------------------------------------------------------------------


def test_the_proxy_log_says_budgetware_is_loaded_and_how(gateway: LiteLLMProxy) -> None:
    import budgetware

    log = gateway.log_since(0)
    assert (
        f"budgetware {budgetware.__version__} loaded: bounding tool results of this "
        f"LiteLLM Proxy's requests, batch budget {BUDGET:,} chars; clients' x-budgetware-* "
        "headers: clamp (client_overrides)"
    ) in log
    assert log.count("budgetware " + budgetware.__version__ + " loaded") == 1


def test_a_bad_setting_stops_the_proxy_at_start_naming_the_variable(
    proxy_upstream: FakeProvider, tmp_path: Path
) -> None:
    # Never a proxy that runs without budgetware, or fails requests: it does not start.
    proxy = new_proxy(
        tmp_path / "misconfigured",
        proxy_config(proxy_upstream.url),
        proxy_env(tmp_path / "artifacts", batch_budget="lots"),
    )
    with pytest.raises(LiteLLMProxyError) as failed:
        proxy.start()
    # (A warm start fails as the litellm command does: the proxy's exit and its log.)
    message = str(failed.value)
    assert "exited with code" in message
    assert "before it answered" in message
    assert "ConfigError" in message
    assert "BUDGETWARE_BATCH_BUDGET" in message
    assert not proxy.running
