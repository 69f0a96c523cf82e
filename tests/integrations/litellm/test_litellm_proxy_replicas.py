"""Two LiteLLM Proxy replicas sharing one artifact store, and reading what they cut through
the gateway.

Each backend starts two real proxies (budgetware's callback, the same settings) on one
store: a local directory, and an S3 bucket on a local moto server. The same conversation,
growing turn by turn, goes to both replicas through the real openai and anthropic SDKs;
every assertion is on what the fake provider received and on what the store holds.

The agents behind a proxy cannot read its disk: the proxies' MCP gateway (``mcp_servers``)
serves budgetware's ``read_tool_output`` over the shared store. The local pair runs
``budgetware mcp-server`` as its own child over stdio, per call; the S3 pair reaches one
running beside it over streamable HTTP, which requires a bearer token.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from http_helpers import artifact_refs, tool_result_texts
from litellm_proxy_helpers import BUDGET
from local_servers import mcp_http_server
from proxy_server_helpers import (
    chat,
    messages_call,
    model_requests,
    only_request,
    proxy_config,
    proxy_env,
)
from s3_server import new_bucket
from testing.litellm_proxy import LiteLLMProxy
from wire._bodies import anthropic, openai_chat

from budgetware.testing import FakeProvider, RecordedRequest
from budgetware.tools import MAX_LIMIT, TOOL_NAME

# The proxy tests' worker runs this module too: its fork server has imported the proxy
# already (a second worker's own fork server cost about 10 s of CPU to import it again).
pytestmark = [pytest.mark.sdk, pytest.mark.slow, pytest.mark.xdist_group("litellm_proxy")]

SIZE = 60_000
# The proxies' MCP gateway names a server's tools "<server>-<tool>".
MCP_SERVER = "budgetware"
MCP_TOOL = f"{MCP_SERVER}-{TOOL_NAME}"
# Any key of the proxy may read: the test keys' custom_auth grants no MCP server itself.
AGENT_KEY = "sk-team-6000"


@dataclass
class Replicas:
    """Two proxies on one store (``BUDGETWARE_ARTIFACT_STORE=store``)."""

    proxies: list[LiteLLMProxy]
    store: str
    artifacts: Callable[[], dict[str, bytes]]
    """Every artifact in the store now: its name (``<sha256>.txt``) and its bytes."""

    def ref(self, name: str) -> str:
        """The reference a preview names for the artifact ``name``."""
        return f"{self.store}/{name}"


def artifact_name(output: str) -> str:
    return hashlib.sha256(output.encode()).hexdigest() + ".txt"


def tool_output(tag: str, size: int = SIZE) -> str:
    """A tool output of ``size`` chars whose every line carries ``tag``: no two tags alike."""
    line = "[{tag}] {n:06d} tests/test_module.py::test_case PASSED\n"
    return "".join(line.format(tag=tag, n=n) for n in range(size // 40 + 1))[:size]


def mcp_gateway(sidecar_url: str | None) -> dict[str, Any]:
    """The proxy config's ``mcp_servers``: budgetware's server, for every key."""
    if sidecar_url is not None:
        server: dict[str, Any] = {
            "url": sidecar_url,
            "transport": "http",
            # The server answers nothing without its token (BUDGETWARE_MCP_SERVER_TOKEN).
            "auth_type": "bearer_token",
            "authentication_token": "os.environ/BUDGETWARE_MCP_SERVER_TOKEN",
        }
    else:
        server = {
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-m", "budgetware", "mcp-server"],
            # A stdio server gets only these (and PATH, HOME, ...): the proxy's own store.
            "env": {"BUDGETWARE_ARTIFACT_STORE": "os.environ/BUDGETWARE_ARTIFACT_STORE"},
        }
    server["allow_all_keys"] = True
    return {MCP_SERVER: server}


@pytest.fixture(scope="module", params=["local", "s3"])
def replicas(
    request: pytest.FixtureRequest,
    start_proxies: Callable[..., list[LiteLLMProxy]],
    proxy_upstream: FakeProvider,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Replicas]:
    backend = request.param
    env = proxy_env(None, batch_budget=str(BUDGET), raise_errors="1")
    with ExitStack() as stack:
        if backend == "local":
            directory = tmp_path_factory.mktemp("replicas") / "artifacts"
            store = str(directory)
            env["LITELLM_ENABLE_MCP_STDIO"] = "true"
            sidecar_url = None

            def artifacts() -> dict[str, bytes]:
                return {path.name: path.read_bytes() for path in directory.glob("*.txt")}

        else:
            pytest.importorskip("boto3")
            bucket = new_bucket(request.getfixturevalue("s3_endpoint"))
            store = bucket.url("replicas")
            env.update(bucket.env)
            env.update(AWS_ENDPOINT_URL=None, AWS_PROFILE=None)
            sidecar_env = {
                name: value
                for name, value in os.environ.items()
                if not name.startswith(("BUDGETWARE_", "AWS_"))
            }
            token = secrets.token_urlsafe(16)
            sidecar_env.update(
                bucket.env, BUDGETWARE_ARTIFACT_STORE=store, BUDGETWARE_MCP_SERVER_TOKEN=token
            )
            env["BUDGETWARE_MCP_SERVER_TOKEN"] = token
            sidecar_url = stack.enter_context(mcp_http_server(sidecar_env))

            def artifacts() -> dict[str, bytes]:
                keys = [key for key in bucket.objects("replicas/") if key.endswith(".txt")]
                return {key.rpartition("/")[2]: bucket.get(key) for key in keys}

        env["BUDGETWARE_ARTIFACT_STORE"] = store
        config = proxy_config(proxy_upstream.url)
        config["mcp_servers"] = mcp_gateway(sidecar_url)
        proxies = start_proxies(
            (f"replica-a-{backend}", config, env), (f"replica-b-{backend}", config, env)
        )
        for proxy in proxies:
            stack.callback(proxy.stop)
        yield Replicas(proxies, store, artifacts)


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
