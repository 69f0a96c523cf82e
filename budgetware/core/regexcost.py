"""What a regular expression may cost before it runs: a variable repeat inside one
(``(a+)+``, exponential backtracking) or counted repeats multiplied out (expanded when
compiled). Patterns from settings and from a model must not hang or exhaust memory."""

from __future__ import annotations

from typing import Any

try:  # Python 3.11+
    import re._constants as _constants  # type: ignore[import-not-found,unused-ignore]
    import re._parser as _parser  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _constants  # type: ignore[no-redef,unused-ignore]
    import sre_parse as _parser  # type: ignore[no-redef,unused-ignore]

__all__ = ["MAX_PATTERN_LENGTH", "MAX_REPEAT_PRODUCT", "regex_problem"]

MAX_PATTERN_LENGTH = 1_000
# The most a pattern's counted repeats may multiply to: ``(x{100}){100}`` is 10,000.
MAX_REPEAT_PRODUCT = 100_000

_UNBOUNDED = _constants.MAXREPEAT
_REPEATS = {
    str(name)
    for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
    if hasattr(_constants, name)
}


def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` may cost without bound (a short phrase), or None; ``re.error`` when
    ``re`` cannot parse it."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        return f"longer than {MAX_PATTERN_LENGTH:,} characters"
    return _walk(_parser.parse(pattern), variable_above=False, product=1)


def _walk(items: Any, *, variable_above: bool, product: int) -> str | None:
    for op, value in items:
        name = str(op)
        if name in _REPEATS:
            low, high, body = value
            count = low if high == _UNBOUNDED else high  # x{1000,} repeats 1000 at least
            inside = product * max(count, 1)
            if inside > MAX_REPEAT_PRODUCT:
                return f"its counted repeats multiply to more than {MAX_REPEAT_PRODUCT:,}"
            # A possessive repeat never gives back what it took: nothing to backtrack into.
            varies = high != low and name != "POSSESSIVE_REPEAT"
            if varies and variable_above:
                return "a repeat inside a repeat (as in (a+)+) can take exponential time"
            # An optional part (x?) has one round: nothing to split between rounds.
            many = varies and high > 1
            problem = _walk(body, variable_above=variable_above or many, product=inside)
        elif name == "ATOMIC_GROUP":
            problem = _walk(value, variable_above=False, product=product)
        else:
            problem = None
            for sub in _children(name, value):
                problem = _walk(sub, variable_above=variable_above, product=product)
                if problem:
                    break
        if problem:
            return problem
    return None


def _children(name: str, value: Any) -> list[Any]:
    """The sub-patterns of one parsed item."""
    if name == "SUBPATTERN":
        return [value[-1]]
    if name == "BRANCH":
        return list(value[1])
    if name in ("ASSERT", "ASSERT_NOT"):
        return [value[1]]
    if name == "GROUPREF_EXISTS":
        return [branch for branch in value[1:] if branch is not None]
    return []
