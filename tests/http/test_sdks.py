"""Every SDK, on loopback: a batch of big tool results arrives bounded, a small one untouched."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from http_helpers import assert_bounded, big_results, small_results
from testing.drivers import DRIVERS, DRIVERS_BY_NAME, Driver, needs_sdk, params

from budgetware.core.config import BudgetConfig
from budgetware.http.instrument import instrument
from budgetware.http.transport import AsyncBudgetTransport, BudgetTransport
from budgetware.testing import FakeProvider

pytestmark = [
    pytest.mark.sdk,
    # litellm's gemini provider imports a TypedDict pydantic warns about (not our code).
    pytest.mark.filterwarnings("ignore:Items? .*ReadOnly.*qualifier:UserWarning"),
]

# google-genai's aiohttp path has no HTTP seam: covered through its integration instead.
SYNC = [d for d in DRIVERS if d.send is not None]
ASYNC = [d for d in DRIVERS if d.asend is not None and d.http_library != "aiohttp"]
MODES = ["instrument", "transport"]
BIG = big_results()


def wrapping(config: BudgetConfig) -> Callable[[Any], Any]:
    def wrap(inner: Any) -> Any:
        if hasattr(inner, "handle_async_request"):
            return AsyncBudgetTransport(inner, config=config)
        return BudgetTransport(inner, config=config)

    return wrap


def _route_body(provider: FakeProvider, driver: Driver) -> Any:
    [request] = [r for r in provider.requests if r.route == driver.path]
    return request


def send(driver: Driver, provider: FakeProvider, results: list[str], **kwargs: Any) -> bytes:
    assert driver.send is not None
    provider.clear()
    driver.send(provider.url, results, **kwargs)
    return bytes(_route_body(provider, driver).body)


async def asend(
    driver: Driver, provider: FakeProvider, results: list[str], **kwargs: Any
) -> bytes:
    assert driver.asend is not None
    provider.clear()
    await driver.asend(provider.url, results, **kwargs)
    return bytes(_route_body(provider, driver).body)


def _json(body: bytes) -> Any:
    import json

    return json.loads(body)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("driver", params(SYNC))
def test_big_batch_arrives_within_budget_sync(
    driver: Driver,
    mode: str,
    fake_provider: FakeProvider,
    config: BudgetConfig,
    artifact_dir: Path,
) -> None:
    if mode == "instrument":
        with instrument(config=config):
            body = send(driver, fake_provider, BIG)
    else:
        body = send(driver, fake_provider, BIG, wrap_transport=wrapping(config))
    assert_bounded(driver.api, _json(body), BIG, artifact_dir)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("driver", params(ASYNC))
async def test_big_batch_arrives_within_budget_async(
    driver: Driver,
    mode: str,
    fake_provider: FakeProvider,
    config: BudgetConfig,
    artifact_dir: Path,
) -> None:
    if mode == "instrument":
        with instrument(config=config):
            body = await asend(driver, fake_provider, BIG)
    else:
        body = await asend(driver, fake_provider, BIG, wrap_transport=wrapping(config))
    assert_bounded(driver.api, _json(body), BIG, artifact_dir)


@pytest.mark.parametrize("driver", params(SYNC))
def test_batch_under_budget_arrives_byte_identical_sync(
    driver: Driver, fake_provider: FakeProvider, config: BudgetConfig
) -> None:
    results = small_results()
    plain = send(driver, fake_provider, results)
    with instrument(config=config):
        instrumented = send(driver, fake_provider, results)
    wrapped = send(driver, fake_provider, results, wrap_transport=wrapping(config))
    assert instrumented == plain
    assert wrapped == plain


@pytest.mark.parametrize("driver", params(ASYNC))
async def test_batch_under_budget_arrives_byte_identical_async(
    driver: Driver, fake_provider: FakeProvider, config: BudgetConfig
) -> None:
    results = small_results()
    plain = await asend(driver, fake_provider, results)
    with instrument(config=config):
        instrumented = await asend(driver, fake_provider, results)
    wrapped = await asend(driver, fake_provider, results, wrap_transport=wrapping(config))
    assert instrumented == plain
    assert wrapped == plain


@needs_sdk(DRIVERS_BY_NAME["google_genai_aiohttp"])
async def test_google_genai_default_aiohttp_path_is_bounded_under_instrument(
    fake_provider: FakeProvider, config: BudgetConfig, artifact_dir: Path
) -> None:
    driver = DRIVERS_BY_NAME["google_genai_aiohttp"]
    with instrument(config=config):
        body = await asend(driver, fake_provider, BIG)
    assert_bounded(driver.api, _json(body), BIG, artifact_dir)


@needs_sdk(DRIVERS_BY_NAME["google_genai_aiohttp"])
@pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")
async def test_google_genai_default_aiohttp_path_is_untouched_after_uninstrument(
    fake_provider: FakeProvider, config: BudgetConfig
) -> None:
    from google.genai._api_client import BaseApiClient

    original = vars(BaseApiClient)["_use_aiohttp"]
    with instrument(config=config):
        assert vars(BaseApiClient)["_use_aiohttp"] is not original
    assert vars(BaseApiClient)["_use_aiohttp"] is original
    driver = DRIVERS_BY_NAME["google_genai_aiohttp"]
    # Under aiohttp's 1 MiB "large body" warning, yet far over the 50,000 budget.
    results = big_results(3, 100_000)
    body = await asend(driver, fake_provider, results)
    parts = _json(body)["contents"][2]["parts"]
    assert [p["functionResponse"]["response"]["output"] for p in parts] == results
