"""The proxy hook (``async_pre_call_hook``) on request data shaped as the proxy makes it."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
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

if TYPE_CHECKING:
    from litellm.proxy._types import UserAPIKeyAuth

BIG = big_results()


def _key(**fields: Any) -> UserAPIKeyAuth:
    """litellm's key object, imported when a test makes one: importing litellm's proxy
    types costs seconds of CPU, which every test process would pay while collecting."""
    from litellm.proxy._types import UserAPIKeyAuth

    return UserAPIKeyAuth(**fields)


def _cache() -> Any:
    from litellm.caching.dual_cache import DualCache

    return DualCache()


async def _hook(
    callback: Any,
    data: dict[str, Any],
    call_type: str = "acompletion",
    key: UserAPIKeyAuth | None = None,
) -> Any:
    return await callback.async_pre_call_hook(key or _key(), _cache(), data, call_type)


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


async def test_request_header_disable_leaves_the_request_unbounded(permissive: Any) -> None:
    data = _chat({"x-budgetware-disable": "1"})
    assert await _hook(permissive, data) is data


async def test_headers_copied_into_metadata_are_read_without_proxy_server_request(
    permissive: Any,
) -> None:
    data = _chat({"x-budgetware-disable": "1"})
    del data["proxy_server_request"]
    assert await _hook(permissive, data) is data


async def test_key_metadata_budget_overrides_the_callback_config(artifact_dir: Path) -> None:
    from budgetware.integrations.litellm import budget_callback

    lenient = budget_callback(config=BudgetConfig(batch_budget=10**9, artifact_dir=artifact_dir))
    key = _key(metadata={"budgetware_batch_budget": 8000})
    result = await _hook(lenient, _chat(), key=key)
    assert _within_budget(result, 8000)


async def test_key_metadata_disable_leaves_the_request_unbounded(callback: Any) -> None:
    data = _chat()
    key = _key(metadata={"budgetware_disable": True})
    assert await _hook(callback, data, key=key) is data


async def test_team_metadata_budget_applies(callback: Any) -> None:
    key = _key(team_metadata={"budgetware_batch_budget": "8000"})
    result = await _hook(callback, _chat(), key=key)
    assert _within_budget(result, 8000)


async def test_key_metadata_wins_over_team_metadata(callback: Any) -> None:
    data = _chat()
    key = _key(
        metadata={"budgetware_disable": True}, team_metadata={"budgetware_batch_budget": 8000}
    )
    assert await _hook(callback, data, key=key) is data


async def test_key_and_team_metadata_win_over_a_request_header(callback: Any) -> None:
    # What the proxy's admin set is narrower than what a client asks.
    key = _key(metadata={"budgetware_batch_budget": 8000})
    result = await _hook(callback, _chat({"x-budgetware-disable": "1"}), key=key)
    assert _within_budget(result, 8000)
    team = _key(team_metadata={"budgetware_batch_budget": 6000})
    result = await _hook(callback, _chat({"x-budgetware-batch-budget": "20000"}), key=team)
    assert _within_budget(result, 6000)


# --- the operator's policy for clients' headers (client_overrides) ---------------------------


def _sent(result: dict[str, Any]) -> list[str]:
    return tool_texts("messages", result["messages"])


def _policy(artifact_dir: Path, policy: str, budget: int = BUDGET, **settings: Any) -> Any:
    from budgetware.integrations.litellm import budget_callback

    config = BudgetConfig(
        batch_budget=budget, artifact_dir=artifact_dir, client_overrides=policy, **settings
    )
    return budget_callback(config=config)


@pytest.mark.parametrize(
    "headers",
    [
        {"x-budgetware-disable": "1"},
        {"x-budgetware-batch-budget": "0"},
        {"x-budgetware-batch-budget": "inf"},
        {"x-budgetware-batch-budget": str(10**9)},
    ],
)
async def test_by_default_a_client_cannot_loosen_the_operators_budget(
    callback: Any, headers: dict[str, str]
) -> None:
    result = await _hook(callback, _chat(headers))
    assert _within_budget(result, BUDGET)


async def test_by_default_a_client_may_tighten_the_operators_budget(callback: Any) -> None:
    result = await _hook(callback, _chat({"x-budgetware-batch-budget": "8000"}))
    assert _within_budget(result, 8000)
    # Below the key's bound too: the key's metadata is the operator's bound, not a floor.
    key = _key(metadata={"budgetware_batch_budget": 20_000})
    result = await _hook(callback, _chat({"x-budgetware-batch-budget": "8000"}), key=key)
    assert _within_budget(result, 8000)
    result = await _hook(callback, _chat({"x-budgetware-batch-budget": "30000"}), key=key)
    assert _within_budget(result, 20_000)
    assert not _within_budget(result, 8000)


async def test_a_clamped_unit_keeps_the_operators_bound_in_the_operators_unit(
    artifact_dir: Path,
) -> None:
    callback = _policy(artifact_dir, "clamp")  # 50,000 chars
    # 50,000 estimated tokens could be 200,000 chars: held to 12,500 tokens.
    result = await _hook(callback, _chat({"x-budgetware-unit": "tokens"}))
    sent = _sent(result)
    assert sum(len(t) for t in sent) <= BUDGET
    assert sum(len(t) for t in sent) > BUDGET // 2  # in tokens: not cut further than it had to
    # Bytes are never fewer than characters: a budget in bytes fits one in characters.
    result = await _hook(
        callback, _chat({"x-budgetware-unit": "utf8_bytes", "x-budgetware-batch-budget": "30000"})
    )
    assert sum(len(t.encode()) for t in _sent(result)) <= 30_000


async def test_an_operator_without_a_bound_lets_a_client_set_one(artifact_dir: Path) -> None:
    callback = _policy(artifact_dir, "clamp", budget=0)
    assert await _hook(callback, _chat()) is not None
    result = await _hook(callback, _chat({"x-budgetware-batch-budget": "8000"}))
    assert _within_budget(result, 8000)


async def test_ignore_drops_the_clients_headers(artifact_dir: Path) -> None:
    callback = _policy(artifact_dir, "ignore")
    result = await _hook(callback, _chat({"x-budgetware-batch-budget": "8000"}))
    assert _within_budget(result, BUDGET)
    assert not _within_budget(result, 8000)
    data = _chat({"x-budgetware-disable": "1"})
    assert _within_budget(await _hook(callback, data), BUDGET)


async def test_allow_lets_a_client_disable_but_key_metadata_still_wins(permissive: Any) -> None:
    data = _chat({"x-budgetware-batch-budget": str(10**9)})
    assert await _hook(permissive, data) is data
    key = _key(metadata={"budgetware_batch_budget": 8000})
    result = await _hook(permissive, _chat({"x-budgetware-disable": "1"}), key=key)
    assert _within_budget(result, 8000)


async def test_budgetware_entries_of_the_body_extra_headers_are_read_and_removed(
    callback: Any,
) -> None:
    data = _chat()
    data["extra_headers"] = {"x-budgetware-batch-budget": "8000", "x-request-tag": "t-1"}
    result = await _hook(callback, data)
    assert result["extra_headers"] == {"x-request-tag": "t-1"}
    assert _within_budget(result, 8000)


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch) -> list[threading.Thread]:
    """The thread each conversation was bounded in by the callback."""
    from budgetware.integrations.litellm import _callback

    seen: list[threading.Thread] = []
    real = _callback._bound_conversation

    def spy(*args: Any) -> Any:
        seen.append(threading.current_thread())
        return real(*args)

    monkeypatch.setattr(_callback, "_bound_conversation", spy)
    return seen


@pytest.fixture
def proxy_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The budgetware log, with no message counted as already logged."""
    from budgetware.integrations.litellm import _callback

    _callback.log_warning.cache_clear()
    caplog.set_level(logging.WARNING, logger="budgetware")
    return caplog


