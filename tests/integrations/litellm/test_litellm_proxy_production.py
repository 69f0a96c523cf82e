"""A real LiteLLM Proxy with the production settings: a budgetware failure never fails a
request, and never holds the proxy's event loop.

The suite's other proxies raise budgetware's internal errors (so a request that gets
through shows none happened). This one runs as a deployment does (``raise_errors`` off),
with an internal error planted for requests that carry a marker (``faulty_callbacks.py``)
and an S3 store on an endpoint that never answers. Assertions are on what the fake
provider received, on the proxy's log and on how fast the proxy answered meanwhile. (Its
config also lets clients' headers decide, for test_litellm_proxy_server.py: no request
here sends one.)
"""

from __future__ import annotations

import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from litellm_proxy_helpers import BUDGET
from proxy_server_helpers import chat, messages_call, only_request, upstream_tool_texts
from testing import drivers
from testing.litellm_proxy import LiteLLMProxy

from budgetware.testing import FakeProvider

# faulty_callbacks.MARKER, read from the file: importing the module here would import
# litellm while collecting (seconds of CPU per test process) and plant its fault in this
# process too; it belongs in the proxy's.
MARKER = "PLANT-A-FAULT"
assert f'MARKER = "{MARKER}"' in (Path(__file__).with_name("faulty_callbacks.py")).read_text()

# One worker starts the session's proxies and runs every test that uses them.
pytestmark = [pytest.mark.sdk, pytest.mark.slow, pytest.mark.xdist_group("litellm_proxy")]

SIZE = 60_000
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _send(route: str, proxy: LiteLLMProxy, results: list[str]) -> str:
    if route == "chat":
        return chat(proxy, drivers.openai_chat_messages(results))
    return messages_call(proxy, drivers.anthropic_messages(results))


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_an_internal_error_sends_the_request_unchanged(
    production: LiteLLMProxy, upstream: FakeProvider, route: str
) -> None:
    results = [f"{MARKER} {route} {i}: " + "q" * SIZE for i in range(3)]
    mark = production.log_mark()
    assert _send(route, production, results) == "ok"
    # Unchanged: every result whole, as without budgetware.
    assert upstream_tool_texts(only_request(upstream)) == results
    log = production.log_since(mark)
    assert (
        "budgetware could not bound a request payload (RuntimeError); it goes out unchanged" in log
    )
    # The error's type only: not its message, which quotes the tool output.
    assert MARKER not in log
    assert "quotes the tool output" not in log


def _liveliness_seconds(proxy: LiteLLMProxy) -> float:
    started = time.monotonic()
    with _DIRECT.open(proxy.url + "/health/liveliness", timeout=30) as response:
        response.read()
    return time.monotonic() - started


def test_a_store_that_does_not_answer_never_fails_nor_stalls_the_proxy(
    production: LiteLLMProxy, upstream: FakeProvider
) -> None:
    # The first request to write an artifact waits for the store: two calls of 1 s. The
    # proxy's event loop serves other requests meanwhile (the bounding waits in a thread).
    results = [f"hung store {i}: " + "h" * SIZE for i in range(4)]
    answers: list[float] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            answers.append(_liveliness_seconds(production))
            time.sleep(0.05)

    poller = threading.Thread(target=poll)
    mark = production.log_mark()
    started = time.monotonic()
    poller.start()
    try:
        reply = chat(production, drivers.openai_chat_messages(results))
    finally:
        took = time.monotonic() - started
        done.set()
        poller.join()
    assert reply == "ok"
    sent = upstream_tool_texts(only_request(upstream))
    # Still bounded, naming no artifact that does not exist.
    assert sum(map(len, sent)) <= BUDGET
    assert not any("Full output:" in text for text in sent)
    assert "could not persist a tool output" in production.log_since(mark)
    assert took >= 1.0
    assert answers
    assert max(answers) < took / 2, (answers, took)
    # The next request (the store is skipped for a while after a failure): the same.
    upstream.clear()
    more = [f"hung store, later {i}: " + "k" * SIZE for i in range(4)]
    assert messages_call(production, drivers.anthropic_messages(more)) == "ok"
    sent = upstream_tool_texts(only_request(upstream))
    assert sum(map(len, sent)) <= BUDGET
    assert not any("Full output:" in text for text in sent)


def test_a_request_under_budget_goes_out_as_it_came(
    production: LiteLLMProxy, upstream: FakeProvider
) -> None:
    results: list[Any] = [f"small {i}: " + "ok " * 100 for i in range(5)]
    assert chat(production, drivers.openai_chat_messages(results)) == "ok"
    assert upstream_tool_texts(only_request(upstream)) == results
