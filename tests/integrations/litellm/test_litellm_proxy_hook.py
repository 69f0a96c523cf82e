"""The proxy hook (``async_pre_call_hook``) on request data shaped as the proxy makes it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from litellm.caching.dual_cache import DualCache
from litellm.proxy._types import UserAPIKeyAuth
from litellm_proxy_helpers import (
    BUDGET,
    assert_bounded,
    big_results,
    gemini_contents,
    proxy_data,
    small_results,
    tool_texts,
)
from testing import drivers

from budgetware.core.config import BudgetConfig
from budgetware.core.errors import BudgetwareWarning

BIG = big_results()


async def _hook(
    callback: Any,
    data: dict[str, Any],
    call_type: str = "acompletion",
    key: UserAPIKeyAuth | None = None,
) -> Any:
    return await callback.async_pre_call_hook(
        key or UserAPIKeyAuth(), DualCache(), data, call_type
    )


def _chat(headers: dict[str, str] | None = None) -> dict[str, Any]:
    return proxy_data("messages", drivers.openai_chat_messages(BIG), headers=headers)


def _within_budget(result: dict[str, Any], budget: int = BUDGET) -> bool:
    texts = tool_texts("messages", result["messages"])
    return sum(len(t) for t in texts) <= budget


async def test_oversized_chat_batch_becomes_previews_within_the_budget(
    callback: Any, artifact_dir: Path
) -> None:
    data = _chat()
    result = await _hook(callback, data)
    assert result is not data
    assert_bounded(tool_texts("messages", result["messages"]), BIG, artifact_dir)


async def test_bounded_request_keeps_every_other_field(callback: Any) -> None:
    data = _chat()
    result = await _hook(callback, data)
    assert {k: v for k, v in result.items() if k != "messages"} == {
        k: v for k, v in data.items() if k != "messages"
    }
    assert result["litellm_logging_obj"] is data["litellm_logging_obj"]
    assert result["messages"][:2] == data["messages"][:2]


async def test_under_budget_request_is_returned_as_the_same_object(callback: Any) -> None:
    data = proxy_data("messages", drivers.openai_chat_messages(small_results()))
    assert await _hook(callback, data) is data


async def test_request_header_budget_applies(callback: Any) -> None:
    result = await _hook(callback, _chat({"x-budgetware-batch-budget": "8000"}))
    assert _within_budget(result, 8000)


async def test_request_header_disable_leaves_the_request_unbounded(callback: Any) -> None:
    data = _chat({"x-budgetware-disable": "1"})
    assert await _hook(callback, data) is data


async def test_headers_copied_into_metadata_are_read_without_proxy_server_request(
    callback: Any,
) -> None:
    data = _chat({"x-budgetware-disable": "1"})
    del data["proxy_server_request"]
    assert await _hook(callback, data) is data


async def test_key_metadata_budget_overrides_the_callback_config(artifact_dir: Path) -> None:
    from budgetware.integrations.litellm import budget_callback

    lenient = budget_callback(config=BudgetConfig(batch_budget=10**9, artifact_dir=artifact_dir))
    key = UserAPIKeyAuth(metadata={"budgetware_batch_budget": 8000})
    result = await _hook(lenient, _chat(), key=key)
    assert _within_budget(result, 8000)


async def test_key_metadata_disable_leaves_the_request_unbounded(callback: Any) -> None:
    data = _chat()
    key = UserAPIKeyAuth(metadata={"budgetware_disable": True})
    assert await _hook(callback, data, key=key) is data


async def test_team_metadata_budget_applies(callback: Any) -> None:
    key = UserAPIKeyAuth(team_metadata={"budgetware_batch_budget": "8000"})
    result = await _hook(callback, _chat(), key=key)
    assert _within_budget(result, 8000)


async def test_key_metadata_wins_over_team_metadata(callback: Any) -> None:
    data = _chat()
    key = UserAPIKeyAuth(
        metadata={"budgetware_disable": True}, team_metadata={"budgetware_batch_budget": 8000}
    )
    assert await _hook(callback, data, key=key) is data


async def test_request_header_wins_over_key_metadata(callback: Any) -> None:
    key = UserAPIKeyAuth(metadata={"budgetware_disable": True})
    result = await _hook(callback, _chat({"x-budgetware-batch-budget": "8000"}), key=key)
    assert _within_budget(result, 8000)


@pytest.fixture
def proxy_log(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> pytest.LogCaptureFixture:
    """The budgetware log, with no message counted as already logged."""
    from budgetware.integrations.litellm import _callback

    monkeypatch.setattr(_callback, "_LOGGED", set())
    caplog.set_level(logging.WARNING, logger="budgetware")
    return caplog


# The LiteLLM Proxy prints no warning (it replaces warnings.showwarning with a function that
# drops them): the proxy hook logs what it ignores instead.


async def test_invalid_key_metadata_is_logged_naming_it_and_ignored(
    callback: Any, proxy_log: pytest.LogCaptureFixture
) -> None:
    key = UserAPIKeyAuth(metadata={"budgetware_batch_budget": "lots"})
    result = await _hook(callback, _chat(), key=key)
    assert _within_budget(result, BUDGET)
    assert "BudgetwareWarning: budgetware: ignoring key metadata 'budgetware_batch_budget'" in (
        proxy_log.text
    )


async def test_invalid_team_metadata_is_logged_naming_it_and_ignored(
    callback: Any, proxy_log: pytest.LogCaptureFixture
) -> None:
    key = UserAPIKeyAuth(team_metadata={"budgetware_unit": ["chars"]})
    result = await _hook(callback, _chat(), key=key)
    assert _within_budget(result, BUDGET)
    assert "ignoring team metadata 'budgetware_unit'" in proxy_log.text


async def test_invalid_request_header_is_logged_naming_it_and_ignored(
    callback: Any, proxy_log: pytest.LogCaptureFixture
) -> None:
    data = _chat({"x-budgetware-batch-budget": "lots"})
    result = await _hook(callback, data)
    assert _within_budget(result, BUDGET)
    assert (
        "BudgetwareWarning: budgetware: ignoring request header 'x-budgetware-batch-budget'"
        in (proxy_log.text)
    )


async def test_the_same_invalid_value_is_logged_once(
    callback: Any, proxy_log: pytest.LogCaptureFixture
) -> None:
    for _ in range(3):
        await _hook(callback, _chat({"x-budgetware-unit": "furlongs"}))
    await _hook(callback, _chat({"x-budgetware-unit": "leagues"}))
    lines = [r.getMessage() for r in proxy_log.records]
    assert len([line for line in lines if "furlongs" in line]) == 1
    assert len([line for line in lines if "leagues" in line]) == 1


def test_metadata_overrides_outside_the_proxy_hook_warn() -> None:
    from budgetware.integrations.litellm._callback import metadata_overrides

    with pytest.warns(BudgetwareWarning, match="key metadata 'budgetware_disable'"):
        assert metadata_overrides({"budgetware_disable": "maybe"}, "key metadata") == {}


async def test_anthropic_messages_call_type_bounds_tool_result_blocks(
    callback: Any, artifact_dir: Path
) -> None:
    data = proxy_data("messages", drivers.anthropic_messages(BIG))
    result = await _hook(callback, data, "anthropic_messages")
    assert_bounded(tool_texts("messages", result["messages"]), BIG, artifact_dir)


async def test_responses_call_type_bounds_function_call_outputs(
    callback: Any, artifact_dir: Path
) -> None:
    data = proxy_data("input", drivers.openai_responses_input(BIG))
    result = await _hook(callback, data, "aresponses")
    assert_bounded(tool_texts("input", result["input"]), BIG, artifact_dir)


async def test_generate_content_call_type_bounds_function_responses(
    callback: Any, artifact_dir: Path
) -> None:
    data = proxy_data("contents", gemini_contents(BIG))
    result = await _hook(callback, data, "agenerate_content")
    assert_bounded(tool_texts("contents", result["contents"]), BIG, artifact_dir)


async def test_unknown_call_type_passes_through(callback: Any) -> None:
    data = _chat()
    assert await _hook(callback, data, "aembedding") is data


async def test_internal_error_sends_the_request_unchanged_and_logs_no_content(
    artifact_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from budgetware.integrations.litellm import _callback, budget_callback

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("HEAD-0: secret tool output")

    monkeypatch.setattr(_callback, "bound_payload", broken)
    cb = budget_callback(
        config=BudgetConfig(batch_budget=BUDGET, artifact_dir=artifact_dir, raise_errors=False)
    )
    data = _chat()
    with caplog.at_level(logging.ERROR, logger="budgetware"):
        assert await _hook(cb, data) is data
    assert "RuntimeError" in caplog.text
    assert "HEAD-0" not in caplog.text


def _forwarding(data: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """``data`` as the proxy makes it with ``forward_client_headers_to_llm_api``."""
    return {**data, "headers": {k: v for k, v in headers.items() if k.lower().startswith("x-")}}


@pytest.mark.parametrize("call_type", ["acompletion", "aembedding"])
async def test_forwarded_budgetware_headers_are_removed(callback: Any, call_type: str) -> None:
    headers = {"X-Budgetware-Batch-Budget": "8000", "x-request-tag": "t-1"}
    data = _forwarding(_chat(headers), headers)
    result = await _hook(callback, data, call_type)
    assert result["headers"] == {"x-request-tag": "t-1"}
    # The client's headers as the proxy recorded them stay (logging reads them).
    assert result["proxy_server_request"]["headers"] == data["proxy_server_request"]["headers"]


async def test_forwarded_headers_without_ours_leave_the_request_as_it_is(callback: Any) -> None:
    data = _forwarding(
        proxy_data("messages", drivers.openai_chat_messages(small_results())),
        {"x-request-tag": "t-1"},
    )
    assert await _hook(callback, data) is data


async def test_disable_header_removed_from_forwarded_headers_leaves_messages_whole(
    callback: Any,
) -> None:
    headers = {"x-budgetware-disable": "1"}
    data = _forwarding(_chat(headers), headers)
    result = await _hook(callback, data)
    assert result["headers"] == {}
    assert result["messages"] is data["messages"]


@pytest.mark.parametrize(("length", "off_loop"), [("1000", False), (str(2 << 20), True)])
async def test_a_large_request_is_bounded_off_the_event_loop(
    callback: Any,
    artifact_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    length: str,
    off_loop: bool,
) -> None:
    import threading

    from budgetware.integrations.litellm import _callback

    threads: list[threading.Thread] = []
    real = _callback._bound_conversation

    def spy(*args: Any) -> Any:
        threads.append(threading.current_thread())
        return real(*args)

    monkeypatch.setattr(_callback, "_bound_conversation", spy)
    data = _chat()
    data["proxy_server_request"]["headers"]["content-length"] = length
    result = await _hook(callback, data)
    assert_bounded(tool_texts("messages", result["messages"]), BIG, artifact_dir)
    assert (threads[0] is not threading.current_thread()) is off_loop