# The LiteLLM Proxy prints no warning (it replaces warnings.showwarning with a function that
# drops them): the proxy hook logs what it ignores instead.


async def test_invalid_key_metadata_is_logged_naming_it_and_ignored(
    callback: Any, proxy_log: pytest.LogCaptureFixture
) -> None:
    key = _key(metadata={"budgetware_batch_budget": "lots"})
    result = await _hook(callback, _chat(), key=key)
    assert _within_budget(result, BUDGET)
    assert "BudgetwareWarning: budgetware: ignoring key metadata 'budgetware_batch_budget'" in (
        proxy_log.text
    )


async def test_invalid_team_metadata_is_logged_naming_it_and_ignored(
    callback: Any, proxy_log: pytest.LogCaptureFixture
) -> None:
    key = _key(team_metadata={"budgetware_unit": ["chars"]})
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


@pytest.mark.parametrize(
    ("value", "expected"),
    [(8000, 8000), ("8000", 8000), (8000.0, 8000), ("inf", 0), (float("inf"), 0), (-1, -1)],
)
def test_a_metadata_budget_follows_the_settings_rules(value: object, expected: int) -> None:
    # As BUDGETWARE_BATCH_BUDGET and x-budgetware-batch-budget read it: "inf" disables.
    from budgetware.integrations.litellm._callback import metadata_overrides

    overrides = metadata_overrides({"budgetware_batch_budget": value}, "key metadata")
    assert overrides == {"batch_budget": expected}


