"""The history budget's replay (core/history.py): the rule of docs/history.md, step by step."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from budgetware.core.history import Replay, Result, replay

# The replay is arithmetic on sizes (no store, no file): one file API is enough (fs_watch.py).
TOUCHES_NO_FILES = True

STUB = 10


def stub(_b: int, _i: int) -> int:
    return STUB


def run(
    sizes: Sequence[Sequence[int]],
    budget: int,
    *,
    keep: int = 2,
    step: float = 0.25,
    high: frozenset[tuple[int, int]] = frozenset(),
    masked: frozenset[tuple[int, int]] = frozenset(),
) -> Replay:
    batches = [
        [Result(size, (b, i) in high, (b, i) in masked) for i, size in enumerate(batch)]
        for b, batch in enumerate(sizes)
    ]
    return replay(batches, budget, keep, step, stub)


def test_the_worked_example_of_the_docs() -> None:
    # docs/history.md: a budget of 1,000, batches of 300, 200, 400, 250, 300, 350; keep 2,
    # step 0.25.
    sizes = [[300], [200], [400], [250], [300]]
    # Three batches: 900, within the budget.
    assert run(sizes[:3], 1000) == Replay(frozenset(), 900, 900, False, 0)
    # The fourth: 1,150 > 1,000. Candidates: batches 1 and 2 (3 and 4 are kept); masking
    # batch 1 gives 860, above 750; batch 2 too gives 670.
    fourth = run(sizes[:4], 1000)
    assert fourth == Replay(frozenset({(0, 0), (1, 0)}), 1150, 670, True, 1)
    # The fifth: 970, within the budget: the same set, no new step.
    fifth = run(sizes, 1000)
    assert fifth == Replay(frozenset({(0, 0), (1, 0)}), 1450, 970, False, 1)
    # The sixth, 350: 1,320; candidates batches 3 and 4: 930, then 690. A second step.
    sixth = run([*sizes, [350]], 1000)
    assert sixth == Replay(frozenset({(0, 0), (1, 0), (2, 0), (3, 0)}), 1800, 690, True, 2)


def test_a_step_masks_down_to_one_minus_step_of_the_budget() -> None:
    result = run([[100] * 10, [100], [100]], 1100, keep=2, step=0.5)
    # 1,200 > 1,100: mask the oldest until at most 550 (each mask saves 90).
    assert result.after <= 550
    assert result.masked == {(0, i) for i in range(8)}
    assert result.after == 1200 - 8 * 90


def test_the_newest_batches_are_never_masked() -> None:
    sizes = [[500], [500], [500], [500]]
    for keep in (1, 2, 3):
        result = run(sizes, 600, keep=keep)
        assert {b for b, _ in result.masked} == set(range(4 - keep))
    # Kept batches over the budget stay as they are: reported, not cut further.
    over = run([[100], [900], [900]], 1000, keep=2)
    assert over.masked == {(0, 0)}
    assert over.after == STUB + 1800 > 1000


def test_high_priority_results_are_masked_after_every_other_candidate() -> None:
    sizes = [[200, 200], [200, 200], [200], [200]]
    high = frozenset({(0, 0)})
    # 1,200 > 1,000: candidates are batches 0 and 1; the normal ones first, oldest first,
    # down to 750: the high one, the oldest, stays.
    result = run(sizes, 1000, high=high)
    assert result.masked == {(0, 1), (1, 0), (1, 1)}
    assert result.after == 1200 - 3 * (200 - STUB)
    # A tighter budget reaches it once the other candidates are masked.
    result = run(sizes, 700, high=high)
    assert result.masked == {(0, 1), (1, 0), (1, 1), (0, 0)}


def test_a_result_no_larger_than_its_stub_is_passed_over() -> None:
    result = run([[5, 300], [300], [300]], 800, keep=1)
    assert (0, 0) not in result.masked
    assert (0, 1) in result.masked


def test_results_already_masked_are_never_masked_again() -> None:
    result = run([[300], [300], [300], [300]], 900, masked=frozenset({(0, 0)}))
    assert (0, 0) not in result.masked
    assert result.masked == {(1, 0)}


def test_within_the_budget_nothing_is_masked_and_no_stub_is_asked() -> None:
    asked: list[tuple[int, int]] = []

    def stub_size(b: int, i: int) -> int:
        asked.append((b, i))
        return STUB

    batches = [[Result(100, False)] for _ in range(5)]
    assert replay(batches, 500, 2, 0.25, stub_size).masked == frozenset()
    assert asked == []


batches_strategy = st.lists(
    st.lists(st.tuples(st.integers(0, 400), st.booleans()), min_size=1, max_size=4),
    min_size=1,
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(
    batches=batches_strategy,
    budget=st.integers(50, 3000),
    keep=st.integers(1, 4),
    step=st.sampled_from([0.1, 0.25, 0.5, 0.9]),
)
def test_each_request_masks_what_the_one_before_did_plus_a_new_step(
    batches: list[list[tuple[int, bool]]], budget: int, keep: int, step: float
) -> None:
    results = [[Result(size, high) for size, high in batch] for batch in batches]
    previous = frozenset[tuple[int, int]]()
    for n in range(1, len(results) + 1):
        now = replay(results[:n], budget, keep, step, stub)
        # The masked set only grows, and grows exactly at a new step.
        assert previous <= now.masked
        assert now.new_step == (now.masked != previous)
        # Never a result of the newest ``keep`` batches.
        assert all(b < n - keep for b, _ in now.masked)
        # The bound holds unless nothing is left to mask.
        unmasked = [
            (b, i)
            for b in range(max(n - keep, 0))
            for i, result in enumerate(results[b])
            if (b, i) not in now.masked and result.size > STUB
        ]
        assert now.after <= budget or not unmasked
        total = sum(
            STUB if (b, i) in now.masked else result.size
            for b, batch in enumerate(results[:n])
            for i, result in enumerate(batch)
        )
        assert now.after == total
        previous = now.masked
