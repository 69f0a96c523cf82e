"""Per-request budgets: budget() blocks and x-budgetware-* headers, across threads and tasks."""

from __future__ import annotations

import asyncio
import contextvars
import json
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest
from http_helpers import big_results, tool_result_texts
from test_transport import URL, chat_body, mock
from testing.drivers import asend_openai_chat, send_openai_chat

from budgetware.core.config import BudgetConfig, budget
from budgetware.core.errors import BudgetwareWarning
from budgetware.http.instrument import instrument
from budgetware.http.transport import BudgetTransport
from budgetware.testing import FakeProvider

BUDGETS = [6_000, 12_000, 24_000, 48_000]
RESULTS = big_results(4, 40_000)


def _totals_by_tag(provider: FakeProvider) -> dict[str, int]:
    totals: dict[str, int] = {}
    for request in provider.requests:
        assert not [h for h in request.headers if h.startswith("x-budgetware")]
        texts = tool_result_texts("openai_chat", request.json())
        totals[request.headers["x-test-tag"]] = sum(len(t) for t in texts)
    return totals


def _assert_each_got_its_own_budget(totals: dict[str, int]) -> None:
    assert set(totals) == {str(b) for b in BUDGETS}
    for tag, total in totals.items():
        # A water-filled batch of results far over budget uses (nearly) all of it.
        assert int(tag) * 0.9 <= total <= int(tag)


def _send_in_budget(url: str, limit: int) -> str:
    with budget(batch_budget=limit):
        return send_openai_chat(url, RESULTS, extra_headers={"x-test-tag": str(limit)})


def _send_with_header(url: str, limit: int) -> str:
    headers = {"x-test-tag": str(limit), "x-budgetware-batch-budget": str(limit)}
    return send_openai_chat(url, RESULTS, extra_headers=headers)


@pytest.mark.sdk
@pytest.mark.parametrize("sender", [_send_in_budget, _send_with_header])
def test_concurrent_threads_each_get_their_own_budget(
    sender: Any, fake_provider: FakeProvider, config: BudgetConfig
) -> None:
    with instrument(config=config), ThreadPoolExecutor(len(BUDGETS)) as pool:
        list(pool.map(lambda b: sender(fake_provider.url, b), BUDGETS))
    _assert_each_got_its_own_budget(_totals_by_tag(fake_provider))


@pytest.mark.sdk
@pytest.mark.parametrize("via", ["budget", "header"])
async def test_concurrent_asyncio_tasks_each_get_their_own_budget(
    via: str, fake_provider: FakeProvider, config: BudgetConfig
) -> None:
    async def one(limit: int) -> str:
        headers = {"x-test-tag": str(limit)}
        if via == "header":
            headers["x-budgetware-batch-budget"] = str(limit)
            return await asend_openai_chat(fake_provider.url, RESULTS, extra_headers=headers)
        with budget(batch_budget=limit):
            return await asend_openai_chat(fake_provider.url, RESULTS, extra_headers=headers)

    with instrument(config=config):
        await asyncio.gather(*(one(b) for b in BUDGETS))
    _assert_each_got_its_own_budget(_totals_by_tag(fake_provider))


def test_budget_block_does_not_leak_into_a_thread_started_outside_it(tmp_path: Path) -> None:
    seen: list[Any] = []
    body = chat_body(big_results(3, 50_000))
    transport = BudgetTransport(mock(httpx2, seen), config=BudgetConfig(batch_budget=0))

    def post() -> None:
        with httpx2.Client(transport=transport) as client:
            client.post(URL, content=body)

    with ThreadPoolExecutor(1) as pool, budget(batch_budget=10_000, artifact_dir=tmp_path):
        pool.submit(post).result()
        # Threads that should follow the block copy its context explicitly.
        pool.submit(contextvars.copy_context().run, post).result()
    assert seen[0].content == body
    texts = tool_result_texts("openai_chat", json.loads(seen[1].content))
    assert sum(len(t) for t in texts) <= 10_000


def _sent_total(seen: list[Any]) -> int:
    return sum(len(t) for t in tool_result_texts("openai_chat", json.loads(seen[-1].content)))


def test_header_wins_over_budget_block_which_wins_over_config(tmp_path: Path) -> None:
    seen: list[Any] = []
    transport = BudgetTransport(
        mock(httpx2, seen), config=BudgetConfig(batch_budget=40_000, artifact_dir=tmp_path)
    )
    body = chat_body(big_results(3, 50_000))
    with httpx2.Client(transport=transport) as client:
        client.post(URL, content=body)
        assert 36_000 <= _sent_total(seen) <= 40_000
        with budget(batch_budget=20_000):
            client.post(URL, content=body)
            assert 18_000 <= _sent_total(seen) <= 20_000
            client.post(URL, content=body, headers={"x-budgetware-batch-budget": "8000"})
            assert 7_000 <= _sent_total(seen) <= 8_000