@pytest.mark.parametrize("value", [True, False, "lots", 8000.5, [8000]])
def test_a_metadata_budget_that_is_no_number_is_ignored_with_a_warning(value: object) -> None:
    from budgetware.integrations.litellm._callback import metadata_overrides

    with pytest.warns(BudgetwareWarning, match="key metadata 'budgetware_batch_budget'"):
        assert metadata_overrides({"budgetware_batch_budget": value}, "key metadata") == {}


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

    monkeypatch.setattr(_callback, "bound_payload_reported", broken)
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
    permissive: Any,
) -> None:
    headers = {"x-budgetware-disable": "1"}
    data = _forwarding(_chat(headers), headers)
    result = await _hook(permissive, data)
    assert result["headers"] == {}
    assert result["messages"] is data["messages"]


@pytest.mark.parametrize(("length", "off_loop"), [("1000", False), (str(2 << 20), True)])
async def test_a_large_request_is_bounded_off_the_event_loop(
    callback: Any,
    artifact_dir: Path,
    threads: list[threading.Thread],
    length: str,
    off_loop: bool,
) -> None:
    data = _chat()
    data["proxy_server_request"]["headers"]["content-length"] = length
    result = await _hook(callback, data)
    assert_bounded(tool_texts("messages", result["messages"]), BIG, artifact_dir)
    assert (threads[0] is not threading.current_thread()) is off_loop


# --- the Anthropic route: what the chat route's tests check, on /v1/messages ----------------


def _messages(headers: dict[str, str] | None = None) -> dict[str, Any]:
    return proxy_data("messages", drivers.anthropic_messages(BIG), headers=headers)


async def test_anthropic_request_header_budget_applies(callback: Any) -> None:
    result = await _hook(
        callback, _messages({"x-budgetware-batch-budget": "8000"}), "anthropic_messages"
    )
    assert _within_budget(result, 8000)


async def test_anthropic_request_header_disable_leaves_the_request_unbounded(
    permissive: Any,
) -> None:
    data = _messages({"x-budgetware-disable": "1"})
    assert await _hook(permissive, data, "anthropic_messages") is data


async def test_anthropic_key_metadata_budget_applies(callback: Any) -> None:
    key = _key(metadata={"budgetware_batch_budget": 8000})
    result = await _hook(callback, _messages(), "anthropic_messages", key=key)
    assert _within_budget(result, 8000)


async def test_anthropic_under_budget_request_is_returned_as_the_same_object(
    callback: Any,
) -> None:
    data = proxy_data("messages", drivers.anthropic_messages(small_results()))
    assert await _hook(callback, data, "anthropic_messages") is data


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("x-budgetware-batch-budget", "lots"),
        ("x-budgetware-unit", "furlongs"),
        ("x-budgetware-disable", "maybe"),
    ],
)
async def test_anthropic_invalid_request_header_is_logged_naming_it_and_ignored(
    callback: Any, proxy_log: pytest.LogCaptureFixture, header: str, value: str
) -> None:
    result = await _hook(callback, _messages({header: value}), "anthropic_messages")
    assert _within_budget(result, BUDGET)
    assert sum(len(t) for t in tool_texts("messages", result["messages"])) > 8000
    assert f"BudgetwareWarning: budgetware: ignoring request header {header!r}" in (proxy_log.text)


