"""A real LiteLLM Proxy for the tests: its config, its keys, and starting it.

The config routes two model names to the fake provider: ``gpt-fake`` (OpenAI Chat
Completions and Responses) and ``claude-fake`` (Anthropic Messages); ``pass_through_env``
sends the proxy's pass-through routes there too. Keys come from
``proxy_keys.py`` (the proxy's ``custom_auth``), which gives each test key the metadata a
proxy admin would set with ``/key/generate`` or ``/team/new`` (no database needed).
``forward_client_headers_to_llm_api`` is on, so the proxy forwards a client's ``x-*``
headers to the provider: budgetware's own must still never get there. Below: the real
openai and anthropic SDKs pointed at a proxy, and what the fake provider received.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from litellm_proxy_helpers import tool_texts
from testing.litellm_proxy import LiteLLMProxy

from budgetware.testing import FakeProvider, RecordedRequest

if TYPE_CHECKING:
    import anthropic
    import openai

HERE = Path(__file__).resolve().parent
HANDLER = "budgetware.integrations.litellm.proxy.handler"
OPENAI_MODEL = "gpt-fake"
ANTHROPIC_MODEL = "claude-fake"
MASTER_KEY = "sk-budgetware-proxy-test"


def proxy_config(upstream_url: str, *, callback: bool = True) -> dict[str, Any]:
    """The proxy config: both models at ``upstream_url``, budgetware's handler or none."""
    litellm_settings: dict[str, Any] = {}
    if callback:
        litellm_settings["callbacks"] = HANDLER
    return {
        "model_list": [
            {
                "model_name": OPENAI_MODEL,
                "litellm_params": {
                    "model": "openai/gpt-4o-mini",
                    "api_base": upstream_url + "/v1",
                    "api_key": "sk-fake-upstream",
                    "max_retries": 0,
                },
            },
            {
                "model_name": ANTHROPIC_MODEL,
                "litellm_params": {
                    "model": "anthropic/claude-haiku-4-5",
                    "api_base": upstream_url,
                    "api_key": "sk-fake-upstream",
                    "max_retries": 0,
                },
            },
        ],
        "litellm_settings": litellm_settings,
        "router_settings": {"num_retries": 0, "disable_cooldowns": True},
        "general_settings": {
            "master_key": MASTER_KEY,
            "custom_auth": "proxy_keys.user_api_key_auth",
            "forward_client_headers_to_llm_api": True,
        },
    }


def proxy_env(artifact_dir: Path | None, **settings: str) -> dict[str, str | None]:
    """The proxy's environment: no BUDGETWARE_* variable of this process (a test may have
    set one), then the artifact directory and ``settings`` (``batch_budget="50000"``)."""
    env: dict[str, str | None] = {
        name: None for name in os.environ if name.startswith("BUDGETWARE_")
    }
    if artifact_dir is not None:
        env["BUDGETWARE_ARTIFACT_DIR"] = str(artifact_dir)
    for name, value in settings.items():
        env["BUDGETWARE_" + name.upper()] = value
    return env


def pass_through_env(upstream_url: str) -> dict[str, str | None]:
    """Where the proxy's pass-through routes (``/anthropic/...``, ``/openai/...``,
    ``/gemini/...``, ``/cohere/...``) send requests: the fake provider, with fake keys."""
    env: dict[str, str | None] = {}
    for provider in ("ANTHROPIC", "OPENAI", "GEMINI", "COHERE"):
        env[f"{provider}_API_BASE"] = upstream_url
        env[f"{provider}_API_KEY"] = "sk-fake-upstream"
    return env


def new_proxy(
    workdir: Path, config: Mapping[str, Any], env: Mapping[str, str | None]
) -> LiteLLMProxy:
    """A proxy (not started) in ``workdir``, with the test keys (and the faulty callbacks
    module) next to its config. It starts warm: forked from this process's fork server,
    which imported litellm once (``scripts/check-proxy-extra`` compares a warm proxy with
    the ``litellm`` command)."""
    workdir.mkdir(parents=True, exist_ok=True)
    for module in ("proxy_keys.py", "faulty_callbacks.py"):
        shutil.copy(HERE / module, workdir / module)
    return LiteLLMProxy(config, env=env, workdir=workdir, master_key=MASTER_KEY, warm=True)


def start_all(proxies: Iterable[LiteLLMProxy]) -> None:
    """Start every proxy at once (their imports overlap), then wait for each."""
    started = list(proxies)
    for proxy in started:
        proxy.launch()
    for proxy in started:
        proxy.wait_ready()


def stop_all(proxies: Iterable[LiteLLMProxy]) -> None:
    """Stop every proxy at once (each ends in a few tenths of a second), then wait for each."""
    stopping = list(proxies)
    for proxy in stopping:
        proxy.terminate()
    for proxy in stopping:
        proxy.stop()


# --- clients --------------------------------------------------------------------------------


def openai_client(proxy: LiteLLMProxy, key: str | None = None) -> openai.OpenAI:
    import openai

    return openai.OpenAI(
        base_url=proxy.url + "/v1", api_key=key or proxy.master_key, max_retries=0
    )


def anthropic_client(proxy: LiteLLMProxy, key: str | None = None) -> anthropic.Anthropic:
    import anthropic

    return anthropic.Anthropic(base_url=proxy.url, api_key=key or proxy.master_key, max_retries=0)


def chat(
    proxy: LiteLLMProxy,
    messages: list[dict[str, Any]],
    *,
    key: str | None = None,
    headers: dict[str, str] | None = None,
    model: str = OPENAI_MODEL,
) -> str:
    with openai_client(proxy, key) as client:
        reply = client.chat.completions.create(
            model=model, messages=messages, extra_headers=headers
        )
    return reply.choices[0].message.content or ""


def messages_call(
    proxy: LiteLLMProxy,
    messages: list[dict[str, Any]],
    headers: dict[str, str] | None = None,
    *,
    key: str | None = None,
) -> str:
    with anthropic_client(proxy, key) as client:
        reply = client.messages.create(
            model=ANTHROPIC_MODEL,
            max_tokens=64,
            messages=messages,
            extra_headers=headers,
        )
    return "".join(block.text for block in reply.content if block.type == "text")


def responses_call(
    proxy: LiteLLMProxy,
    items: list[dict[str, Any]],
    headers: dict[str, str] | None = None,
    *,
    key: str | None = None,
) -> str:
    with openai_client(proxy, key) as client:
        reply = client.responses.create(model=OPENAI_MODEL, input=items, extra_headers=headers)
    return reply.output_text


# --- what the provider received ---------------------------------------------------------------


def model_requests(fp: FakeProvider) -> list[RecordedRequest]:
    return [r for r in fp.requests if r.api is not None]


def only_request(fp: FakeProvider) -> RecordedRequest:
    requests = model_requests(fp)
    assert len(requests) == 1, [r.path for r in requests]
    return requests[0]


def upstream_tool_texts(request: RecordedRequest) -> list[str]:
    body = request.json()
    if "input" in body:
        return tool_texts("input", body["input"])
    return [
        text if isinstance(text, str) else _block_text(text)
        for text in tool_texts("messages", body["messages"])
    ]


def _block_text(content: Any) -> str:
    # litellm may send an Anthropic tool_result's content as a list of text blocks.
    return "".join(block["text"] for block in content)
