"""Only model traffic is touched: known model endpoints, declared ones, sniffing as opt-in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from budgetware.core.config import FORMAT_NAMES, BudgetConfig, ConfigError
from budgetware.http.instrument import instrument
from budgetware.http.transport import BudgetTransport
from budgetware.testing import FakeProvider
from budgetware.wire.body import finalize_body
from budgetware.wire.detect import FORMATS, SNIFF, format_for_url

BIG = "B" * 3_000
# What a user's own backend receives when it saves a transcript: chat-shaped JSON.
TRANSCRIPT = json.dumps(
    {
        "title": "my chat",
        "messages": [
            {"role": "user", "content": "run it"},
            {"role": "assistant", "tool_calls": [{"id": "a", "type": "function"}]},
            {"role": "tool", "tool_call_id": "a", "content": BIG},
        ],
    }
).encode()


def _config(tmp_path: Path, **settings: Any) -> BudgetConfig:
    return BudgetConfig(batch_budget=1_000, artifact_dir=tmp_path, **settings)


def test_a_chat_shaped_upload_to_a_non_model_endpoint_is_left_alone(tmp_path: Path) -> None:
    out = finalize_body("https://example.com/upload", TRANSCRIPT, config=_config(tmp_path))
    assert out is TRANSCRIPT


def test_the_same_body_to_a_model_endpoint_is_bounded(tmp_path: Path) -> None:
    out = finalize_body(
        "https://api.example.com/v1/chat/completions", TRANSCRIPT, config=_config(tmp_path)
    )
    assert len(json.loads(out)["messages"][2]["content"]) <= 1_000


def test_sniffing_unknown_endpoints_is_an_explicit_opt_in(tmp_path: Path) -> None:
    config = _config(tmp_path, sniff_unknown_endpoints=True)
    out = finalize_body("https://example.com/upload", TRANSCRIPT, config=config)
    assert len(json.loads(out)["messages"][2]["content"]) <= 1_000


@pytest.mark.parametrize(
    ("pattern", "url"),
    [
        ("llm.internal", "https://llm.internal/run"),
        ("llm.internal:8443", "https://llm.internal:8443/run"),
        ("*.internal/agents/*/run", "http://gpu7.internal/agents/a1/run"),
        ("/agents/*/run", "http://10.0.0.1:9000/agents/a1/run?x=1"),
        ("https://LLM.internal/run", "https://llm.internal/run/"),
    ],
)
def test_a_declared_endpoint_is_bounded_with_its_format(
    tmp_path: Path, pattern: str, url: str
) -> None:
    config = _config(tmp_path, endpoints={pattern: "openai_chat"})
    out = finalize_body(url, TRANSCRIPT, config=config)
    assert len(json.loads(out)["messages"][2]["content"]) <= 1_000


@pytest.mark.parametrize(
    ("pattern", "url"),
    [
        ("llm.internal", "https://other.internal/run"),
        ("*.internal/agents/*/run", "http://gpu7.internal/agents/a1/stop"),
        ("/agents/*/run", "http://host/v2/agents/a1/run"),
    ],
)
def test_a_declared_pattern_matches_only_its_endpoints(
    tmp_path: Path, pattern: str, url: str
) -> None:
    config = _config(tmp_path, endpoints={pattern: "openai_chat"})
    assert finalize_body(url, TRANSCRIPT, config=config) is TRANSCRIPT


def test_none_leaves_a_known_model_path_alone(tmp_path: Path) -> None:
    # A user's own service that happens to live at Ollama's path.
    config = _config(tmp_path, endpoints={"notes.example.com/api/chat": "none"})
    assert finalize_body("https://notes.example.com/api/chat", TRANSCRIPT, config=config) is (
        TRANSCRIPT
    )
    ollama = finalize_body("http://127.0.0.1:11434/api/chat", TRANSCRIPT, config=config)
    assert ollama is not TRANSCRIPT


def test_a_declared_format_wins_over_the_path() -> None:
    config = BudgetConfig(endpoints={"/v1/chat/completions": "anthropic_messages"})
    fmt = format_for_url("http://gw/v1/chat/completions", config)
    assert fmt is not None
    assert fmt.name == "anthropic_messages"


@pytest.mark.parametrize(
    ("url", "name"),
    [
        # Azure OpenAI: deployments and an api-version query.
        (
            "https://r.openai.azure.com/openai/deployments/gpt4o/chat/completions"
            "?api-version=2024-10-21",
            "openai_chat",
        ),
        ("https://r.openai.azure.com/openai/v1/responses?api-version=preview", "openai_responses"),
        # vLLM, LiteLLM Proxy, Ollama's OpenAI endpoint, OpenRouter, Groq.
        ("http://127.0.0.1:8000/v1/chat/completions", "openai_chat"),
        ("http://litellm:4000/chat/completions", "openai_chat"),
        ("http://litellm:4000/v1/messages", "anthropic_messages"),
        ("http://litellm:4000/anthropic/v1/messages", "anthropic_messages"),
        ("http://litellm:4000/engines/gpt-4o/chat/completions", "openai_chat"),
        ("http://127.0.0.1:11434/v1/chat/completions", "openai_chat"),
        ("http://127.0.0.1:11434/api/chat", "ollama_chat"),
        ("https://openrouter.ai/api/v1/chat/completions", "openai_chat"),
        ("https://api.groq.com/openai/v1/chat/completions", "openai_chat"),
        # Claude on Vertex AI and on Bedrock (InvokeModel; unsigned with an API key).
        (
            "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/"
            "publishers/anthropic/models/claude-sonnet-4@20250514:streamRawPredict",
            "anthropic_messages",
        ),
        (
            "https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/"
            "anthropic/models/count-tokens:rawPredict",
            "anthropic_messages",
        ),
        (
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
            "us.anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke",
            "anthropic_messages",
        ),
        (
            "https://gw/bedrock/model/anthropic.claude-v2/invoke-with-response-stream",
            "anthropic_messages",
        ),
        ("https://gw/bedrock/model/amazon.nova-pro-v1:0/converse", "bedrock_converse"),
        ("https://gw/gemini/v1beta/models/gemini-2.5-pro:generateContent", "gemini"),
    ],
)
def test_known_model_endpoints_of_gateways_and_self_hosted_servers(url: str, name: str) -> None:
    fmt = format_for_url(url, BudgetConfig())
    assert fmt is not None
    assert fmt.name == name


def test_an_unknown_endpoint_is_sniffed_only_when_asked() -> None:
    assert format_for_url("https://example.com/upload", BudgetConfig()) is None
    assert format_for_url("https://example.com/upload") is None
    on = BudgetConfig(sniff_unknown_endpoints=True)
    assert format_for_url("https://example.com/upload", on) is SNIFF
    assert format_for_url("https://example.com/api/generate", on) is None  # never rewritten


def test_the_declared_format_names_are_the_wire_formats() -> None:
    assert set(FORMAT_NAMES) == {fmt.name for fmt in FORMATS}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"llm.internal/run": "openai_chat"}', {"llm.internal/run": "openai_chat"}),
        (
            "llm.internal/run=openai_chat, /agents/*=anthropic_messages",
            {"llm.internal/run": "openai_chat", "/agents/*": "anthropic_messages"},
        ),
        ("", {}),
    ],
)
def test_endpoints_from_the_environment(raw: str, expected: dict[str, str]) -> None:
    config = BudgetConfig.from_env({"BUDGETWARE_ENDPOINTS": raw})
    assert config.endpoints == expected


@pytest.mark.parametrize(
    "raw", ['{"llm.internal": "openai"}', "{bad json", "llm.internal", '{"": "gemini"}']
)
def test_a_bad_endpoint_setting_names_the_variable(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="BUDGETWARE_ENDPOINTS"):
        BudgetConfig.from_env({"BUDGETWARE_ENDPOINTS": raw})
    monkeypatch.setenv("BUDGETWARE_ENDPOINTS", raw)
    with pytest.raises(ConfigError, match="BUDGETWARE_ENDPOINTS"):
        instrument()


# -- the HTTP layer: what reaches the server ------------------------------------------------


def test_instrument_sends_a_users_own_upload_unchanged(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    with instrument(config=_config(tmp_path)), httpx2.Client() as client:
        client.post(
            fake_provider.url + "/upload",
            content=TRANSCRIPT,
            headers={"content-type": "application/json"},
        )
        client.post(
            fake_provider.url + "/v1/chat/completions",
            content=TRANSCRIPT,
            headers={"content-type": "application/json"},
        )
    upload, chat = fake_provider.requests
    assert upload.body == TRANSCRIPT
    assert len(chat.json()["messages"][2]["content"]) <= 1_000


def test_a_transport_bounds_a_declared_gateway_endpoint(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    config = _config(tmp_path, endpoints={"/upload": "openai_chat"})
    transport = BudgetTransport(httpx2.HTTPTransport(), config=config)
    with httpx2.Client(transport=transport) as client:
        client.post(fake_provider.url + "/upload", content=TRANSCRIPT)
        client.post(fake_provider.url + "/other", content=TRANSCRIPT)
    declared, other = fake_provider.requests
    assert len(declared.json()["messages"][2]["content"]) <= 1_000
    assert other.body == TRANSCRIPT


# -- patterns: IPv6 hosts, a trailing slash; settings that turn bad later ----------------------


@pytest.mark.parametrize(
    ("pattern", "url"),
    [
        ("[::1]:8000/x", "http://[::1]:8000/x"),
        ("[::1]", "http://[::1]:8000/v9/run"),
        ("http://[::1]:8000", "http://[::1]:8000/v9/run"),
        ("[fe80::*]/llm/*", "http://[fe80::1]/llm/run"),
        ("llm.internal/", "https://llm.internal/v9/run"),
        ("llm.internal/", "https://llm.internal/"),
        ("llm.internal/*", "https://llm.internal/deep/er/run"),
    ],
)
def test_ipv6_hosts_and_a_trailing_slash_match(pattern: str, url: str) -> None:
    config = BudgetConfig(endpoints={pattern: "anthropic_messages"})
    fmt = format_for_url(url, config)
    assert fmt is not None
    assert fmt.name == "anthropic_messages"


def test_brackets_in_a_host_pattern_are_literal() -> None:
    config = BudgetConfig(endpoints={"[ab]pi.internal": "anthropic_messages"})
    assert format_for_url("http://api.internal/run", config) is None
    assert format_for_url("http://bpi.internal/run", config) is None


KNOWN = "https://notes.example.com/v1/chat/completions"


def test_an_endpoints_value_that_turns_bad_later_leaves_every_request_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The user excluded their own service, at a known model path, with "none". If the
    # value turns bad, budgetware cannot know what was excluded: it touches nothing.
    monkeypatch.setenv("BUDGETWARE_ENDPOINTS", json.dumps({"notes.example.com": "none"}))
    monkeypatch.setenv("BUDGETWARE_BATCH_BUDGET", "1000")
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", str(tmp_path))
    assert finalize_body(KNOWN, TRANSCRIPT) is TRANSCRIPT  # excluded, as set up
    monkeypatch.setenv("BUDGETWARE_ENDPOINTS", '{"notes.example.com": "nope"')
    assert finalize_body(KNOWN, TRANSCRIPT) is TRANSCRIPT  # and still: fail closed
    assert "BUDGETWARE_ENDPOINTS" in caplog.text
    # A configuration that sets endpoints itself does not depend on the bad value.
    config = _config(tmp_path, endpoints={"other.example.com": "none"})
    bounded = finalize_body(KNOWN, TRANSCRIPT, config=config)
    assert len(json.loads(bounded)["messages"][2]["content"]) <= 1_000


def test_finalize_body_without_a_config_is_lenient_like_bound_payload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from budgetware.wire.payload import bound_payload

    monkeypatch.setenv("BUDGETWARE_BATCH_BUDGET", "1000")
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", str(tmp_path))
    monkeypatch.setenv("BUDGETWARE_MAX_ARTIFACT_BYTES", "lots")  # turned bad after setup
    url = "https://api.example.com/v1/chat/completions"
    out = finalize_body(url, TRANSCRIPT)
    assert len(json.loads(out)["messages"][2]["content"]) <= 1_000
    payload = bound_payload(url, json.loads(TRANSCRIPT))
    assert len(payload["messages"][2]["content"]) <= 1_000
