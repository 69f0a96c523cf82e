"""The per-SDK helpers in budgetware.integrations, each driving its real SDK on loopback."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest
from http_helpers import assert_bounded, big_results
from testing import drivers

from budgetware.core.config import BudgetConfig
from budgetware.testing import FakeProvider

pytestmark = [
    pytest.mark.sdk,
    pytest.mark.filterwarnings("ignore:Items? .*ReadOnly.*qualifier:UserWarning"),
]
BIG = big_results()


def test_openai_budget_http_client_bounds_the_batch(
    fake_provider: FakeProvider, config: BudgetConfig, artifact_dir: Path
) -> None:
    from budgetware.integrations.openai import budget_http_client

    with budget_http_client(config=config) as http_client:
        drivers.send_openai_chat(fake_provider.url, BIG, http_client=http_client)
    assert_bounded("openai_chat", fake_provider.last.json(), BIG, artifact_dir)


async def test_openai_budget_aiohttp_client_bounds_the_batch(
    fake_provider: FakeProvider, config: BudgetConfig, artifact_dir: Path
) -> None:
    from budgetware.integrations.openai import budget_aiohttp_client

    async with budget_aiohttp_client(config=config) as http_client:
        await drivers.asend_openai_responses(fake_provider.url, BIG, http_client=http_client)
    assert_bounded("openai_responses", fake_provider.last.json(), BIG, artifact_dir)


def test_anthropic_budget_http_client_bounds_the_batch(
    fake_provider: FakeProvider, config: BudgetConfig, artifact_dir: Path
) -> None:
    from budgetware.integrations.anthropic import budget_http_client

    with budget_http_client(config=config) as http_client:
        drivers.send_anthropic(fake_provider.url, BIG, http_client=http_client)
    assert_bounded("anthropic", fake_provider.last.json(), BIG, artifact_dir)


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_a_budget_http_client_keeps_the_sdks_proxy_and_bounds_what_goes_through_it(
    sdk: str, fake_provider: FakeProvider, config: BudgetConfig, artifact_dir: Path
) -> None:
    # proxy= gives the client a transport of its own for proxied URLs: it is bounded too.
    integration = importlib.import_module(f"budgetware.integrations.{sdk}")
    send = drivers.send_openai_chat if sdk == "openai" else drivers.send_anthropic
    with integration.budget_http_client(config=config, proxy=fake_provider.url) as http_client:
        send("http://api.example.invalid", BIG, http_client=http_client)
    assert fake_provider.last.path.startswith("http://api.example.invalid/")  # via the proxy
    api = "openai_chat" if sdk == "openai" else "anthropic"
    assert_bounded(api, fake_provider.last.json(), BIG, artifact_dir)


def _anthropic_with_middleware(url: str, config: BudgetConfig, *, asynchronous: bool) -> Any:
    import anthropic

    from budgetware.integrations.anthropic import budget_middleware

    cls = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
    return cls(
        base_url=url,
        api_key=drivers.DUMMY_KEY,
        max_retries=0,
        middleware=[budget_middleware(config=config)],
    )


def test_anthropic_middleware_bounds_the_body_sync(
    fake_provider: FakeProvider, config: BudgetConfig, artifact_dir: Path
) -> None:
    with _anthropic_with_middleware(fake_provider.url, config, asynchronous=False) as client:
        client.messages.create(
            model=drivers.ANTHROPIC_MODEL,
            max_tokens=64,
            messages=drivers.anthropic_messages(BIG),
            extra_headers={"x-budgetware-unit": "chars"},
        )
    assert not [h for h in fake_provider.last.headers if h.startswith("x-budgetware")]
    assert_bounded("anthropic", fake_provider.last.json(), BIG, artifact_dir)


async def test_anthropic_middleware_bounds_the_body_async(
    fake_provider: FakeProvider, config: BudgetConfig, artifact_dir: Path
) -> None:
    async with _anthropic_with_middleware(fake_provider.url, config, asynchronous=True) as client:
        await client.messages.create(
            model=drivers.ANTHROPIC_MODEL, max_tokens=64, messages=drivers.anthropic_messages(BIG)
        )
    assert_bounded("anthropic", fake_provider.last.json(), BIG, artifact_dir)


def _genai_client(url: str, config: BudgetConfig) -> Any:
    from google import genai

    from budgetware.integrations.google_genai import budget_http_options

    options = budget_http_options(config=config, base_url=url)
    return genai.Client(api_key=drivers.DUMMY_KEY, http_options=options)


def _generate(client: Any) -> None:
    """One sync call carrying BIG, then the client closed."""
    try:
        client.models.generate_content(
            model=drivers.GEMINI_MODEL, contents=drivers.gemini_contents(BIG)
        )
    finally:
        client.close()


def _proxy_environment(monkeypatch: pytest.MonkeyPatch, **variables: str) -> None:
    """Only ``variables`` of the proxy variables httpx2 reads are set."""
    for name in ("HTTP_PROXY", "NO_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


async def test_google_genai_async_goes_through_the_budget_instead_of_aiohttp(
    fake_provider: FakeProvider, config: BudgetConfig, artifact_dir: Path
) -> None:
    client = _genai_client(fake_provider.url, config)
    assert not client._api_client._use_aiohttp()
    try:
        await client.aio.models.generate_content(
            model=drivers.GEMINI_MODEL, contents=drivers.gemini_contents(BIG)
        )
    finally:
        await client.aio.aclose()
        client.close()
    assert_bounded("gemini", fake_provider.last.json(), BIG, artifact_dir)


def test_google_genai_sync_goes_through_the_budget(
    fake_provider: FakeProvider, config: BudgetConfig, artifact_dir: Path
) -> None:
    client = _genai_client(fake_provider.url, config)
    _generate(client)
    assert_bounded("gemini", fake_provider.last.json(), BIG, artifact_dir)


@pytest.mark.parametrize("route", ["proxy", "mounts", "environment"])
def test_google_genai_a_proxy_in_the_client_args_is_used_inside_the_budget(
    fake_provider: FakeProvider,
    config: BudgetConfig,
    artifact_dir: Path,
    route: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # httpx2 makes a client's proxy a mount of its own, around a transport it was given,
    # and uses a mount given as it is: the budget's transport takes the proxy (with the
    # client's verify and http2), the mount goes inside a budget, and so do the mounts
    # httpx2 would make of HTTP_PROXY. The fake provider is the proxy here: it gets the
    # request in absolute form.
    import httpx2
    from google import genai

    from budgetware.integrations.google_genai import budget_http_options

    args: dict[str, Any] = {"proxy": fake_provider.url, "verify": False, "http2": False}
    if route == "mounts":
        args = {"mounts": {"http://": httpx2.HTTPTransport(proxy=fake_provider.url)}}
    elif route == "environment":  # as httpx2 reads it for a client without a transport
        _proxy_environment(monkeypatch, HTTP_PROXY=fake_provider.url)
        args = {}
    options = budget_http_options(config=config, base_url="http://genai.invalid", client_args=args)
    # The client keeps its settings but the proxy, which moved into the budget's transport.
    assert options.client_args is not None
    mounted = {"mounts"} if route == "environment" else set()
    assert set(options.client_args) == set(args) - {"proxy"} | {"transport"} | mounted
    client = genai.Client(api_key=drivers.DUMMY_KEY, http_options=options)
    _generate(client)
    assert fake_provider.last.path.startswith("http://genai.invalid/")
    assert_bounded("gemini", fake_provider.last.json(), BIG, artifact_dir)


def test_google_genai_no_proxy_in_the_environment_goes_direct_and_bounded(
    fake_provider: FakeProvider,
    config: BudgetConfig,
    artifact_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A host in NO_PROXY is reached directly, through the budget, not through HTTP_PROXY
    # (a port where nothing listens: the call would fail there).
    _proxy_environment(monkeypatch, HTTP_PROXY="http://127.0.0.1:9", NO_PROXY="127.0.0.1")
    client = _genai_client(fake_provider.url, config)
    _generate(client)
    assert fake_provider.last.path.startswith("/")
    assert_bounded("gemini", fake_provider.last.json(), BIG, artifact_dir)


def test_litellm_budget_http_handler_bounds_the_batch(
    fake_provider: FakeProvider, config: BudgetConfig, artifact_dir: Path
) -> None:
    from budgetware.integrations.litellm import budget_http_handler

    handler = budget_http_handler(config=config)
    try:
        drivers.send_litellm(fake_provider.url, BIG, provider="anthropic", http_client=handler)
    finally:
        handler.close()
    assert_bounded("anthropic", fake_provider.last.json(), BIG, artifact_dir)


async def test_litellm_budget_async_http_handler_bounds_the_batch(
    fake_provider: FakeProvider, config: BudgetConfig, artifact_dir: Path
) -> None:
    from budgetware.integrations.litellm import budget_async_http_handler

    handler = budget_async_http_handler(config=config)
    try:
        await drivers.asend_litellm(fake_provider.url, BIG, provider="gemini", http_client=handler)
    finally:
        await handler.close()
    assert_bounded("gemini", fake_provider.last.json(), BIG, artifact_dir)


@pytest.mark.parametrize(
    ("module", "helper", "sdk_module", "extra"),
    [
        ("openai", "budget_http_client", "openai", "openai"),
        ("google_genai", "budget_http_options", "google.genai", "google-genai"),
        ("litellm", "budget_http_handler", "litellm.llms.custom_httpx", "litellm"),
    ],
)
def test_missing_sdk_raises_import_error_naming_the_extra(
    module: str, helper: str, sdk_module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    integration = importlib.import_module(f"budgetware.integrations.{module}")
    monkeypatch.setitem(sys.modules, sdk_module, None)
    with pytest.raises(ImportError, match=rf'pip install "budgetware\[{extra}\]"'):
        getattr(integration, helper)()


def test_anthropic_missing_sdk_raises_import_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from budgetware.integrations import anthropic as integration

    integration._middleware_class.cache_clear()
    monkeypatch.setitem(sys.modules, "anthropic", None)
    try:
        with pytest.raises(ImportError, match=r'pip install "budgetware\[anthropic\]"'):
            integration.budget_middleware()
    finally:
        integration._middleware_class.cache_clear()


def test_openai_budget_http_client_follows_the_http_library_of_the_installed_sdk(
    monkeypatch: pytest.MonkeyPatch,
    fake_provider: FakeProvider,
    config: BudgetConfig,
    artifact_dir: Path,
) -> None:
    # openai 2.x (which llama-index and instructor pin) builds DefaultHttpxClient on classic
    # httpx; an httpx2 transport inside it fails every request with an AssertionError.
    import httpx
    import openai

    from budgetware.http.transport import BudgetTransport
    from budgetware.integrations.openai import budget_http_client

    class DefaultHttpxClient(httpx.Client):
        """openai 2.x's DefaultHttpxClient: an httpx.Client with the SDK's defaults."""

        def __init__(self, **kwargs: Any) -> None:
            kwargs.setdefault("follow_redirects", True)
            super().__init__(**kwargs)

    monkeypatch.setattr(openai, "DefaultHttpxClient", DefaultHttpxClient)
    with budget_http_client(config=config) as http_client:
        assert isinstance(http_client, httpx.Client)
        transport = http_client._transport
        assert isinstance(transport, BudgetTransport)
        assert isinstance(transport.inner, httpx.HTTPTransport)
        drivers.send_openai_chat(fake_provider.url, BIG, http_client=http_client)
    assert_bounded("openai_chat", fake_provider.last.json(), BIG, artifact_dir)


def test_a_budget_http_client_refuses_an_sdk_client_on_another_library(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import openai

    from budgetware.integrations.openai import budget_async_http_client

    class DefaultAsyncHttpxClient:
        def __init__(self, **kwargs: Any) -> None:
            pass

    monkeypatch.setattr(openai, "DefaultAsyncHttpxClient", DefaultAsyncHttpxClient)
    with pytest.raises(RuntimeError, match="neither httpx nor httpx2"):
        budget_async_http_client()