async def test_anthropic_forwarded_budgetware_headers_are_removed(callback: Any) -> None:
    headers = {"x-budgetware-batch-budget": "8000", "x-request-tag": "t-1"}
    data = _forwarding(_messages(headers), headers)
    result = await _hook(callback, data, "anthropic_messages")
    assert result["headers"] == {"x-request-tag": "t-1"}
    assert _within_budget(result, 8000)


# --- conversations of an unexpected shape: left alone, and the log says so -------------------


@pytest.mark.parametrize(
    ("call_type", "field", "value", "kind"),
    [
        ("acompletion", "messages", "hello", "str"),
        ("acompletion", "messages", {"role": "tool", "content": "x"}, "dict"),
        ("acompletion", "messages", None, "NoneType"),
        ("anthropic_messages", "messages", 42, "int"),
        ("aresponses", "input", {"type": "function_call_output"}, "dict"),
        ("agenerate_content", "contents", 7, "int"),
    ],
)
async def test_a_conversation_that_is_not_a_list_is_left_alone_with_a_warning(
    callback: Any,
    proxy_log: pytest.LogCaptureFixture,
    call_type: str,
    field: str,
    value: Any,
    kind: str,
) -> None:
    data = proxy_data(field, value)
    assert await _hook(callback, data, call_type) is data
    assert f"its {field!r} is {kind}, not a list" in proxy_log.text
    assert "BudgetwareWarning: budgetware: leaving a request alone (" in proxy_log.text


@pytest.mark.parametrize(("call_type", "field"), [("aresponses", "input")])
async def test_a_plain_text_prompt_is_no_unexpected_shape(
    callback: Any, proxy_log: pytest.LogCaptureFixture, call_type: str, field: str
) -> None:
    data = proxy_data(field, "what is the weather?")
    assert await _hook(callback, data, call_type) is data
    assert "BudgetwareWarning" not in proxy_log.text


async def test_items_that_are_not_messages_are_left_alone_with_a_warning(
    callback: Any, proxy_log: pytest.LogCaptureFixture
) -> None:
    messages: list[Any] = [*drivers.openai_chat_messages(BIG), 1, "two", None]
    result = await _hook(callback, proxy_data("messages", messages))
    # The messages that are messages are bounded; the rest stay as they were.
    assert _within_budget({"messages": [m for m in result["messages"] if isinstance(m, dict)]})
    assert result["messages"][-3:] == [1, "two", None]
    assert "some items of a request's 'messages' are not objects (openai_chat)" in proxy_log.text
    assert "HEAD-0" not in proxy_log.text


def _with_last(conversation: list[Any], last: Any) -> list[Any]:
    return [*conversation[:-1], last]


@pytest.mark.parametrize(
    ("call_type", "field", "conversation", "expected"),
    [
        (
            "acompletion",
            "messages",
            _with_last(
                drivers.openai_chat_messages(["x"]),
                {"role": "tool", "tool_call_id": "call_0", "content": {"out": "HEAD-0"}},
            ),
            "in a request (openai_chat), a tool message's content is of type dict",
        ),
        (
            "anthropic_messages",
            "messages",
            _with_last(
                drivers.anthropic_messages(["x"]),
                {"role": "user", "content": [{"type": "tool_result", "content": 5}]},
            ),
            "in a request (anthropic_messages), a tool_result's content is of type int",
        ),
        (
            "aresponses",
            "input",
            _with_last(
                drivers.openai_responses_input(["x"]),
                {"type": "function_call_output", "call_id": "c", "output": {"out": "HEAD-0"}},
            ),
            "in a request (openai_responses), a function_call_output's output is of type dict",
        ),
    ],
)
async def test_a_tool_result_budgetware_cannot_read_is_named_in_a_warning(
    callback: Any,
    proxy_log: pytest.LogCaptureFixture,
    call_type: str,
    field: str,
    conversation: list[Any],
    expected: str,
) -> None:
    data = proxy_data(field, conversation)
    assert await _hook(callback, data, call_type) is data
    assert f"BudgetwareWarning: budgetware: {expected}: it is left as it is" in proxy_log.text
    assert "HEAD-0" not in proxy_log.text


