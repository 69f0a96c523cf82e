"""The history budget in LiteLLM: key and team metadata in the proxy hook, and two real
LiteLLM Proxy replicas (the session's pair on a local store, with a key that sets the
history budget) taking turns in one conversation: the same bytes from either, each request
extending the one before except at a step, every stub's reference readable."""

from __future__ import annotations

import itertools
import json
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from http_helpers import one_breakpoint
from litellm_proxy_helpers import proxy_data, tool_texts
from proxy_replicas import Replicas
from proxy_server_helpers import chat, messages_call, only_request
from testing.litellm_proxy import LiteLLMProxy
from wire._bodies import anthropic, openai_chat

from budgetware.core.config import BudgetConfig
from budgetware.core.notice import is_masked
from budgetware.retrieval.read import read_artifact
from budgetware.testing import FakeProvider

if TYPE_CHECKING:
    from litellm.proxy._types import UserAPIKeyAuth

TURNS = 10
HISTORY = 12_000


def conversation() -> list[list[str]]:
    return [
        [
            f"$ pytest -k case_{t}_{i}\n" + f"tests/test_{t}.py::test_{i} PASSED\n" * (40 + 30 * i)
            for i in range(1 + t % 2)
        ]
        for t in range(TURNS)
    ]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b["text"] for b in content if b.get("type") == "text")


# --- the proxy hook -------------------------------------------------------------------------


def _key(**fields: Any) -> UserAPIKeyAuth:
    from litellm.proxy._types import UserAPIKeyAuth

    return UserAPIKeyAuth(**fields)


async def _hook(callback: Any, data: dict[str, Any], key: UserAPIKeyAuth) -> Any:
    from litellm.caching.dual_cache import DualCache

    return await callback.async_pre_call_hook(key, DualCache(), data, "acompletion")


def _masked_count(data: dict[str, Any]) -> int:
    return sum(is_masked((_text(t),)) for t in tool_texts("messages", data["messages"]))


def _history_total(data: dict[str, Any]) -> int:
    return sum(len(_text(t)) for t in tool_texts("messages", data["messages"]))


