"""Water-fill: small results survive whole, large ones share the rest equally."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgetware.finalizer import allocate

# Measuring, fitting and parsing touch no file: one file API is enough (fs_watch.py).
TOUCHES_NO_FILES = True


@pytest.mark.parametrize(
    ("lengths", "budget", "expected"),
    [
        ([100, 5000, 20000], 10000, [100, 4950, 4950]),
        ([10, 10, 10], 7, [3, 2, 2]),
        ([7048, 7048], 10000, [5000, 5000]),
        ([1000, 2], 100, [98, 2]),
        ([5, 5], 100, [5, 5]),
        ([], 10, []),
    ],
)
def test_worked_examples(lengths: list[int], budget: int, expected: list[int]) -> None:
    assert allocate(lengths, budget) == expected


def round_by_round(lengths: list[int], budget: int) -> list[int]:
    """The specification's definition, literally, as an oracle."""
    alloc = list(lengths)
    if sum(lengths) <= budget:
        return alloc
    remaining, active = budget, list(range(len(lengths)))
    while True:
        share = remaining // len(active)
        fits = [i for i in active if lengths[i] <= share]
        if not fits:
            break
        for i in fits:
            remaining -= lengths[i]
        active = [i for i in active if i not in fits]
    share = remaining // len(active)
    leftover = remaining - share * len(active)
    for rank, i in enumerate(active):
        alloc[i] = share + (1 if rank < leftover else 0)
    return alloc


lengths_st = st.lists(st.integers(min_value=0, max_value=10_000), max_size=30)


@given(lengths_st, st.integers(min_value=0, max_value=100_000))
def test_allocation_equals_the_round_by_round_definition(lengths: list[int], budget: int) -> None:
    assert allocate(lengths, budget) == round_by_round(lengths, budget)


@given(lengths_st, st.integers(min_value=0, max_value=100_000))
def test_allocation_sums_to_min_of_budget_and_total(lengths: list[int], budget: int) -> None:
    result = allocate(lengths, budget)
    assert sum(result) == min(budget, sum(lengths))
    assert all(0 <= a <= n for a, n in zip(result, lengths))


@given(lengths_st, st.integers(min_value=0, max_value=100_000))
def test_cut_slots_get_equal_shares_within_one(lengths: list[int], budget: int) -> None:
    result = allocate(lengths, budget)
    cut = [a for a, n in zip(result, lengths) if a < n]
    if cut:
        assert max(cut) - min(cut) <= 1
        # A slot kept whole is never longer than a cut one's share (plus the leftover unit
        # that may happen to complete a slot exactly one longer than the share).
        assert all(n <= max(cut) + 1 for a, n in zip(result, lengths) if a == n)


def test_negative_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="budget"):
        allocate([1], -1)
    with pytest.raises(ValueError, match="lengths"):
        allocate([-1], 1)
