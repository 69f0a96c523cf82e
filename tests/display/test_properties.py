"""Properties of the byte-budgeted cuts: never over, idempotent, pairs never split."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from budgetware.core.jsonio import dumps_bytes
from budgetware.core.measure import json_string_bytes
from budgetware.display.projection import (
    ACP_MARKER,
    json_prefix_length,
    json_suffix_length,
    payload_bytes,
    project_acp_update,
    project_string,
)

from .reference import reference_json_bytes

# Weighted towards the characters whose cost differs: escapes, controls, CJK, astral,
# lone surrogates, and explicit surrogate pairs held as two code points.
PIECES = st.sampled_from(
    ["a", "b", '"', "\\", "\n", "\0", "\x1f", "\x7f", "é", "汉", "😀", "\ud800", "\udc00",
     "\ud83d\ude00", "\u2028"]
)  # fmt: skip
TEXT = st.lists(PIECES, max_size=300).map("".join)
BUDGETS = st.integers(min_value=0, max_value=400)


def split_pair_at(s: str, k: int) -> bool:
    return 0 < k < len(s) and "\ud800" <= s[k - 1] <= "\udbff" and "\udc00" <= s[k] <= "\udfff"


@given(TEXT, BUDGETS)
def test_prefix_is_the_longest_within_the_size_without_splitting_a_pair(s: str, size: int) -> None:
    k = json_prefix_length(s, size)
    assert reference_json_bytes(s[:k]) - 2 <= size
    assert not split_pair_at(s, k)
    if k < len(s):
        # One more character (two, when that would end inside a pair) no longer fits.
        step = 2 if split_pair_at(s, k + 1) else 1
        assert reference_json_bytes(s[: k + step]) - 2 > size


@given(TEXT, BUDGETS)
def test_suffix_is_the_longest_within_the_size_without_splitting_a_pair(s: str, size: int) -> None:
    k = json_suffix_length(s, size)
    start = len(s) - k
    assert reference_json_bytes(s[start:]) - 2 <= size
    assert not split_pair_at(s, start)
    if start > 0:
        step = 2 if split_pair_at(s, start - 1) else 1
        assert reference_json_bytes(s[start - step :]) - 2 > size


@given(TEXT, st.integers(min_value=0, max_value=400))
def test_projected_string_never_exceeds_the_budget(s: str, budget: int) -> None:
    out = project_string(s, budget, ACP_MARKER)
    assert reference_json_bytes(out) <= max(budget, 2)


@given(TEXT, st.integers(min_value=2, max_value=400))
def test_projecting_a_projected_string_returns_it_unchanged(s: str, budget: int) -> None:
    once = project_string(s, budget, ACP_MARKER)
    assert project_string(once, budget, ACP_MARKER) is once


@given(TEXT, st.integers(min_value=60, max_value=400))
def test_projection_introduces_no_split_pair(s: str, budget: int) -> None:
    out = project_string(s, budget, ACP_MARKER)
    if out is s:
        return
    head, _, tail = out.partition(ACP_MARKER)
    assert s.startswith(head)
    assert s.endswith(tail)
    assert not split_pair_at(s, len(head))
    assert not split_pair_at(s, len(s) - len(tail))


@given(TEXT)
def test_payload_bytes_is_the_ruler_without_quotes(s: str) -> None:
    assert payload_bytes(s) == json_string_bytes(s) - 2 == reference_json_bytes(s) - 2


@settings(max_examples=60)
@given(st.lists(TEXT, min_size=1, max_size=8), st.integers(min_value=100, max_value=1_500))
def test_multi_block_content_never_exceeds_the_budget_and_is_idempotent(
    texts: list[str], budget: int
) -> None:
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call_update",
        "content": [{"type": "content", "content": {"type": "text", "text": t}} for t in texts],
    }
    out = project_acp_update(update, budget)
    assert len(dumps_bytes(out["content"])) <= budget
    assert project_acp_update(out, budget) is out