def test_disable_header_sends_the_body_untouched_without_the_header(tmp_path: Path) -> None:
    seen: list[Any] = []
    body = chat_body(big_results(3, 50_000))
    config = BudgetConfig(batch_budget=10_000, artifact_dir=tmp_path)
    with httpx2.Client(transport=BudgetTransport(mock(httpx2, seen), config=config)) as client:
        client.post(URL, content=body, headers={"X-Budgetware-Disable": "1"})
    assert seen[0].content == body
    assert "x-budgetware-disable" not in seen[0].headers


def test_unit_header_switches_the_unit(tmp_path: Path) -> None:
    seen: list[Any] = []
    body = chat_body(["é" * 30_000, "é" * 30_000])
    config = BudgetConfig(batch_budget=20_000, artifact_dir=tmp_path)
    with httpx2.Client(transport=BudgetTransport(mock(httpx2, seen), config=config)) as client:
        client.post(URL, content=body, headers={"x-budgetware-unit": "utf8_bytes"})
    texts = tool_result_texts("openai_chat", json.loads(seen[0].content))
    assert sum(len(t.encode()) for t in texts) <= 20_000
    assert "x-budgetware-unit" not in seen[0].headers


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("x-budgetware-batch-budget", "lots"),
        ("x-budgetware-disable", "maybe"),
        ("x-budgetware-unit", "words"),
        ("x-budgetware-colour", "blue"),
    ],
)
def test_invalid_header_warns_naming_it_and_other_layers_still_apply(
    header: str, value: str, tmp_path: Path
) -> None:
    seen: list[Any] = []
    config = BudgetConfig(batch_budget=10_000, artifact_dir=tmp_path)
    with (
        httpx2.Client(transport=BudgetTransport(mock(httpx2, seen), config=config)) as client,
        pytest.warns(BudgetwareWarning, match=header),
    ):
        response = client.post(
            URL, content=chat_body(big_results(3, 50_000)), headers={header: value}
        )
    assert response.status_code == 200
    assert header not in seen[0].headers
    assert _sent_total(seen) <= 10_000


@pytest.mark.parametrize("value", ["inf", " Infinity ", "0", "nan"])
def test_batch_budget_header_takes_what_the_environment_takes(value: str, tmp_path: Path) -> None:
    # BUDGETWARE_BATCH_BUDGET=inf and budget(batch_budget=float("inf")) mean no limit: the
    # header follows the same rules (the setting's own validation), with no warning.
    seen: list[Any] = []
    body = chat_body(big_results(3, 50_000))
    config = BudgetConfig(batch_budget=10_000, artifact_dir=tmp_path)
    with (
        httpx2.Client(transport=BudgetTransport(mock(httpx2, seen), config=config)) as client,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("error", BudgetwareWarning)
        client.post(URL, content=body, headers={"x-budgetware-batch-budget": value})
    assert seen[0].content == body
    assert "x-budgetware-batch-budget" not in seen[0].headers


def test_invalid_header_warning_lists_every_unit() -> None:
    from budgetware.core.config import UNIT_NAMES
    from budgetware.http.headers import header_overrides

    messages: list[str] = []
    assert header_overrides({"x-budgetware-unit": "words"}, warn=messages.append) == {}
    assert header_overrides({"x-budgetware-batch-budget": "True"}, warn=messages.append) == {}
    assert {"tokens:o200k_base", "tokens:cl100k_base"} <= set(UNIT_NAMES)
    assert len(messages) == 2
    for message in messages:
        assert f"x-budgetware-unit: {'|'.join(UNIT_NAMES)}," in message
        assert "x-budgetware-history-budget: <integer, or auto" in message


# Sent with httpx: the warning is about the block, whatever client sends in it.
UNUSED_BLOCK = """
import httpx
import budgetware
from budgetware.testing import FakeProvider

with FakeProvider() as fake, httpx.Client() as client:
    if INSTRUMENT:
        budgetware.instrument()
    for _ in range(2):
        with budgetware.budget(batch_budget=10):
            client.post(
                fake.url + "/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                headers={"authorization": "Bearer k"},
            ).raise_for_status()
"""


@pytest.mark.sdk
@pytest.mark.parametrize("instrumented", [False, True])
def test_a_budget_block_nothing_reads_is_warned_about_once(
    instrumented: bool, tmp_path: Path
) -> None:
    import subprocess
    import sys

    script = f"INSTRUMENT = {instrumented}\n" + UNUSED_BLOCK
    env = {"BUDGETWARE_ARTIFACT_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    if instrumented:
        assert "BudgetwareWarning" not in done.stderr
    else:
        assert done.stderr.count("BudgetwareWarning") == 1, done.stderr
        assert "budget() block" in done.stderr
        assert "instrument()" in done.stderr
