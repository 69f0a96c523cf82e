"""regex_problem: the shapes that make a backtracking engine cost without bound, found by
reading the pattern, never by running it."""

from __future__ import annotations

import re

import pytest

from budgetware.core.regexcost import MAX_PATTERN_LENGTH, regex_problem

# Measuring, fitting and parsing touch no file: one file API is enough (fs_watch.py).
TOUCHES_NO_FILES = True


@pytest.mark.parametrize(
    "pattern",
    [
        "FAILED",
        r"^E\s+\S",
        r"Traceback \(most recent call last\)",
        r"(?:error|fatal)(?:\[\w+\])?:",
        r"(ab)+c",
        r"(a{2})+",  # a fixed count inside a repeat gives the engine no choice
        r"(?:x\d{3}){50}",
        r"a{5000}",
        r"(?>a+)+",  # atomic: nothing to backtrack into
        r"(?:a++)+",  # possessive inner repeat
        r"(?=\w+)\S",
    ],
)
def test_patterns_of_bounded_cost_pass(pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error:
        pytest.skip("this Python's re cannot read it")
    assert regex_problem(pattern) is None


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a+)+$",
        r"(a*)*b",
        r"(\w+\s?)+$",
        r"(?:x|(?:ab+))*c",
        r"((a{2,3})+)+",
        r"(?:(?=(a+))\1)*?b+c+",
    ],
)
def test_a_repeat_inside_a_repeat_is_named(pattern: str) -> None:
    problem = regex_problem(pattern)
    assert problem is not None
    assert "repeat inside a repeat" in problem


@pytest.mark.parametrize(
    "pattern",
    [
        r"((a{1000}){1000}){1000}",
        r"(a{1000}){1000}",
        r"(?:.{0,400}x){400}",
        r"((a{1000,}){1000,}){1000,}",
    ],
)
def test_counted_repeats_that_multiply_out_are_named(pattern: str) -> None:
    problem = regex_problem(pattern)
    assert problem is not None
    assert "multiply" in problem


def test_a_pattern_too_long_is_named() -> None:
    assert regex_problem("a" * MAX_PATTERN_LENGTH) is None
    problem = regex_problem("a" * (MAX_PATTERN_LENGTH + 1))
    assert problem is not None
    assert "longer than" in problem


def test_a_pattern_re_cannot_read_raises_re_error() -> None:
    with pytest.raises(re.error):
        regex_problem("(unclosed")
