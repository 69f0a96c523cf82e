"""The litellm hooks never hold the event loop while a store waits (an S3 PUT held open).

The proxy hook serves every client of a LiteLLM Proxy from one event loop, the deployment
hook an SDK process's: a request bounded on the loop while its artifact's S3 PUT waits
(seconds, if the endpoint hangs) would stall every other request as long. Each test bounds
a 200 KB request with an S3 store whose PUT is held until the loop has turned beside it
(``held_s3``: structural, no wall-time threshold): bounded on the loop, no tick comes in
before botocore gives up; bounded in a worker thread, the loop turns, however loaded.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from held_s3 import (
    TICKS,
    TIMEOUT,
    Held,
    HeldS3,
    held_s3,
    held_s3_store_url,
    prepare_store,
    ticks_while_held,
)
from litellm_proxy_helpers import proxy_data
from testing import drivers

from budgetware.core.config import BudgetConfig

SIZE = 200_000


def _acompletion() -> Any:
    # litellm imported when a test runs, not while collecting: seconds of CPU per process.
    from litellm.types.utils import CallTypes

    return CallTypes.acompletion


@dataclass(frozen=True)
class HeldStore:
    store: HeldS3
    url: str
    callback: Any


@pytest.fixture
def held_store(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldStore]:
    """The callback, with a 5,000-character budget and an S3 store whose PUTs are held."""
    from budgetware.integrations.litellm import budget_callback

    with held_s3(s3_endpoint) as store:
        url = held_s3_store_url(monkeypatch, store)
        config = BudgetConfig(
            batch_budget=5000, artifact_store=url, artifact_store_timeout=TIMEOUT
        )
        prepare_store(config)
        yield HeldStore(store, url, budget_callback(config=config))


def _assert_bounded_off_the_loop(held_store: HeldStore, held: Held) -> None:
    # The loop kept turning while the store held the artifact's PUT; the hook waited.
    assert held.ticks >= TICKS, held
    assert not held.done_while_held
    assert held_store.store.abandoned == 0
    # Released, the write went through: bounded to the budget, naming the artifact.
    text = held.result["messages"][-1]["content"]
    assert len(text) <= 5000
    assert held_store.url + "/" in text


async def test_the_proxy_hook_bounds_off_the_loop_while_the_store_waits(
    held_store: HeldStore,
) -> None:
    data = proxy_data("messages", drivers.openai_chat_messages(["L" * SIZE]))
    data["proxy_server_request"]["headers"]["content-length"] = str(SIZE + 300)
    from litellm.caching.dual_cache import DualCache
    from litellm.proxy._types import UserAPIKeyAuth

    hook = held_store.callback.async_pre_call_hook
    held = await ticks_while_held(
        held_store.store, hook(UserAPIKeyAuth(), DualCache(), data, "acompletion")
    )
    _assert_bounded_off_the_loop(held_store, held)


async def test_the_deployment_hook_bounds_off_the_loop_while_the_store_waits(
    held_store: HeldStore,
) -> None:
    kwargs = {"model": "gpt-4o-mini", "messages": drivers.openai_chat_messages(["M" * SIZE])}
    hook = held_store.callback.async_pre_call_deployment_hook
    held = await ticks_while_held(held_store.store, hook(kwargs, _acompletion()))
    _assert_bounded_off_the_loop(held_store, held)


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
