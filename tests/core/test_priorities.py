"""Priorities instead of exemptions: tool policies share a batch, the budget always holds."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgetware import BudgetConfig, ConfigError, ToolPolicy
from budgetware.core.allocate import allocate_by_priority
from budgetware.finalizer import ToolResult, allocate, finalize_batch, guard_batch
from budgetware.integrations.mcp import McpToolPolicy
from budgetware.mcp.bound import result_budget_for

# Measuring, fitting and parsing touch no file: one file API is enough (fs_watch.py).
TOUCHES_NO_FILES = True

HIGH, NORMAL, LOW = 0, 1, 2
lengths_st = st.lists(st.integers(0, 3_000), min_size=1, max_size=12)


def test_worked_numbers_of_the_docs() -> None:
    lengths = [6_000, 8_000, 12_000]
    assert allocate(lengths, 10_000) == [3_334, 3_333, 3_333]
    ranks = [HIGH, NORMAL, LOW]
    assert allocate_by_priority(lengths, 10_000, ranks, [100] * 3) == [6_000, 3_900, 100]
    floors = [100, 100, 2_000]
    assert allocate_by_priority(lengths, 10_000, ranks, floors) == [6_000, 2_000, 2_000]
    big = [12_000, 8_000, 5_000]
    assert allocate_by_priority(big, 10_000, ranks, [100] * 3) == [9_800, 100, 100]
    # Floors that do not fit are dropped from the lowest priority up: the bound holds.
    assert allocate_by_priority([5_000] * 3, 200, ranks, [0] * 3, [100] * 3) == [100, 100, 0]


def test_small_floors_that_do_not_fit_are_dropped_from_the_lowest_priority_up() -> None:
    # 1 high (5,000) + 200 low (300 each) at 10,000: the 200 floors of 100 do not fit.
    # Before, every floor was shared evenly and the high result got 50 characters, against
    # the rule that it is cut only when the rest cannot make room.
    lengths = [5_000] + [300] * 200
    shares = allocate_by_priority(lengths, 10_000, [HIGH] + [LOW] * 200, [0] * 201, [100] * 201)
    assert shares == [5_000] + [25] * 200
    config = BudgetConfig(
        batch_budget=10_000, persist=False, tool_policies={"memory": "high", "web": "low"}
    )
    batch = [ToolResult("m", "memory", ("m" * 5_000,))]
    batch += [ToolResult(f"w{i}", "web", ("w" * 300,)) for i in range(200)]
    high, *lows = finalize_batch(batch, config=config)
    assert high.slots[0] == "m" * 5_000
    assert {len(e.slots[0]) for e in lows} == {25}


@pytest.mark.parametrize("priority", ["normal", "low"])
def test_a_min_room_at_or_above_the_budget_never_empties_the_other_results(
    priority: str,
) -> None:
    # web_fetch 300,000 with min_room 250,000 at a budget of 200,000: before, [200000, 0, 0]
    # (the 25-character result that fits whole became ""), and with web_fetch low it took
    # 199,875 while the normal read_file was cut to 100.
    config = BudgetConfig(
        batch_budget=200_000,
        persist=False,
        tool_policies={"web_fetch": {"priority": priority, "min_room": 250_000}},
    )
    batch = [
        ToolResult("a", "web_fetch", ("q" * 300_000,)),
        ToolResult("b", "shell", ("exit code 1: build failed",)),
        ToolResult("c", "read_file", ("x" * 3_000,)),
    ]
    web, shell, read = finalize_batch(batch, config=config)
    assert shell.slots[0] == "exit code 1: build failed"
    assert read.slots[0] == "x" * 3_000
    assert len(web.slots[0]) == 200_000 - 25 - 3_000


def test_a_min_room_counts_up_to_half_the_budget() -> None:
    lengths = [50_000, 50_000]
    config = BudgetConfig(
        batch_budget=10_000, persist=False, tool_policies={"a": {"min_room": 9_000}}
    )
    batch = [ToolResult("1", "a", ("a" * 50_000,)), ToolResult("2", "b", ("b" * 50_000,))]
    a, b = finalize_batch(batch, config=config)
    assert (len(a.slots[0]), len(b.slots[0])) == (5_000, 5_000)
    ranks, floors = [NORMAL, NORMAL], [5_000, 0]
    assert allocate_by_priority(lengths, 10_000, ranks, floors, [100, 100]) == [5_000, 5_000]
    assert allocate_by_priority(lengths, 10_000, ranks, [3_000, 0], [100, 100]) == [5_000, 5_000]
    assert allocate_by_priority(lengths, 4_000, ranks, [3_000, 0], [100, 100]) == [3_000, 1_000]


@given(lengths_st, st.integers(0, 20_000), st.data())
def test_least_floors_are_kept_by_whole_ranks_from_the_highest(
    lengths: list[int], budget: int, data: Any
) -> None:
    n = len(lengths)
    ranks = data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    floors = data.draw(st.lists(st.integers(0, 1_000), min_size=n, max_size=n))
    least = data.draw(st.lists(st.integers(0, 200), min_size=n, max_size=n))
    shares = allocate_by_priority(lengths, budget, ranks, floors, least)
    assert sum(shares) == min(budget, sum(lengths))
    assert all(0 <= a <= length for a, length in zip(shares, lengths))
    if sum(lengths) <= budget:
        return
    need = 0
    for rank in sorted(set(ranks)):
        mine = [i for i in range(n) if ranks[i] == rank]
        need += sum(min(least[i], lengths[i]) for i in mine)
        if need > budget:
            break
        # A rank whose least floors fit beside those of every higher rank keeps them.
        assert all(shares[i] >= min(least[i], lengths[i]) for i in mine)


def test_a_rank_is_max_min_fair_on_totals_with_floors() -> None:
    shares = allocate_by_priority([5_000, 5_000, 5_000], 6_000, [NORMAL] * 3, [0, 0, 2_500])
    assert shares == [1_750, 1_750, 2_500]


@given(lengths_st, st.integers(0, 20_000))
def test_one_rank_and_no_floors_is_the_plain_water_fill(lengths: list[int], budget: int) -> None:
    n = len(lengths)
    assert allocate_by_priority(lengths, budget, [NORMAL] * n, [0] * n) == allocate(
        lengths, budget
    )


@given(lengths_st, st.integers(0, 20_000), st.data())
def test_priority_split_is_bounded_and_respects_the_order(
    lengths: list[int], budget: int, data: Any
) -> None:
    n = len(lengths)
    ranks = data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    floors = data.draw(st.lists(st.integers(0, 1_000), min_size=n, max_size=n))
    shares = allocate_by_priority(lengths, budget, ranks, floors)
    assert sum(shares) == min(budget, sum(lengths))
    assert all(0 <= a <= length for a, length in zip(shares, lengths))
    if sum(min(f, x) for f, x in zip(floors, lengths)) <= budget:
        assert all(a >= min(f, x) for a, f, x in zip(shares, floors, lengths))
        # A higher rank is cut only when every lower rank is down to its floor.
        for i in range(n):
            for j in range(n):
                if ranks[i] < ranks[j] and shares[i] < lengths[i]:
                    assert shares[j] == min(floors[j], lengths[j])


def _batch() -> list[ToolResult]:
    return [
        ToolResult("1", "memory_search", ("m" * 6_000,)),
        ToolResult("2", "shell", ("s" * 8_000,)),
        ToolResult("3", "web_fetch", ("w" * 12_000,)),
    ]


def test_policies_by_name_and_pattern_decide_who_gives_room_first() -> None:
    config = BudgetConfig(
        batch_budget=10_000,
        persist=False,
        tool_policies={"memory_*": "high", "web_fetch": {"priority": "low", "min_room": 2_000}},
    )
    memory, shell, web = finalize_batch(_batch(), config=config)
    assert memory.slots[0] == "m" * 6_000  # high: whole, the others could make room
    assert len(shell.slots[0]) <= 2_000
    assert len(web.slots[0]) <= 2_000
    assert web.slots[0].count("w") * 2 >= 2_000
    assert sum(len(e.slots[0]) for e in (memory, shell, web)) <= 10_000
    again = finalize_batch([memory, shell, web], config=config)
    assert again == [memory, shell, web]
    assert guard_batch([memory, shell, web], config=config) == [memory, shell, web]


def test_a_high_priority_result_is_still_bounded() -> None:
    config = BudgetConfig(batch_budget=1_000, persist=False, tool_policies={"*": "high"})
    results = finalize_batch(_batch(), config=config)
    assert sum(len(e.slots[0]) for e in results) <= 1_000


def test_a_low_priority_result_keeps_a_floor_of_content() -> None:
    config = BudgetConfig(batch_budget=10_000, persist=False, tool_policies={"web_*": "low"})
    *_, web = finalize_batch(_batch(), config=config)
    assert len(web.slots[0]) == 100
    assert web.slots[0].count("w") >= 50


def test_policies_from_the_environment_and_bad_ones() -> None:
    config = BudgetConfig.from_env(
        {"BUDGETWARE_TOOL_POLICIES": '{"tool_search": "high", "grep*": {"min_room": 500}}'}
    )
    assert config.tool_policies == {
        "tool_search": ToolPolicy(priority="high"),
        "grep*": ToolPolicy(min_room=500),
    }
    for bad in ('{"x": "urgent"}', '{"x": {"min_room": -1}}', "{not json"):
        with pytest.raises(ConfigError, match="BUDGETWARE_TOOL_POLICIES"):
            BudgetConfig.from_env({"BUDGETWARE_TOOL_POLICIES": bad})


def test_mcp_per_tool_settings_take_a_priority_and_a_floor() -> None:
    config = BudgetConfig(
        mcp_result_budget=10_000,
        mcp_tools={"memory_*": "high", "fetch": {"min_room": 30_000}, "grep": 500},
        mcp_servers={"docs": {"result_budget": 2_000, "tools": {"search": {"priority": "high"}}}},
    )
    assert config.mcp_tools["memory_*"] == McpToolPolicy(priority="high")
    assert result_budget_for(config, tool="memory_search") == 0  # only the message limit
    assert result_budget_for(config, tool="fetch") == 30_000
    assert result_budget_for(config, tool="grep") == 500
    assert result_budget_for(config, tool="other") == 10_000
    assert result_budget_for(config, "docs", "search") == 0
    assert result_budget_for(config, "docs", "memory_search") == 2_000  # server over tool
    pinned = BudgetConfig(mcp_tools={"x": {"priority": "high", "result_budget": 50_000}})
    assert result_budget_for(pinned, tool="x") == 50_000
    env = BudgetConfig.from_env({"BUDGETWARE_MCP_TOOLS": '{"tool_search": "high"}'})
    assert result_budget_for(env, tool="tool_search") == 0
