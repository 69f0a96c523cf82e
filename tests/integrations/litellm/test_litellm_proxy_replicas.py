"""Two LiteLLM Proxy replicas sharing one artifact store, and reading what they cut through
the gateway.

Each backend has two real proxies (budgetware's callback, the same settings) on one store:
a local directory, and an S3 bucket on a local moto server (``proxy_replicas.py``). The
same conversation, growing turn by turn, goes to both replicas through the real openai and
anthropic SDKs; every assertion is on what the fake provider received and on what the
store holds.

The agents behind a proxy cannot read its disk: the proxies' MCP gateway (``mcp_servers``)
serves budgetware's ``read_tool_output`` over the shared store.
"""

from __future__ import annotations

import hashlib
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from http_helpers import artifact_refs, tool_result_texts
from litellm_proxy_helpers import BUDGET
from proxy_replicas import MCP_SERVER, Replicas
from proxy_server_helpers import chat, messages_call, model_requests, only_request
from testing.litellm_proxy import LiteLLMProxy
from wire._bodies import anthropic, openai_chat

from budgetware.testing import FakeProvider, RecordedRequest
from budgetware.tools import MAX_LIMIT, TOOL_NAME

# The proxy tests' worker runs this module too: its fork server has imported the proxy
# already (a second worker's own fork server cost about 10 s of CPU to import it again).
pytestmark = [pytest.mark.sdk, pytest.mark.slow, pytest.mark.xdist_group("litellm_proxy")]

SIZE = 60_000
# The proxies' MCP gateway names a server's tools "<server>-<tool>".
MCP_TOOL = f"{MCP_SERVER}-{TOOL_NAME}"
# Any key of the proxy may read: the test keys' custom_auth grants no MCP server itself.
AGENT_KEY = "sk-team-6000"


def artifact_name(output: str) -> str:
    return hashlib.sha256(output.encode()).hexdigest() + ".txt"


def tool_output(tag: str, size: int = SIZE) -> str:
    """A tool output of ``size`` chars whose every line carries ``tag``: no two tags alike."""
    line = "[{tag}] {n:06d} tests/test_module.py::test_case PASSED\n"
    return "".join(line.format(tag=tag, n=n) for n in range(size // 40 + 1))[:size]


@pytest.fixture(params=["local", "s3"])
def replicas(request: pytest.FixtureRequest) -> Replicas:
    """The pair of replicas on a local directory, then the pair on an S3 bucket."""
    pair: Replicas = request.getfixturevalue(f"{request.param}_replicas")
    return pair


# --- a conversation -------------------------------------------------------------------------

ROUTES = {"chat": openai_chat, "messages": anthropic}


def turns(route: str, batches: list[list[str]]) -> list[list[dict[str, Any]]]:
    """The conversation's messages at each turn: turn k holds the first k + 1 batches."""
    build = ROUTES[route]
    return [build(batches[: k + 1])[0]["messages"] for k in range(len(batches))]


def send(
    route: str, proxy: LiteLLMProxy, messages: list[dict[str, Any]], upstream: FakeProvider
) -> RecordedRequest:
    """One request through ``proxy``; what the provider received for it."""
    upstream.clear()
    if route == "chat":
        assert chat(proxy, messages) == "ok"
    else:
        assert messages_call(proxy, messages) == "ok"
    return only_request(upstream)


def assert_cut_and_named(
    request: RecordedRequest, replicas: Replicas, batches: list[list[str]]
) -> None:
    """Each batch of tool results is within the budget, every result a preview naming the
    artifact of its own output."""
    assert request.api is not None
    texts = iter(tool_result_texts(request.api, request.json()))
    for batch in batches:
        previews = [next(texts) for _ in batch]
        assert sum(map(len, previews)) <= BUDGET
        for preview, output in zip(previews, batch):
            assert artifact_refs(preview) == [replicas.ref(artifact_name(output))]
    assert next(texts, None) is None


def assert_stored_once(replicas: Replicas, before: dict[str, bytes], outputs: list[str]) -> None:
    """The store gained exactly one artifact per distinct output, holding its bytes."""
    after = replicas.artifacts()
    assert {name: after.get(name) for name in before} == before
    added = {name: data for name, data in after.items() if name not in before}
    assert added == {artifact_name(output): output.encode() for output in outputs}


# --- several replicas, one store ------------------------------------------------------------


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_replicas_send_the_same_bytes_turn_after_turn(
    replicas: Replicas, upstream: FakeProvider, route: str
) -> None:
    def out(name: str) -> str:
        return tool_output(f"{route}-{name}")

    # Three turns of two results each; the third re-runs the first turn's first command.
    batches = [
        [out("1a"), out("1b")],
        [out("2a"), out("2b")],
        [out("3a"), out("1a")],
    ]
    before = replicas.artifacts()
    previous: list[dict[str, Any]] = []
    for k, messages in enumerate(turns(route, batches)):
        first, second = replicas.proxies[k % 2], replicas.proxies[1 - k % 2]
        sent = send(route, first, messages, upstream)
        again = send(route, second, messages, upstream)
        # Whichever replica serves the turn, the provider gets the same bytes.
        assert again.body == sent.body
        assert_cut_and_named(sent, replicas, batches[: k + 1])
        # What earlier turns sent (their previews too) is sent again unchanged: the
        # provider's prompt cache keeps hitting.
        upstream_messages = sent.json()["messages"]
        assert upstream_messages[: len(previous)] == previous
        assert len(upstream_messages) > len(previous)
        previous = upstream_messages
    assert_stored_once(replicas, before, list({o: None for b in batches for o in b}))


def test_replicas_cutting_a_new_output_at_once_store_it_once(
    replicas: Replicas, upstream: FakeProvider
) -> None:
    outputs = [tool_output("together-a"), tool_output("together-b")]
    [messages] = turns("chat", [outputs])
    before = replicas.artifacts()
    upstream.clear()
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda proxy: chat(proxy, messages), replicas.proxies))
    assert answers == ["ok", "ok"]
    first, second = model_requests(upstream)
    assert first.body == second.body
    assert_cut_and_named(first, replicas, [outputs])
    assert_stored_once(replicas, before, outputs)