async def test_key_and_team_metadata_set_the_history_budget(artifact_dir: Path) -> None:
    from budgetware.integrations.litellm import budget_callback

    callback = budget_callback(config=BudgetConfig(artifact_dir=artifact_dir))
    messages = openai_chat(conversation())[0]["messages"]
    data = proxy_data("messages", messages)
    # No history budget: the conversation goes as it came.
    assert await _hook(callback, data, _key()) is data
    team = await _hook(
        callback, data, _key(team_metadata={"budgetware_history_budget": str(HISTORY)})
    )
    assert _masked_count(team) > 0
    texts = tool_texts("messages", team["messages"])
    assert sum(len(_text(t)) for t in texts) <= HISTORY
    # The key's metadata wins over the team's: 0 turns the team's history budget off...
    key = _key(
        metadata={"budgetware_history_budget": 0, "budgetware_history_step": 0.5},
        team_metadata={"budgetware_history_budget": HISTORY},
    )
    assert (await _hook(callback, proxy_data("messages", messages), key))["messages"] == messages
    # ...and where the operator set none, a client may set one (client_overrides: clamp).
    headers = {"x-budgetware-history-budget": str(HISTORY * 3 // 4)}
    result = await _hook(callback, proxy_data("messages", messages, headers=headers), key)
    assert _history_total(result) <= HISTORY * 3 // 4


@pytest.mark.parametrize(
    "headers",
    [
        {"x-budgetware-disable": "1"},
        {"x-budgetware-history-budget": "0"},
        {"x-budgetware-history-budget": str(10**9)},
        {"x-budgetware-history-keep-batches": "50"},
    ],
)
async def test_by_default_a_client_cannot_loosen_the_operators_history_budget(
    artifact_dir: Path, headers: dict[str, str]
) -> None:
    from budgetware.integrations.litellm import budget_callback

    config = BudgetConfig(artifact_dir=artifact_dir, history_budget=HISTORY)
    callback = budget_callback(config=config)
    data = proxy_data("messages", openai_chat(conversation())[0]["messages"], headers=headers)
    result = await _hook(callback, data, _key())
    assert _history_total(result) <= HISTORY
    assert _masked_count(result) > 0


async def test_a_client_may_tighten_the_history_budget_or_set_one(artifact_dir: Path) -> None:
    from budgetware.integrations.litellm import budget_callback

    messages = openai_chat(conversation())[0]["messages"]
    tighter = {"x-budgetware-history-budget": str(HISTORY * 3 // 4)}
    for operator in (HISTORY, None):  # a history budget of the operator's, or none
        config = BudgetConfig(artifact_dir=artifact_dir, history_budget=operator)
        callback = budget_callback(config=config)
        result = await _hook(callback, proxy_data("messages", messages, headers=tighter), _key())
        assert _history_total(result) <= HISTORY * 3 // 4


async def test_a_clients_unit_converts_the_operators_history_budget(artifact_dir: Path) -> None:
    from budgetware.integrations.litellm import budget_callback

    callback = budget_callback(
        config=BudgetConfig(artifact_dir=artifact_dir, history_budget=HISTORY)
    )
    headers = {"x-budgetware-unit": "tokens"}  # 12,000 chars of history: 3,000 tokens at most
    data = proxy_data("messages", openai_chat(conversation())[0]["messages"], headers=headers)
    result = await _hook(callback, data, _key())
    assert _masked_count(result) > 0
    assert _history_total(result) <= HISTORY


async def test_auto_looks_up_the_model_the_request_names(artifact_dir: Path) -> None:
    from budgetware.integrations.litellm import budget_callback

    callback = budget_callback(config=BudgetConfig(artifact_dir=artifact_dir))
    # gpt-4o-mini: 128k tokens of input, 256k chars of history.
    big = [[f"{t}: " + "x" * 60_000] for t in range(6)]
    data = proxy_data("messages", openai_chat(big)[0]["messages"])
    data["model"] = "gpt-4o-mini"
    bounded = await _hook(callback, data, _key(metadata={"budgetware_history_budget": "auto"}))
    texts = tool_texts("messages", bounded["messages"])
    assert sum(len(_text(t)) for t in texts) <= 128_000 * 4 // 2
    assert _masked_count(bounded) >= 1
    assert bounded["model"] == "gpt-4o-mini"


@pytest.mark.filterwarnings("ignore:Router.get_model_list is deprecated:DeprecationWarning")
@pytest.mark.parametrize("lookup", ["registry", "get_model_list"])  # litellm 1.110 on, before
async def test_auto_looks_up_the_models_behind_a_proxy_model_name(
    artifact_dir: Path, monkeypatch: pytest.MonkeyPatch, lookup: str
) -> None:
    from litellm import Router

    from budgetware.integrations.litellm import budget_callback

    # The proxy's router, as its server module holds it (importing that module takes
    # seconds: a real proxy runs the same lookup in the replicas' test below).
    def deployment(name: str, model: str) -> dict[str, Any]:
        return {"model_name": name, "litellm_params": {"model": model, "api_key": "sk-x"}}

    router = Router(
        model_list=[
            deployment("team-model", "anthropic/claude-haiku-4-5"),  # 200k tokens
            deployment("team-model", "openai/gpt-4o-mini"),  # 128k: the smaller one counts
            deployment("fine-tune", "openai/ft:my-own-model"),
        ]
    )
    if lookup == "get_model_list":  # a router before litellm 1.110 has no registry()
        router = types.SimpleNamespace(get_model_list=router.get_model_list)
    monkeypatch.setitem(
        sys.modules, "litellm.proxy.proxy_server", types.SimpleNamespace(llm_router=router)
    )
    callback = budget_callback(config=BudgetConfig(artifact_dir=artifact_dir))
    key = _key(metadata={"budgetware_history_budget": "auto"})
    big = [[f"{t}: " + "x" * 60_000] for t in range(6)]  # 360k chars
    for name, masked in (("team-model", True), ("fine-tune", False)):
        data = proxy_data("messages", openai_chat(big)[0]["messages"])
        data["model"] = name
        bounded = await _hook(callback, data, key)
        assert bounded["model"] == name
        if masked:
            assert _history_total(bounded) <= 128_000 * 4 // 2 < 360_000
        else:  # a model no map knows: left unbounded (and the logger says so)
            assert bounded is data


# --- two proxy replicas ---------------------------------------------------------------------


# The replicas' key: a batch budget of 8,000 chars and a history budget of HISTORY.
HISTORY_KEY = "sk-key-history"


def _send(
    route: str, proxy: LiteLLMProxy, messages: list[dict[str, Any]], fp: FakeProvider
) -> Any:
    fp.clear()
    if route == "chat":
        assert chat(proxy, messages, key=HISTORY_KEY) == "ok"
    else:
        assert messages_call(proxy, messages, key=HISTORY_KEY) == "ok"
    return only_request(fp)


@pytest.mark.sdk
@pytest.mark.slow
@pytest.mark.xdist_group("litellm_proxy")
@pytest.mark.parametrize(("route", "build"), [("chat", openai_chat), ("messages", anthropic)])
def test_replicas_taking_turns_send_the_same_bytes_and_extend_each_other(
    local_replicas: Replicas,
    upstream: FakeProvider,
    route: str,
    build: Callable[..., Any],
) -> None:
    proxies = local_replicas.proxies
    batches = conversation()
    sent: list[list[str]] = []
    for n in range(1, TURNS + 1):
        messages = one_breakpoint(build(batches[:n])[0]["messages"])
        first = _send(route, proxies[n % 2], messages, upstream)
        again = _send(route, proxies[1 - n % 2], messages, upstream)
        assert again.body == first.body
        body = first.json()
        field = "messages"
        texts = [_text(t) for t in tool_texts(field, body[field])]
        assert len(texts) == sum(map(len, batches[:n]))
        assert sum(map(len, texts)) <= HISTORY
        sent.append(texts)
    steps = 0
    for before, after in itertools.pairwise(sent):
        if after[: len(before)] != before:
            steps += 1
            changed = [(old, new) for old, new in zip(before, after) if old != new]
            assert all(is_masked((new,)) and not is_masked((old,)) for old, new in changed)
    assert steps >= 1
    # Every stub names an artifact of the shared store that holds the output in full.
    originals = [text for batch in batches for text in batch]
    config = BudgetConfig(artifact_dir=local_replicas.store)
    read = 0
    for original, text in zip(originals, sent[-1]):
        if is_masked((text,)):
            ref = text.split("Full output: ")[1].rstrip("]")
            assert read_artifact(ref, limit=len(original) + 1, config=config) == original
            read += 1
    assert read >= 2
    assert json.dumps(sent[-1]).count("Full output: ") >= read


@pytest.mark.sdk
@pytest.mark.xdist_group("litellm_proxy")
def test_auto_behind_a_proxy_takes_the_window_of_the_model_the_name_routes_to(
    local_replicas: Replicas, upstream: FakeProvider
) -> None:
    # gpt-fake routes to openai/gpt-4o-mini: 128k tokens of input, 256k chars of history.
    big = [[f"{t}: " + "x" * 60_000] for t in range(6)]
    upstream.clear()
    messages = openai_chat(big)[0]["messages"]
    assert chat(local_replicas.proxies[0], messages, key="sk-key-history-auto") == "ok"
    texts = [_text(t) for t in tool_texts("messages", only_request(upstream).json()["messages"])]
    assert sum(map(len, texts)) <= 128_000 * 4 // 2 < 360_000
    assert sum(is_masked((text,)) for text in texts) >= 1
