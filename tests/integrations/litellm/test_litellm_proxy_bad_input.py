"""Bad input through a real LiteLLM Proxy: no request fails because of budgetware.

Each request goes to the gateway (budgetware's callback, internal errors raising) and to
the baseline (the same proxy without the callback): the client gets the same status from
both, and what reaches the provider differs only where budgetware bounded tool results. An
invalid budgetware setting is ignored with a ``BudgetwareWarning`` in the proxy's log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from litellm_proxy_helpers import BUDGET, big_results
from proxy_server_helpers import ANTHROPIC_MODEL, OPENAI_MODEL, model_requests
from testing import drivers
from testing.litellm_proxy import LiteLLMProxy

from budgetware.testing import FakeProvider, RecordedRequest

# One worker starts the session's proxies and runs every test that uses them.
pytestmark = [pytest.mark.sdk, pytest.mark.slow, pytest.mark.xdist_group("litellm_proxy")]

BIG = big_results(3, 40_000)
CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    # A fresh connection per request: a kept-alive one may be closed by the proxy's
    # keep-alive timeout just as the next request goes out.
    limits = httpx.Limits(max_keepalive_connections=0)
    with httpx.Client(trust_env=False, timeout=60, limits=limits) as client:
        yield client


def send(
    http: httpx.Client,
    proxy: LiteLLMProxy,
    path: str,
    body: bytes | dict[str, Any] | None,
    *,
    method: str = "POST",
    key: str | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    content = json.dumps(body).encode() if isinstance(body, dict) else body
    all_headers = {
        "authorization": f"Bearer {key or proxy.master_key}",
        "content-type": "application/json",
        **(headers or {}),
    }
    return http.request(method, proxy.url + path, content=content, headers=all_headers)


def both(
    http: httpx.Client,
    gateway: LiteLLMProxy,
    baseline: LiteLLMProxy,
    upstream: FakeProvider,
    path: str,
    body: bytes | dict[str, Any] | None,
    **kwargs: Any,
) -> tuple[httpx.Response, list[RecordedRequest], httpx.Response, list[RecordedRequest]]:
    """The same request through the gateway and the baseline, with what each sent upstream."""
    upstream.clear()
    through_gateway = send(http, gateway, path, body, **kwargs)
    sent_by_gateway = model_requests(upstream)
    upstream.clear()
    without = send(http, baseline, path, body, **kwargs)
    return through_gateway, sent_by_gateway, without, model_requests(upstream)


def chat_body(messages: Any, **extra: Any) -> dict[str, Any]:
    return {"model": OPENAI_MODEL, "messages": messages, **extra}


def anthropic_body(messages: Any) -> dict[str, Any]:
    return {"model": ANTHROPIC_MODEL, "max_tokens": 32, "messages": messages}


def tool_message(content: Any) -> list[Any]:
    messages: list[Any] = drivers.openai_chat_messages(["x"])
    messages[-1] = {**messages[-1], "content": content}
    return messages


def tool_result_block(block: Any) -> list[Any]:
    messages: list[Any] = drivers.anthropic_messages(["x"])
    messages[-1] = {"role": "user", "content": [block]}
    return messages


def tool_texts(request: RecordedRequest) -> list[Any]:
    """The tool results of an upstream chat or Anthropic body (of whatever type they are)."""
    texts: list[Any] = []
    for message in request.json()["messages"]:
        if message.get("role") == "tool":
            texts.append(message.get("content"))
        elif isinstance(message.get("content"), list):
            texts.extend(
                block.get("content")
                for block in message["content"]
                if isinstance(block, dict) and block.get("type") == "tool_result"
            )
    return texts


# --- malformed bodies and unknown routes: the same outcome as without budgetware -------------

# Each case: the route, the body, and the BudgetwareWarning the gateway logs (None: the
# proxy refuses the body before budgetware sees it, or budgetware reads it as it is).
MALFORMED: dict[str, tuple[str, bytes | dict[str, Any] | None, str | None]] = {
    "not json": (CHAT, b'{"model": "gpt-fake", "messages": [{"role": ', None),
    "a json array": (CHAT, b"[1, 2, 3]", None),
    "a json string": (CHAT, b'"messages"', None),
    "empty body": (CHAT, b"", None),
    "invalid utf-8": (CHAT, b'{"model": "gpt-fake", "messages": "\xff\xfe"}', None),
    "NaN literal": (CHAT, b'{"model": "gpt-fake", "messages": [], "temperature": NaN}', None),
    "messages a string": (
        CHAT,
        chat_body("hello"),
        "leaving a request alone (openai_chat): its 'messages' is str, not a list",
    ),
    "messages a dict": (
        CHAT,
        chat_body({"role": "tool", "content": "x"}),
        "leaving a request alone (openai_chat): its 'messages' is dict, not a list",
    ),
    "messages of scalars": (
        CHAT,
        chat_body([1, "two", None, 4.5]),
        "some items of a request's 'messages' are not objects (openai_chat)",
    ),
    "tool content a dict": (
        CHAT,
        chat_body(tool_message({"output": "x" * 60_000})),
        "in a request (openai_chat), a tool message's content is of type dict: "
        "it is left as it is, not bounded",
    ),
    "tool content a number": (
        CHAT,
        chat_body(tool_message(42)),
        "in a request (openai_chat), a tool message's content is of type int",
    ),
    "tool content null": (
        CHAT,
        chat_body(tool_message(None)),
        "in a request (openai_chat), a tool message's content is of type NoneType",
    ),
    # A list of parts: the parts that are not text are left as they are.
    "tool content odd parts": (
        CHAT,
        chat_body(tool_message([{"type": "text", "text": 123}, "plain", None, {"type": "x"}])),
        None,
    ),
    # Bounded like any other (an id is not needed to read a result).
    "tool message without id": (
        CHAT,
        chat_body([{"role": "user", "content": "hi"}, {"role": "tool", "content": "y" * 90_000}]),
        None,
    ),
    "anthropic messages a string": (
        MESSAGES,
        anthropic_body("hello"),
        "leaving a request alone (anthropic_messages): its 'messages' is str, not a list",
    ),
    "anthropic tool_result content a number": (
        MESSAGES,
        anthropic_body(
            tool_result_block({"type": "tool_result", "tool_use_id": "call_0", "content": 5})
        ),
        "in a request (anthropic_messages), a tool_result's content is of type int",
    ),
    "anthropic tool_result without id": (
        MESSAGES,
        anthropic_body(tool_result_block({"type": "tool_result", "content": "z" * 90_000})),
        None,
    ),
    "anthropic content of scalars": (
        MESSAGES,
        anthropic_body([{"role": "user", "content": [1, None]}]),
        "in a request (anthropic_messages), a message's content holds a value of type int",
    ),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_body_gets_the_same_answer_as_without_budgetware(
    http: httpx.Client,
    gateway: LiteLLMProxy,
    baseline: LiteLLMProxy,
    upstream: FakeProvider,
    case: str,
) -> None:
    path, body, warning = MALFORMED[case]
    mark = gateway.log_mark()
    got, sent, expected, expected_sent = both(http, gateway, baseline, upstream, path, body)
    assert got.status_code == expected.status_code, got.text
    assert len(sent) == len(expected_sent)
    for through_gateway, without in zip(sent, expected_sent):
        if through_gateway.body != without.body:
            # Only a bounded request differs: its tool results fit the budget.
            texts = [t for t in tool_texts(through_gateway) if isinstance(t, str)]
            assert sum(map(len, texts)) <= BUDGET
    log = gateway.log_since(mark)
    assert "budgetware could not" not in log
    if warning is None:
        assert "BudgetwareWarning" not in log
    else:
        # In the proxy's log (types, never content): the request went on without budgetware.
        assert f"BudgetwareWarning: budgetware: {warning}" in log
        assert "xxxxx" not in log


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/no-such-route"),
        ("POST", "/v2/chat/completions"),
        ("GET", CHAT),
        ("PUT", MESSAGES),
        ("POST", "/v1/embeddings"),
        ("POST", "/v1/completions"),
    ],
)
def test_unknown_or_unbounded_route_gets_the_same_answer_as_without_budgetware(
    http: httpx.Client,
    gateway: LiteLLMProxy,
    baseline: LiteLLMProxy,
    upstream: FakeProvider,
    method: str,
    path: str,
) -> None:
    body = chat_body(drivers.openai_chat_messages(["ok"]), input="hello", prompt="hello")
    got, sent, expected, expected_sent = both(
        http, gateway, baseline, upstream, path, body, method=method
    )
    assert got.status_code == expected.status_code, got.text
    assert [r.body for r in sent] == [r.body for r in expected_sent]


def test_large_headers_the_proxy_takes_keep_the_budget_header_working(
    http: httpx.Client, gateway: LiteLLMProxy, baseline: LiteLLMProxy, upstream: FakeProvider
) -> None:
    # 12 KB: the proxy's server (uvicorn on h11) refuses a header block it has read 16 KiB of
    # without its end, so 40 KB passed only when it came in one read (not under load).
    headers = {f"x-filler-{i}": "f" * 4000 for i in range(3)}
    headers["x-budgetware-batch-budget"] = "8000"
    body = chat_body(drivers.openai_chat_messages(BIG))
    got, sent, expected, _ = both(http, gateway, baseline, upstream, CHAT, body, headers=headers)
    assert got.status_code == expected.status_code == 200
    (request,) = sent
    assert sum(map(len, tool_texts(request))) <= 8000
    assert "x-budgetware-batch-budget" not in request.headers
    assert request.headers["x-filler-2"] == "f" * 4000


def _outcome(http: httpx.Client, proxy: LiteLLMProxy, headers: dict[str, str]) -> str:
    body = chat_body(drivers.openai_chat_messages(["ok"]))
    try:
        return str(send(http, proxy, CHAT, body, headers=headers).status_code)
    except (httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError):
        # The server answers 400 and closes while the client still sends: the reset may
        # arrive before the answer.
        return "400"


def test_headers_over_the_servers_limit_are_refused_as_without_budgetware(
    http: httpx.Client, gateway: LiteLLMProxy, baseline: LiteLLMProxy, upstream: FakeProvider
) -> None:
    headers = {f"x-filler-{i}": "f" * 4000 for i in range(40)}
    headers["x-budgetware-batch-budget"] = "8000"
    assert _outcome(http, gateway, headers) == _outcome(http, baseline, headers) == "400"
    assert model_requests(upstream) == []
    # The gateway still serves the next request.
    assert _outcome(http, gateway, {}) == "200"


# --- invalid settings: ignored with a warning, the request goes on ---------------------------


def _warned_and_bounded_by_default(
    gateway: LiteLLMProxy, upstream: FakeProvider, response: httpx.Response, mark: int, name: str
) -> None:
    assert response.status_code == 200, response.text
    (request,) = model_requests(upstream)
    sent = tool_texts(request)
    # The invalid setting changed nothing: the proxy's own budget applies.
    assert sum(map(len, sent)) <= BUDGET
    assert sum(map(len, sent)) > 8000
    log = gateway.log_since(mark)
    assert "BudgetwareWarning" in log
    assert name in log


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("x-budgetware-batch-budget", "lots"),
        ("x-budgetware-batch-budget", "1e5"),
        ("x-budgetware-batch-budget", "8000.5"),  # "8000.0" is 8000, as in the environment
        ("x-budgetware-batch-budget", "9" * 5000),  # more digits than int() takes
        ("x-budgetware-unit", "furlongs"),
        ("x-budgetware-unit", "u" * 6000),
        ("x-budgetware-disable", "maybe"),
        ("x-budgetware-nonsense", "1"),
    ],
)
def test_invalid_header_is_ignored_with_a_warning(
    http: httpx.Client, gateway: LiteLLMProxy, upstream: FakeProvider, header: str, value: str
) -> None:
    upstream.clear()
    mark = gateway.log_mark()
    response = send(
        http, gateway, CHAT, chat_body(drivers.openai_chat_messages(BIG)), headers={header: value}
    )
    _warned_and_bounded_by_default(gateway, upstream, response, mark, header)
    assert header not in model_requests(upstream)[0].headers


# Values no chat test sends: the proxy logs each distinct warning once.
@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("x-budgetware-batch-budget", "plenty"),
        ("x-budgetware-batch-budget", "7000.5"),
        ("x-budgetware-unit", "cubits"),
        ("x-budgetware-disable", "perhaps"),
        ("x-budgetware-whatever", "1"),
    ],
)
def test_invalid_header_on_the_anthropic_route_is_ignored_with_a_warning(
    http: httpx.Client, gateway: LiteLLMProxy, upstream: FakeProvider, header: str, value: str
) -> None:
    upstream.clear()
    mark = gateway.log_mark()
    body = anthropic_body(drivers.anthropic_messages(BIG))
    response = send(http, gateway, MESSAGES, body, headers={header: value})
    _warned_and_bounded_by_default(gateway, upstream, response, mark, header)
    assert header not in model_requests(upstream)[0].headers


def test_non_ascii_header_value_is_ignored_with_a_warning(
    http: httpx.Client, gateway: LiteLLMProxy, upstream: FakeProvider
) -> None:
    upstream.clear()
    mark = gateway.log_mark()
    response = http.post(
        gateway.url + CHAT,
        content=json.dumps(chat_body(drivers.openai_chat_messages(BIG))).encode(),
        headers=[
            (b"authorization", f"Bearer {gateway.master_key}".encode()),
            (b"content-type", b"application/json"),
            (b"x-budgetware-batch-budget", "8000 \u00e9".encode("latin-1")),
        ],
    )
    _warned_and_bounded_by_default(gateway, upstream, response, mark, "x-budgetware-batch-budget")


@pytest.mark.parametrize(
    ("key", "entry"),
    [
        ("sk-bad-budget-list", "key metadata 'budgetware_batch_budget'"),
        ("sk-bad-budget-float", "key metadata 'budgetware_batch_budget'"),
        ("sk-bad-unit-number", "key metadata 'budgetware_unit'"),
        ("sk-bad-disable-dict", "key metadata 'budgetware_disable'"),
        ("sk-bad-team-budget-bool", "team metadata 'budgetware_batch_budget'"),
    ],
)
def test_key_metadata_of_the_wrong_type_is_ignored_with_a_warning(
    http: httpx.Client, gateway: LiteLLMProxy, upstream: FakeProvider, key: str, entry: str
) -> None:
    upstream.clear()
    mark = gateway.log_mark()
    response = send(http, gateway, CHAT, chat_body(drivers.openai_chat_messages(BIG)), key=key)
    _warned_and_bounded_by_default(gateway, upstream, response, mark, entry)
