"""Request reports: one per request, delivered when it reaches the network; the log line."""

from __future__ import annotations

import importlib
import json
import logging
from pathlib import Path
from types import ModuleType
from typing import Any

import openai
import pytest
from http_helpers import BUDGET, big_results, small_results
from test_transport import URL, chat_body, mock

from budgetware.core import observe
from budgetware.core.config import BudgetConfig
from budgetware.http.delivery import REPORT_EXTENSION
from budgetware.http.instrument import instrument
from budgetware.http.transport import AsyncBudgetTransport, BudgetTransport
from budgetware.testing import FakeProvider


@pytest.fixture(params=["httpx", "httpx2"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


def _messages(results: list[str]) -> list[dict[str, Any]]:
    return json.loads(chat_body(results))["messages"]  # type: ignore[no-any-return]


def test_a_real_sdk_request_is_reported_once_with_what_was_sent(
    fake_provider: FakeProvider, config: BudgetConfig
) -> None:
    reports: list[observe.RequestReport] = []
    client = openai.OpenAI(base_url=fake_provider.url + "/v1", api_key="k", max_retries=0)
    with observe.subscribe(request=reports.append), instrument(config=config):
        client.chat.completions.create(model="m", messages=_messages(big_results(10)))  # type: ignore[arg-type]
        client.chat.completions.create(model="m", messages=_messages(big_results(10)))  # type: ignore[arg-type]
    first, second = reports
    sent = fake_provider.requests[0].body
    assert first.api == "openai_chat"
    assert first.entry == "http"
    assert first.bytes_after == len(sent) < first.bytes_before
    assert first.batch_budget == BUDGET
    assert first.unit == "chars"
    (batch,) = first.batches
    assert batch.results == 10
    assert batch.cut == 10
    assert batch.size_before == 3_000_000
    assert batch.size_after <= BUDGET
    assert first.results_cut == 10
    assert first.artifacts_written == 10
    assert all(Path(ref).is_file() for ref in batch.written)
    # The same outputs again: bounded the same way, their artifacts reused, not written.
    assert second.results_cut == 10
    assert second.artifacts_written == 0
    assert second.seconds > 0


def test_a_request_within_budget_is_reported_whole(
    fake_provider: FakeProvider, config: BudgetConfig
) -> None:
    reports: list[observe.RequestReport] = []
    client = openai.OpenAI(base_url=fake_provider.url + "/v1", api_key="k", max_retries=0)
    with observe.subscribe(request=reports.append), instrument(config=config):
        client.chat.completions.create(model="m", messages=_messages(small_results(3)))  # type: ignore[arg-type]
    (report,) = reports
    assert not report.bounded
    assert report.bytes_before == report.bytes_after
    assert report.batches == ()  # a body under the budget is not even parsed


def test_the_report_is_delivered_inside_the_transport_and_a_user_trace_still_runs(
    fake_provider: FakeProvider, config: BudgetConfig, lib: ModuleType
) -> None:
    events: list[tuple[str, int]] = []
    reports: list[observe.RequestReport] = []

    def user_trace(name: str, info: dict[str, Any]) -> None:
        events.append((name, len(reports)))

    with (
        observe.subscribe(request=reports.append),
        instrument(config=config),
        lib.Client() as client,
    ):
        request = client.build_request(
            "POST",
            fake_provider.url + "/v1/chat/completions",
            content=chat_body(big_results(3)),
            headers={"content-type": "application/json"},
            extensions={"trace": user_trace},
        )
        client.send(request)
    assert len(reports) == 1
    # Delivered at the first network event, before the user's callback saw it.
    assert events
    assert all(count == 1 for _, count in events)


async def test_async_requests_are_reported_once(
    fake_provider: FakeProvider, config: BudgetConfig, lib: ModuleType
) -> None:
    reports: list[observe.RequestReport] = []
    names: list[str] = []

    async def user_trace(name: str, info: dict[str, Any]) -> None:
        names.append(name)

    with observe.subscribe(request=reports.append), instrument(config=config):
        async with lib.AsyncClient() as client:
            response = await client.post(
                fake_provider.url + "/v1/chat/completions",
                content=chat_body(big_results(3)),
                headers={"content-type": "application/json"},
                extensions={"trace": user_trace},
            )
    assert response.status_code == 200
    assert len(reports) == 1
    assert reports[0].results_cut == 3
    assert names


def test_a_transport_without_network_events_gets_the_report_after_send(
    lib: ModuleType, config: BudgetConfig
) -> None:
    seen: list[Any] = []
    reports: list[observe.RequestReport] = []
    transport = BudgetTransport(mock(lib, seen), config=config)
    with observe.subscribe(request=reports.append), lib.Client(transport=transport) as client:
        client.post(URL, content=chat_body(big_results(2)))
    assert len(reports) == 1
    assert reports[0].results_cut == 2
    assert reports[0].bytes_after == len(seen[0].content)


async def test_async_transport_without_network_events(
    lib: ModuleType, config: BudgetConfig
) -> None:
    seen: list[Any] = []

    async def handler(request: Any) -> Any:
        await request.aread()
        seen.append(request)
        return lib.Response(200, json={"ok": True})

    reports: list[observe.RequestReport] = []
    transport = AsyncBudgetTransport(lib.MockTransport(handler), config=config)
    with observe.subscribe(request=reports.append):
        async with lib.AsyncClient(transport=transport) as client:
            await client.post(URL, content=chat_body(big_results(2)))
    assert len(reports) == 1
    assert reports[0].bytes_after == len(seen[0].content)


def test_a_failed_send_still_delivers_the_report(lib: ModuleType, config: BudgetConfig) -> None:
    def refuse(request: Any) -> Any:
        raise lib.ConnectError("refused")

    reports: list[observe.RequestReport] = []
    transport = BudgetTransport(lib.MockTransport(refuse), config=config)
    with (
        observe.subscribe(request=reports.append),
        lib.Client(transport=transport) as client,
        pytest.raises(lib.ConnectError),
    ):
        client.post(URL, content=chat_body(big_results(2)))
    assert len(reports) == 1


def test_nothing_watching_attaches_nothing(lib: ModuleType, config: BudgetConfig) -> None:
    seen: list[Any] = []
    with lib.Client(transport=BudgetTransport(mock(lib, seen), config=config)) as client:
        client.post(URL, content=chat_body(big_results(2)))
    assert REPORT_EXTENSION not in seen[0].extensions
    assert "trace" not in seen[0].extensions


def test_one_info_line_per_bounded_request_with_sizes_and_counts_only(
    lib: ModuleType, config: BudgetConfig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="budgetware")
    results = big_results(4)
    seen: list[Any] = []
    with lib.Client(transport=BudgetTransport(mock(lib, seen), config=config)) as client:
        client.post(URL, content=chat_body(results))
        client.post(URL, content=chat_body(small_results(2)))
    lines = [r for r in caplog.records if r.name == "budgetware"]
    assert len(lines) == 1
    (line,) = lines
    assert line.levelno == logging.INFO
    message = line.getMessage()
    assert "openai_chat" in message
    assert "4 of 4 tool results cut" in message
    assert f"{len(chat_body(results)):,} -> {len(seen[0].content):,} bytes" in message
    assert "4 artifact(s) written" in message
    summary = line.budgetware  # type: ignore[attr-defined]
    assert summary["tool_results_cut"] == 4
    assert summary["batch_budget"] == BUDGET
    # No content, no paths, no identifiers.
    assert "HEAD-0" not in message
    assert str(config.artifact_dir) not in message
    assert "c0" not in json.dumps(summary)


def test_details_at_debug(
    lib: ModuleType, config: BudgetConfig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="budgetware")
    seen: list[Any] = []
    with lib.Client(transport=BudgetTransport(mock(lib, seen), config=config)) as client:
        client.post(URL, content=chat_body(big_results(2)))
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any("batch 1 of 1: 2 tool result(s), 600,000 ->" in m for m in debug), debug