async def test_a_request_without_the_field_is_left_alone_silently(
    callback: Any, proxy_log: pytest.LogCaptureFixture
) -> None:
    data = proxy_data("prompt", "complete this")  # a text completion: no messages at all
    assert await _hook(callback, data, "atext_completion") is data
    assert "BudgetwareWarning" not in proxy_log.text


# --- pass-through routes: the route on the key picks the wire format -------------------------


def _pass_through(route: str | None, key: UserAPIKeyAuth | None = None) -> UserAPIKeyAuth:
    auth = key or _key()
    auth.request_route = route
    return auth


def _body(field: str, conversation: list[Any]) -> dict[str, Any]:
    """A pass-through request's data: the client's body, and litellm's logging object."""
    return {"model": "m", field: conversation, "litellm_logging_obj": object()}


@pytest.mark.parametrize(
    ("route", "field", "conversation"),
    [
        ("/anthropic/v1/messages", "messages", drivers.anthropic_messages(BIG)),
        ("/openai/v1/chat/completions", "messages", drivers.openai_chat_messages(BIG)),
        ("/openai_passthrough/v1/responses", "input", drivers.openai_responses_input(BIG)),
        (
            "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            "contents",
            gemini_contents(BIG),
        ),
        (
            "/vertex_ai/v1/projects/p/locations/l/publishers/google/models/g:generateContent",
            "contents",
            gemini_contents(BIG),
        ),
        (
            "/vertex_ai/v1/projects/p/locations/l/publishers/anthropic/models/c:rawPredict",
            "messages",
            drivers.anthropic_messages(BIG),
        ),
    ],
)
async def test_a_pass_through_model_route_is_bounded(
    callback: Any, artifact_dir: Path, route: str, field: str, conversation: list[Any]
) -> None:
    data = _body(field, conversation)
    result = await _hook(callback, data, "pass_through_endpoint", key=_pass_through(route))
    assert_bounded(tool_texts(field, result[field]), BIG, artifact_dir)
    assert result["litellm_logging_obj"] is data["litellm_logging_obj"]


@pytest.mark.parametrize(
    "route",
    [
        # Signed by litellm from the bytes it received: what a hook returns is not sent.
        "/bedrock/model/anthropic.claude-3-haiku/invoke",
        "/bedrock/model/m/converse",
        "/anthropic/v1/models",
        "/assemblyai/v2/transcript",
        None,
    ],
)
async def test_a_pass_through_route_that_is_no_model_api_is_left_alone(
    callback: Any, route: str | None
) -> None:
    data = _body("messages", drivers.anthropic_messages(BIG))
    assert await _hook(callback, data, "pass_through_endpoint", key=_pass_through(route)) is data


async def test_pass_through_key_metadata_applies(callback: Any) -> None:
    key = _pass_through("/anthropic/v1/messages", _key(metadata={"budgetware_disable": True}))
    data = _body("messages", drivers.anthropic_messages(BIG))
    assert await _hook(callback, data, "pass_through_endpoint", key=key) is data


def _forward(request_headers: dict[str, str], headers: dict[str, str], **kwargs: Any) -> Any:
    """litellm's pass-through header forwarding, as the proxy calls it."""
    from litellm.passthrough.utils import BasePassthroughUtils

    return BasePassthroughUtils.forward_headers_from_request(
        request_headers=request_headers, headers=headers, **kwargs
    )


