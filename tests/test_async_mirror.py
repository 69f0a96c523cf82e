"""The async API mirrors the sync one: every sync entry point has its async twin."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from budgetware import AsyncBudgetTransport, BudgetTransport
from budgetware.integrations import anthropic, litellm, openai

# The transport contract of httpx / httpx2, sync name -> async name.
TRANSPORT_TWINS = {
    "handle_request": "handle_async_request",
    "close": "aclose",
    "__enter__": "__aenter__",
    "__exit__": "__aexit__",
}


@pytest.mark.parametrize(("sync_name", "async_name"), TRANSPORT_TWINS.items())
def test_async_transport_has_the_async_twin_of_each_sync_method(
    sync_name: str, async_name: str
) -> None:
    sync = getattr(BudgetTransport, sync_name)
    twin = getattr(AsyncBudgetTransport, async_name)
    assert not inspect.iscoroutinefunction(sync)
    assert inspect.iscoroutinefunction(twin)
    assert _params(sync) == _params(twin)


def test_both_transports_take_the_same_constructor_arguments() -> None:
    assert _params(BudgetTransport.__init__) == _params(AsyncBudgetTransport.__init__)


@pytest.mark.parametrize(
    ("sync_helper", "async_helper"),
    [
        (openai.budget_http_client, openai.budget_async_http_client),
        (anthropic.budget_http_client, anthropic.budget_async_http_client),
        (litellm.budget_http_handler, litellm.budget_async_http_handler),
    ],
)
def test_every_sync_client_helper_has_an_async_twin_taking_the_same_config(
    sync_helper: Callable[..., Any], async_helper: Callable[..., Any]
) -> None:
    sync_params = inspect.signature(sync_helper).parameters
    async_params = inspect.signature(async_helper).parameters
    assert "config" in sync_params
    assert set(sync_params) <= set(async_params)


def _params(fn: Callable[..., Any]) -> list[str]:
    return [p for p in inspect.signature(fn).parameters if p != "self"]
