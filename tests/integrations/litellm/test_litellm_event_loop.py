"""The litellm hooks never hold the event loop while a store waits (an S3 store that hangs).

The proxy hook serves every client of a LiteLLM Proxy from one event loop, the deployment
hook an SDK process's: a request bounded on the loop while its artifact's S3 calls wait
for their timeout would stall every other request for seconds. Each test bounds a 200 KB
request with a store on an endpoint that never answers, beside a ticker: the request waits
(two calls' timeouts), the ticker's worst lateness stays a small part of that.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hung_s3 import TIMEOUT, hung_s3_config, hung_s3_endpoint, stalls
from litellm_proxy_helpers import proxy_data
from testing import drivers

SIZE = 200_000


def _acompletion() -> Any:
    # litellm imported when a test runs, not while collecting: seconds of CPU per process.
    from litellm.types.utils import CallTypes

    return CallTypes.acompletion


@pytest.fixture
def hung_store(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The callback, with a 5,000-character budget and an S3 store that never answers."""
    from budgetware.integrations.litellm import budget_callback

    with hung_s3_endpoint() as endpoint:
        yield budget_callback(config=hung_s3_config(monkeypatch, endpoint))


def _assert_bounded_without_reference(messages: list[dict[str, Any]]) -> None:
    text = messages[-1]["content"]
    assert len(text) <= 5000
    assert "s3://" not in text


def _assert_the_loop_kept_ticking(seconds: float, worst: float) -> None:
    # The store made the request wait (connect, then read, timed out) ...
    assert seconds >= TIMEOUT
    # ... and the loop went on meanwhile: a stall of the whole wait would be `seconds`.
    assert worst < seconds / 3, (worst, seconds)


async def test_the_proxy_hook_bounds_off_the_loop_while_the_store_hangs(hung_store: Any) -> None:
    data = proxy_data("messages", drivers.openai_chat_messages(["L" * SIZE]))
    data["proxy_server_request"]["headers"]["content-length"] = str(SIZE + 300)
    from litellm.caching.dual_cache import DualCache
    from litellm.proxy._types import UserAPIKeyAuth

    measured = await stalls(
        hung_store.async_pre_call_hook(UserAPIKeyAuth(), DualCache(), data, "acompletion")
    )
    _assert_bounded_without_reference(measured.result["messages"])
    _assert_the_loop_kept_ticking(measured.seconds, measured.worst)


async def test_the_deployment_hook_bounds_off_the_loop_while_the_store_hangs(
    hung_store: Any,
) -> None:
    kwargs = {"model": "gpt-4o-mini", "messages": drivers.openai_chat_messages(["M" * SIZE])}
    measured = await stalls(hung_store.async_pre_call_deployment_hook(kwargs, _acompletion()))
    _assert_bounded_without_reference(measured.result["messages"])
    _assert_the_loop_kept_ticking(measured.seconds, measured.worst)


@pytest.mark.parametrize(("size", "off_loop"), [(60_000, False), (2 << 20, True)])
async def test_the_deployment_hook_leaves_the_loop_for_a_large_request_only(
    callback: Any, monkeypatch: pytest.MonkeyPatch, size: int, off_loop: bool
) -> None:
    # With a local store: from 1 MiB (by the JSON size) in a worker thread; a smaller one
    # on the loop, where a thread hop would cost more than the bounding.
    import threading

    from budgetware.integrations.litellm import _callback

    threads: list[threading.Thread] = []
    real = _callback._bound_conversation

    def spy(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(_callback, "_bound_conversation", spy)
    kwargs = {"model": "gpt-4o-mini", "messages": drivers.openai_chat_messages(["s" * size])}
    result = await callback.async_pre_call_deployment_hook(kwargs, _acompletion())
    assert len(result["messages"][-1]["content"]) < size
    assert (threads[0] is not threading.current_thread()) is off_loop