def test_a_restarted_replica_changes_nothing(replicas: Replicas, upstream: FakeProvider) -> None:
    batches = [[tool_output(f"restart-{k}")] for k in range(3)]
    conversation = turns("chat", batches)
    restarted, other = replicas.proxies
    before = replicas.artifacts()
    sent = [send("chat", proxy, m, upstream) for proxy, m in zip((restarted, other), conversation)]
    stored = replicas.artifacts()

    pid = restarted.pid
    restarted.stop()
    restarted.start()
    assert restarted.pid != pid

    # The restarted process sends the earlier turns exactly as before, writing nothing new.
    again = [send("chat", restarted, m, upstream) for m in conversation[:2]]
    assert [r.body for r in again] == [r.body for r in sent]
    assert replicas.artifacts() == stored
    # And the conversation goes on as if nothing happened, on either replica.
    last = send("chat", restarted, conversation[2], upstream)
    assert send("chat", other, conversation[2], upstream).body == last.body
    earlier = sent[1].json()["messages"]
    assert last.json()["messages"][: len(earlier)] == earlier
    assert_stored_once(replicas, before, [b[0] for b in batches])


# --- reading what was cut, through the gateway -----------------------------------------------


async def test_an_agent_reads_a_cut_output_through_the_gateways_mcp_endpoint(
    replicas: Replicas, upstream: FakeProvider
) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    original = tool_output("mcp", 150_000)
    # One replica cuts it...
    preview = tool_result_texts(
        "openai_chat",
        send("chat", replicas.proxies[0], turns("chat", [[original]])[0], upstream).json(),
    )[0]
    [ref] = artifact_refs(preview)
    assert ref == replicas.ref(artifact_name(original))
    # ...and an agent with its own key reads it back through the other one's /mcp.
    headers = {"x-litellm-api-key": f"Bearer {AGENT_KEY}"}
    async with (
        httpx.AsyncClient(headers=headers, trust_env=False, timeout=60) as http,
        streamable_http_client(replicas.proxies[1].url + "/mcp", http_client=http) as (r, w),
        ClientSession(r, w) as session,
    ):
        hello = await session.initialize()
        # How the agent learns what a preview's reference is for.
        assert TOOL_NAME in (hello.instructions or "")
        assert [tool.name for tool in (await session.list_tools()).tools] == [MCP_TOOL]
        text, offset, calls = "", 0, 0
        while True:
            result = await session.call_tool(
                MCP_TOOL, {"ref": ref, "offset": offset, "limit": MAX_LIMIT}
            )
            calls += 1
            assert not result.is_error, result.content
            head, _, window = result.content[0].text.partition("\n")
            text += window
            more = re.search(r"more with offset=(\d+)", head)
            if more is None:
                break
            offset = int(more.group(1))
    assert text == original
    assert calls == -(-len(original) // MAX_LIMIT)
