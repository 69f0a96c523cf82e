"""The history budget through every real SDK on loopback: a conversation growing turn by
turn reaches the fake provider within the budget, sending again what it sent before except
at a step, whatever the wire format and unit."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from exact_tokens import needs_vocabulary
from http_helpers import one_breakpoint, tool_result_texts
from testing import drivers
from wire import _bodies

from budgetware.core import observe
from budgetware.core.config import BudgetConfig
from budgetware.core.measure import Unit, measure
from budgetware.core.notice import is_masked
from budgetware.core.observe import RequestReport
from budgetware.http.instrument import instrument
from budgetware.http.transport import AsyncBudgetTransport
from budgetware.testing import FakeProvider

pytestmark = [
    pytest.mark.sdk,
    # litellm's gemini provider imports a TypedDict pydantic warns about (not our code).
    pytest.mark.filterwarnings("ignore:Items? .*ReadOnly.*qualifier:UserWarning"),
]

TURNS = 9
# In chars; the token units get a quarter (two kept batches always fit a step's target).
BATCH, HISTORY = 6_000, 20_000


def turns(seed: int = 3) -> list[list[str]]:
    rng = random.Random(seed)
    words = ("ok", "FAILED", "café", "日本", "error:", "tests/x.py")
    return [
        [
            f"$ run {t}.{i}\n" + " ".join(rng.choice(words) for _ in range(rng.randint(60, 1_800)))
            for i in range(rng.randint(1, 3))
        ]
        for t in range(TURNS)
    ]


# --- one request of a conversation, per SDK ---------------------------------------------------


def _openai(url: str) -> Any:
    import openai

    return openai.OpenAI(base_url=f"{url}/v1", api_key=drivers.DUMMY_KEY, max_retries=0)


def send_openai_chat(url: str, batches: list[list[str]], headers: dict[str, str]) -> None:
    with _openai(url) as client:
        client.chat.completions.create(
            model=drivers.OPENAI_MODEL,
            messages=_bodies.openai_chat(batches)[0]["messages"],
            extra_headers=headers,
        )


def send_openai_responses(url: str, batches: list[list[str]], headers: dict[str, str]) -> None:
    with _openai(url) as client:
        client.responses.create(
            model=drivers.OPENAI_MODEL,
            input=_bodies.openai_responses(batches)[0]["input"],
            extra_headers=headers,
        )


def send_anthropic(url: str, batches: list[list[str]], headers: dict[str, str]) -> None:
    import anthropic

    with anthropic.Anthropic(base_url=url, api_key=drivers.DUMMY_KEY, max_retries=0) as client:
        client.messages.create(
            model=drivers.ANTHROPIC_MODEL,
            max_tokens=64,
            messages=one_breakpoint(_bodies.anthropic(batches)[0]["messages"]),
            extra_headers=headers,
        )


def send_google_genai(url: str, batches: list[list[str]], headers: dict[str, str]) -> None:
    from google import genai
    from google.genai import types

    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "Look."}]}]
    for t, results in enumerate(batches):
        contents.append(
            {
                "role": "model",
                "parts": [
                    {"function_call": {"id": f"c{t}_{i}", "name": f"tool_{i}", "args": {}}}
                    for i in range(len(results))
                ],
            }
        )
        contents.append(
            {
                "role": "user",
                "parts": [
                    {
                        "function_response": {
                            "id": f"c{t}_{i}",
                            "name": f"tool_{i}",
                            "response": {"output": text},
                        }
                    }
                    for i, text in enumerate(results)
                ],
            }
        )
    options = types.HttpOptions(base_url=url, headers=headers)
    client = genai.Client(api_key=drivers.DUMMY_KEY, http_options=options)
    try:
        client.models.generate_content(model=drivers.GEMINI_MODEL, contents=contents)
    finally:
        client.close()


def send_ollama(url: str, batches: list[list[str]], headers: dict[str, str]) -> None:
    import ollama

    with ollama.Client(host=url, headers=headers) as client:
        client.chat(model=drivers.OLLAMA_MODEL, messages=_bodies.ollama(batches)[0]["messages"])


def send_cohere(url: str, batches: list[list[str]], headers: dict[str, str]) -> None:
    import cohere

    client = cohere.ClientV2(api_key=drivers.DUMMY_KEY, base_url=url)
    try:
        client.chat(
            model=drivers.COHERE_MODEL,
            messages=_bodies.cohere(batches)[0]["messages"],
            request_options={"additional_headers": headers, "max_retries": 0},
        )
    finally:
        client._client_wrapper.httpx_client.httpx_client.close()


def _litellm(provider: drivers.LitellmProvider) -> Callable[..., None]:
    def send(url: str, batches: list[list[str]], headers: dict[str, str]) -> None:
        import httpx
        import litellm
        from litellm.llms.custom_httpx.http_handler import HTTPHandler

        api_base = drivers.litellm_api_base(url, provider)
        # A client of our own, closed after the call (litellm caches the ones it makes).
        with httpx.Client() as http:
            if provider == "openai":
                import openai

                client: Any = openai.OpenAI(
                    api_key=drivers.DUMMY_KEY, base_url=api_base, max_retries=0, http_client=http
                )
            else:
                client = HTTPHandler(client=http)
            litellm.completion(
                model=drivers.LITELLM_MODELS[provider],
                api_base=api_base,
                api_key=drivers.DUMMY_KEY,
                messages=_bodies.openai_chat(batches)[0]["messages"],
                max_tokens=64,
                max_retries=0,
                num_retries=0,
                extra_headers=headers,
                client=client,
            )

    return send


# (name, module of its SDK, send, the fake provider's API, the unit it runs in)
SDKS: list[tuple[str, str, Callable[..., None], str, Unit]] = [
    ("openai_chat", "openai", send_openai_chat, "openai_chat", "chars"),
    ("openai_responses", "openai", send_openai_responses, "openai_responses", "utf8_bytes"),
    ("anthropic", "anthropic", send_anthropic, "anthropic", "tokens"),
    ("google_genai", "google.genai", send_google_genai, "gemini", "tokens:o200k_base"),
    ("ollama", "ollama", send_ollama, "ollama", "chars"),
    ("cohere", "cohere", send_cohere, "cohere", "utf8_bytes"),
    ("litellm_openai", "litellm", _litellm("openai"), "openai_chat", "tokens"),
    ("litellm_anthropic", "litellm", _litellm("anthropic"), "anthropic", "chars"),
    ("litellm_gemini", "litellm", _litellm("gemini"), "gemini", "utf8_bytes"),
]


def _params() -> list[Any]:
    import importlib.util

    out = []
    for name, module, send, api, unit in SDKS:
        try:
            missing = importlib.util.find_spec(module) is None
        except ModuleNotFoundError:
            missing = True
        marks = [pytest.mark.skipif(missing, reason=f"{module} is not installed")]
        if unit.startswith("tokens:"):
            marks.append(needs_vocabulary)
        out.append(pytest.param(send, api, unit, id=name, marks=marks))
    return out


def budgets(unit: Unit) -> tuple[int, int]:
    return (BATCH, HISTORY) if unit in ("chars", "utf8_bytes") else (BATCH // 4, HISTORY // 4)


@pytest.fixture
def reports() -> Iterator[list[RequestReport]]:
    seen: list[RequestReport] = []
    with observe.subscribe(request=seen.append):
        yield seen


def converse(
    send: Callable[..., None],
    api: str,
    unit: Unit,
    provider: FakeProvider,
    reports: list[RequestReport],
    *,
    headers: dict[str, str] | None = None,
) -> int:
    """Send the conversation turn by turn; check each request; return the steps taken."""
    batches = turns()
    history = budgets(unit)[1]
    previous: list[str] = []
    steps = 0
    for n in range(1, TURNS + 1):
        provider.clear()
        reports.clear()
        send(provider.url, batches[:n], dict(headers or {}))
        [request] = [r for r in provider.requests if r.api == api]
        texts = tool_result_texts(api, request.json())
        assert len(texts) == sum(map(len, batches[:n]))
        assert sum(measure(text, unit) for text in texts) <= history
        masked = [k for k, text in enumerate(texts) if is_masked((text,))]
        assert all(k < len(texts) - len(batches[n - 1]) - len(batches[n - 2]) for k in masked)
        [report] = reports
        assert report.history is not None
        assert report.history.masked == len(masked)
        # What the last request sent is sent again unchanged, except at a step.
        assert (texts[: len(previous)] == previous) != report.history.new_step
        steps += report.history.new_step
        previous = texts
    return steps


@pytest.mark.parametrize(("send", "api", "unit"), _params())
def test_a_growing_conversation_stays_within_the_history_budget(
    send: Callable[..., None],
    api: str,
    unit: Unit,
    fake_provider: FakeProvider,
    artifact_dir: Path,
    reports: list[RequestReport],
) -> None:
    batch, history = budgets(unit)
    config = BudgetConfig(
        unit=unit, batch_budget=batch, history_budget=history, artifact_dir=artifact_dir
    )
    with instrument(config=config):
        steps = converse(send, api, unit, fake_provider, reports)
    assert steps >= 2


def test_the_history_budget_from_request_headers(
    fake_provider: FakeProvider, artifact_dir: Path, reports: list[RequestReport]
) -> None:
    pytest.importorskip("openai")
    config = BudgetConfig(batch_budget=BATCH, artifact_dir=artifact_dir)
    headers = {
        "x-budgetware-history-budget": str(HISTORY),
        "x-budgetware-history-keep-batches": "2",
        "x-budgetware-history-step": "0.25",
    }
    with instrument(config=config):
        assert converse(
            send_openai_chat, "openai_chat", "chars", fake_provider, reports, headers=headers
        )
        # The headers never reach the provider.
        assert not any(
            name.startswith("x-budgetware") for name in fake_provider.requests[-1].headers
        )
        # x-budgetware-disable turns the history budget off too.
        fake_provider.clear()
        send_openai_chat(fake_provider.url, turns(), {**headers, "x-budgetware-disable": "1"})
        texts = tool_result_texts("openai_chat", fake_provider.requests[-1].json())
        assert not any(is_masked((text,)) for text in texts)


async def test_an_async_client_through_the_transport(
    fake_provider: FakeProvider, artifact_dir: Path, reports: list[RequestReport]
) -> None:
    openai = pytest.importorskip("openai")
    import httpx2

    config = BudgetConfig(batch_budget=BATCH, history_budget=HISTORY, artifact_dir=artifact_dir)
    transport = AsyncBudgetTransport(httpx2.AsyncHTTPTransport(), config=config)
    batches = turns()
    async with openai.AsyncOpenAI(
        base_url=f"{fake_provider.url}/v1",
        api_key=drivers.DUMMY_KEY,
        max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(transport=transport),
    ) as client:
        await client.chat.completions.create(
            model=drivers.OPENAI_MODEL, messages=_bodies.openai_chat(batches)[0]["messages"]
        )
    texts = tool_result_texts("openai_chat", fake_provider.requests[-1].json())
    assert sum(map(len, texts)) <= HISTORY
    assert any(is_masked((text,)) for text in texts)


def test_anthropic_context_management_keeps_the_history_for_the_provider(
    fake_provider: FakeProvider, artifact_dir: Path, reports: list[RequestReport]
) -> None:
    anthropic = pytest.importorskip("anthropic")
    config = BudgetConfig(batch_budget=BATCH, history_budget=HISTORY, artifact_dir=artifact_dir)
    batches = turns()
    edits = {"edits": [{"type": "clear_tool_uses_20250919"}]}
    with (
        instrument(config=config),
        anthropic.Anthropic(
            base_url=fake_provider.url, api_key=drivers.DUMMY_KEY, max_retries=0
        ) as client,
    ):
        client.beta.messages.create(
            model=drivers.ANTHROPIC_MODEL,
            max_tokens=64,
            messages=one_breakpoint(_bodies.anthropic(batches)[0]["messages"]),
            context_management=edits,
            betas=["context-management-2025-06-27"],
        )
    body = fake_provider.requests[-1].json()
    assert body["context_management"] == edits
    texts = tool_result_texts("anthropic", body)
    assert not any(is_masked((text,)) for text in texts)
    assert sum(map(len, texts)) > HISTORY  # the provider clears old results itself
    [report] = reports
    assert report.history is not None
    assert report.history.skipped == "context_management"