@pytest.mark.parametrize("forward_headers", [True, False])
async def test_pass_through_forwarding_drops_our_headers_and_hands_them_to_the_hook(
    callback: Any, forward_headers: bool
) -> None:
    client = {
        "x-budgetware-batch-budget": "8000",
        "x-request-tag": "t-1",
        "content-length": "1200300",
        # litellm forwards x-pass-<name> as <name>: never ours either.
        "x-pass-x-budgetware-unit": "chars",
    }
    # The Anthropic route passes the client's headers as the custom ones.
    forwarded = _forward(dict(client), dict(client), forward_headers=forward_headers)
    assert "x-request-tag" in forwarded
    # (x-pass-x-budgetware-unit would reach the provider as x-budgetware-unit.)
    assert not [name for name in forwarded if name.startswith("x-budgetware-")]
    data = _body("messages", drivers.anthropic_messages(BIG))
    result = await _hook(
        callback, data, "pass_through_endpoint", key=_pass_through("/anthropic/v1/messages")
    )
    assert _within_budget(result, 8000)


async def test_pass_through_headers_are_read_once(permissive: Any) -> None:
    _forward({"x-budgetware-disable": "1"}, {})
    key = _pass_through("/anthropic/v1/messages")
    first = _body("messages", drivers.anthropic_messages(BIG))
    assert await _hook(permissive, first, "pass_through_endpoint", key=key) is first
    # The next request (without the header) gets the proxy's budget.
    result = await _hook(
        permissive,
        _body("messages", drivers.anthropic_messages(BIG)),
        "pass_through_endpoint",
        key=key,
    )
    assert _within_budget(result, BUDGET)


async def test_a_large_pass_through_request_is_bounded_off_the_event_loop(
    callback: Any, threads: list[threading.Thread]
) -> None:
    _forward({"content-length": str(2 << 20)}, {})
    data = _body("messages", drivers.anthropic_messages(BIG))
    await _hook(
        callback, data, "pass_through_endpoint", key=_pass_through("/anthropic/v1/messages")
    )
    assert threads[0] is not threading.current_thread()


def test_the_forwarding_guard_is_installed_once(callback: Any) -> None:
    from litellm.passthrough.utils import BasePassthroughUtils

    from budgetware.integrations.litellm import _passthrough, budget_callback

    guarded = BasePassthroughUtils.forward_headers_from_request
    budget_callback()
    assert _passthrough.guard_forwarded_headers()
    assert BasePassthroughUtils.forward_headers_from_request is guarded
    assert _forward({"x-budgetware-disable": "1", "a": "b"}, {}, forward_headers=True) == {
        "a": "b"
    }


async def test_the_deployment_hook_warns_of_an_unexpected_shape(callback: Any) -> None:
    from litellm.types.utils import CallTypes

    kwargs = {"model": "gpt-4o-mini", "messages": "hello"}
    with pytest.warns(BudgetwareWarning, match="its 'messages' is str, not a list"):
        assert (
            await callback.async_pre_call_deployment_hook(kwargs, CallTypes.acompletion) is kwargs
        )


async def test_a_proxy_responses_counters_are_reported_with_its_request(callback: Any) -> None:
    from litellm.types.utils import ModelResponse

    from budgetware.core import observe

    requests: list[observe.RequestReport] = []
    usage: list[observe.UsageReport] = []
    response = ModelResponse(
        usage={
            "prompt_tokens": 9000,
            "completion_tokens": 3,
            "total_tokens": 9003,
            "prompt_tokens_details": {"cached_tokens": 8192},
            "cache_creation_input_tokens": 700,
        }
    )
    with observe.subscribe(request=requests.append, usage=usage.append):
        await _hook(callback, {**_chat(), "litellm_call_id": "call-1"})
        await callback.async_log_success_event({"litellm_call_id": "call-1"}, response, None, None)
        # Once only, and never for a call it did not report.
        await callback.async_log_success_event({"litellm_call_id": "call-1"}, response, None, None)
        await callback.async_log_success_event({"litellm_call_id": "other"}, response, None, None)
    (request,) = requests
    (report,) = usage
    assert (report.api, report.input_tokens, report.cache_read_tokens) == (
        "openai_chat",
        9000,
        8192,
    )
    assert (report.cache_write_tokens, report.output_tokens) == (700, 3)
    assert report.request is request
    assert request.usage is report
