"""The mcp client boundary is an entry point where it is made: the process's observers
start there, and a budget() block around its calls is not reported as unread."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest

from budgetware import budget
from budgetware.core import config, observe
from budgetware.integrations.mcp import BoundedTransport, McpBoundTransport, bound_streams


class _Streams:
    async def __aenter__(self) -> tuple[object, object]:
        return object(), object()

    async def __aexit__(self, *exc_info: object) -> None:
        return None


async def _enter_bounded_transport() -> None:
    async with BoundedTransport(_Streams()) as streams:
        assert len(streams) == 2


@pytest.mark.parametrize(
    "make",
    [
        lambda: bound_streams(object(), object()),
        lambda: McpBoundTransport(),
        _enter_bounded_transport,
    ],
    ids=["bound_streams", "McpBoundTransport", "BoundedTransport"],
)
async def test_a_budget_block_around_an_mcp_client_boundary_is_not_unread(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[], object]
) -> None:
    # As in a fresh process that set up nothing else.
    monkeypatch.setattr(observe, "entry_points_set_up", False)
    monkeypatch.setattr(config, "_warned_unread", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with budget(mcp_result_budget=5_000):
            made = make()
            if hasattr(made, "__await__"):
                await made
    assert observe.entry_points_set_up
