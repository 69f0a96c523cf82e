"""Fixtures for the LiteLLM Proxy / Router tests: a budget config, a callback, a fake provider."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hung_s3 import hung_s3_endpoint
from litellm_proxy_helpers import BUDGET
from proxy_replicas import Replicas, local_replicas, s3_replicas
from proxy_server_helpers import (
    new_proxy,
    pass_through_env,
    proxy_config,
    proxy_env,
    start_all,
    stop_all,
)
from testing.litellm_proxy import LiteLLMProxy
from testing.s3 import aws_env

from budgetware.core.config import BudgetConfig
from budgetware.testing import FakeProvider
from budgetware.testing._apis import default_policy


@pytest.fixture
def artifact_dir(tmp_path: Path) -> Path:
    return tmp_path / "artifacts"


@pytest.fixture
def config(artifact_dir: Path) -> BudgetConfig:
    return BudgetConfig(batch_budget=BUDGET, artifact_dir=artifact_dir)


@pytest.fixture
def callback(config: BudgetConfig) -> Any:
    from budgetware.integrations.litellm import budget_callback

    return budget_callback(config=config)


@pytest.fixture
def permissive(artifact_dir: Path) -> Any:
    """A callback whose operator lets clients' headers set anything (``allow``)."""
    from budgetware.integrations.litellm import budget_callback

    config = BudgetConfig(batch_budget=BUDGET, artifact_dir=artifact_dir, client_overrides="allow")
    return budget_callback(config=config)


@pytest.fixture
def registered(callback: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The callback as litellm's only callback, for this test only."""
    import litellm

    monkeypatch.setattr(litellm, "callbacks", [callback])
    return callback


# --- a real LiteLLM Proxy ----------------------------------------------------------------


@pytest.fixture(scope="session")
def proxy_upstream() -> Iterator[FakeProvider]:
    """The fake provider behind every proxy of the session."""
    with FakeProvider() as provider:
        yield provider


@pytest.fixture(scope="session")
def start_proxies(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., list[LiteLLMProxy]]]:
    """``start_proxies((name, config, env), ...)``: proxies started together on free ports
    of 127.0.0.1, each in its own directory; all stopped at the end of the session."""
    started: list[LiteLLMProxy] = []

    def start(
        *specs: tuple[str, Mapping[str, Any], Mapping[str, str | None]],
    ) -> list[LiteLLMProxy]:
        proxies = [
            new_proxy(tmp_path_factory.mktemp(f"proxy-{name}"), config, env)
            for name, config, env in specs
        ]
        started.extend(proxies)
        start_all(proxies)
        return proxies

    yield start
    stop_all(started)


@pytest.fixture(scope="session")
def gateway_artifact_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gateway") / "artifacts"


@pytest.fixture(scope="session")
def proxy_pair(
    start_proxies: Callable[..., list[LiteLLMProxy]],
    proxy_upstream: FakeProvider,
    gateway_artifact_dir: Path,
) -> tuple[LiteLLMProxy, LiteLLMProxy]:
    """``(gateway, baseline)``: the same proxy config with budgetware's callback and without.

    The gateway raises budgetware's internal errors (as the test suite does), so a request
    that gets through shows that none happened.
    """
    routes = pass_through_env(proxy_upstream.url)
    gateway, baseline = start_proxies(
        (
            "gateway",
            proxy_config(proxy_upstream.url),
            {
                **proxy_env(gateway_artifact_dir, batch_budget=str(BUDGET), raise_errors="1"),
                **routes,
            },
        ),
        (
            "baseline",
            proxy_config(proxy_upstream.url, callback=False),
            {**proxy_env(None), **routes},
        ),
    )
    return gateway, baseline


@pytest.fixture(scope="session")
def production(
    start_proxies: Callable[..., list[LiteLLMProxy]], proxy_upstream: FakeProvider
) -> Iterator[LiteLLMProxy]:
    """A proxy with the production settings: internal errors send the request unchanged
    (``BUDGETWARE_RAISE_ERRORS=0``), and its store is an S3 bucket on an endpoint that
    accepts connections and never answers (1 s per call). Its callback is budgetware's
    with a fault planted for requests that ask for one (``faulty_callbacks.py``). Its
    operator lets clients' headers decide (``client_overrides: allow``), in its config."""
    with hung_s3_endpoint() as endpoint:
        config = proxy_config(proxy_upstream.url)
        config["litellm_settings"]["callbacks"] = "faulty_callbacks.handler"
        config["environment_variables"] = {"BUDGETWARE_CLIENT_OVERRIDES": "allow"}
        env = proxy_env(
            None,
            batch_budget=str(BUDGET),
            raise_errors="0",
            artifact_store="s3://budgetware-hung/production",
            artifact_store_timeout="1",
            artifact_sweep_interval="0",
        )
        env.update(aws_env(endpoint))
        env.update({"AWS_ENDPOINT_URL": None, "AWS_PROFILE": None})
        env.update(pass_through_env(proxy_upstream.url))
        (proxy,) = start_proxies(("production", config, env))
        yield proxy


@pytest.fixture(scope="session", name="local_replicas")
def _local_replicas(
    start_proxies: Callable[..., list[LiteLLMProxy]],
    proxy_upstream: FakeProvider,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Replicas]:
    """Two replicas on one local directory, for every module that needs replicas."""
    directory = tmp_path_factory.mktemp("replicas") / "artifacts"
    with local_replicas(start_proxies, proxy_upstream.url, directory) as pair:
        yield pair


@pytest.fixture(scope="session", name="s3_replicas")
def _s3_replicas(
    request: pytest.FixtureRequest,
    start_proxies: Callable[..., list[LiteLLMProxy]],
    proxy_upstream: FakeProvider,
) -> Iterator[Replicas]:
    """Two replicas on one S3 bucket (the local moto server)."""
    pytest.importorskip("boto3")
    with s3_replicas(
        start_proxies, proxy_upstream.url, request.getfixturevalue("s3_endpoint")
    ) as pair:
        yield pair


@pytest.fixture
def gateway(proxy_pair: tuple[LiteLLMProxy, LiteLLMProxy]) -> LiteLLMProxy:
    return proxy_pair[0]


@pytest.fixture
def baseline(proxy_pair: tuple[LiteLLMProxy, LiteLLMProxy]) -> LiteLLMProxy:
    return proxy_pair[1]


@pytest.fixture
def upstream(proxy_upstream: FakeProvider) -> Iterator[FakeProvider]:
    """The session's fake provider, with no recorded request and the default reply."""
    proxy_upstream.clear()
    yield proxy_upstream
    proxy_upstream.reply = default_policy
