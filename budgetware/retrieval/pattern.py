"""Search patterns: what a model's pattern may cost before it runs, and how it is compiled.

The ``regex`` package expands counted repeats when it compiles, before any time limit
applies (docs/retrieval.md), so a pattern is measured first by reading its text: no
compiler, no engine. ``$`` matches before ``\\n`` and ``\\r\\n`` alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from budgetware.core.regexcost import MAX_PATTERN_LENGTH, MAX_REPEAT_PRODUCT
from budgetware.retrieval.errors import InvalidPattern

__all__ = [
    "MAX_EXPANSION",
    "Pattern",
    "compile_pattern",
    "is_literal",
    "pattern_problem",
]

# The most items a pattern's counted repeats may expand to when ``regex`` compiles it.
MAX_EXPANSION = MAX_REPEAT_PRODUCT
_SPECIAL = frozenset(".^$*+?{}[]\\|()")
_INSTALL = (
    'a regular-expression pattern needs the regex package: pip install "budgetware[retrieval]"'
)
# What `$` becomes: the end of a line, before its "\r\n" as before its "\n".
_LINE_END = "(?=\\r?$)"
_DOLLAR_WEIGHT = 4  # the items of _LINE_END, for the expansion bound
# Escapes the regex package builds out of several items: a grapheme cluster.
_HEAVY_ESCAPES = {"X": 4}
# A counted repeat, as the regex package reads one outside verbose mode.
_COUNT = re.compile(r"\{([0-9]*)(,?)([0-9]*)\}")
# A flag group that may turn on verbose mode.
_VERBOSE = re.compile(r"\(\?[a-zA-Z0-9^-]*x")


def is_literal(pattern: str) -> bool:
    """Whether ``pattern`` has no character special to regular expressions."""
    return not any(c in _SPECIAL for c in pattern)


@dataclass(frozen=True)
class Pattern:
    """A search pattern: a plain string (``compiled`` None), or a regular expression."""

    text: str
    compiled: Any = field(default=None, compare=False)


def compile_pattern(pattern: object) -> Pattern:
    """``pattern`` ready to search: InvalidPattern if it is invalid or too costly to compile;
    ImportError naming the extra when it needs the regex package."""
    if not isinstance(pattern, str):
        raise InvalidPattern(f"a pattern is a string, not {type(pattern).__name__}")
    if is_literal(pattern):
        return Pattern(pattern)
    problem = pattern_problem(pattern)
    if problem is not None:
        raise InvalidPattern(
            f"pattern refused: {problem} (it would take too much memory to compile); "
            "use smaller counts, or + and *"
        )
    try:
        import regex
    except ImportError as exc:
        raise ImportError(_INSTALL) from exc
    compiled = None
    crlf = crlf_line_ends(pattern)
    if crlf != pattern:
        try:
            compiled = regex.compile(crlf, regex.MULTILINE)
        except Exception:  # the rewrite misread the pattern: search it as written
            compiled = None
    if compiled is None:
        try:
            compiled = regex.compile(pattern, regex.MULTILINE)
        except (regex.error, ValueError, TypeError, OverflowError, RecursionError) as exc:
            raise InvalidPattern(f"not a valid regular expression: {exc}") from None
    return Pattern(pattern, compiled)


# -- what a pattern costs to compile -------------------------------------------------------


def pattern_problem(pattern: str) -> str | None:
    """Why compiling ``pattern`` with the regex package could take too much memory (a
    short phrase), or None when it cannot. Reads the pattern, never compiles it."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        return f"longer than {MAX_PATTERN_LENGTH:,} characters"
    if _VERBOSE.search(pattern):
        if _verbose_bound(pattern) <= MAX_EXPANSION:
            return None
        return "in verbose mode (?x) its counted repeats cannot be checked; write it without"
    if expansion(pattern) > MAX_EXPANSION:
        return f"its counted repeats expand to more than {MAX_EXPANSION:,} items"
    return None


def _verbose_bound(pattern: str) -> int:
    """An upper bound of the items a verbose pattern expands to: there regex reads
    ``a{1 0}`` (even with a comment between) as ``a{10}``, so every digit may multiply."""
    digits = sum(c.isdigit() for c in pattern)
    return _weight(pattern) * int(10 ** min(digits, 12))


def _weight(text: str) -> int:
    return len(text) + (_DOLLAR_WEIGHT - 1) * text.count("$")


def expansion(pattern: str) -> int:
    """At most how many items ``pattern`` expands to when regex compiles it (counting stops
    past ``MAX_EXPANSION``): every item once per round of each repeat around it. Read from
    the text, since ``re``'s parser merges ``a|b`` and reads less syntax."""
    # One frame per open group: (items before it, alternatives finished in it).
    stack: list[tuple[int, int]] = []
    total = alternatives = last = 0
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        item = 1
        if c == "\\":
            end = _escape_end(pattern, i)
            item = _HEAVY_ESCAPES.get(pattern[i + 1 : i + 2], 1) if end == i + 2 else 1
            i = end
        elif c == "[":
            end = _set_end(pattern, i)
            end = n if end < 0 else end
            item = 1 + (end - i - 2) // 4
            i = end
        elif pattern.startswith("(?#", i):
            end = pattern.find(")", i)
            i = n if end < 0 else end + 1
            continue
        elif c == "(":
            stack.append((total, alternatives))
            total = alternatives = last = 0
            i += 1
            continue
        elif c == ")" and stack:
            group = total + alternatives
            total, alternatives = stack.pop()
            total += group
            last = group
            i += 1
            continue
        elif c == "|":
            alternatives += total + 1
            total = last = 0
            i += 1
            continue
        elif c == "{":
            counted = _COUNT.match(pattern, i)
            if counted is not None and (counted[1] or counted[3]):
                low, high = counted[1], counted[3]
                rounds = int(high) if high else int(low or 0)
                rounds = max(min(rounds, MAX_EXPANSION + 1), 1)
                total += last * (rounds - 1)
                last *= rounds
                i = counted.end()
                if total > MAX_EXPANSION:
                    return total
                continue
            i += 1
        elif c in "*+?":  # a repeat node around the item (rounds are not built)
            total += 1
            last += 1
            i += 1
            continue
        else:
            item = _DOLLAR_WEIGHT if c == "$" else 1
            i += 1
        total += item
        last = item
        if total > MAX_EXPANSION:
            return total
    while stack:  # an unclosed group (the compiler refuses it): count it all the same
        group = total + alternatives
        total, alternatives = stack.pop()
        total += group
    return total + alternatives


def _escape_end(pattern: str, start: int) -> int:
    """Just after the escape at ``start``: ``\\x`` or one with braces (``\\p{L}``,
    ``\\P{L}``, ``\\N{DASH}``) or angle brackets (``\\g<name>``); the braces after any
    other escape are a counted repeat (``\\d{1000}``)."""
    end = start + 2
    opens = {"p": "{", "P": "{", "N": "{", "g": "<"}.get(pattern[start + 1 : end])
    if opens is not None and pattern[end : end + 1] == opens:
        close = pattern.find("}" if opens == "{" else ">", end)
        if close >= 0 and close - end <= 64:
            return close + 1
    return min(end, len(pattern))


def _set_end(pattern: str, start: int) -> int:
    """Just after the ``]`` closing the set that opens at ``start``, or -1."""
    i, n = start + 1, len(pattern)
    if i < n and pattern[i] == "^":
        i += 1
    if i < n and pattern[i] == "]":  # a leading ] is a member
        i += 1
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if pattern.startswith("[:", i):  # a POSIX class, [:alpha:]
            end = pattern.find(":]", i + 2)
            if end >= 0:
                i = end + 2
                continue
        if c == "]":
            return i + 1
        i += 1
    return -1


# -- `$` at CRLF line ends -----------------------------------------------------------------


def crlf_line_ends(pattern: str) -> str:
    """``pattern`` with every ``$`` anchor made to match before ``\\r\\n`` too; a pattern
    this cannot read comes back unchanged."""
    if "$" not in pattern or "V1" in pattern:
        return pattern
    verbose = _VERBOSE.search(pattern) is not None
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
        elif c == "[":
            end = _set_end(pattern, i)
            if end < 0:
                return pattern
            out.append(pattern[i:end])
            i = end
        elif pattern.startswith("(?#", i):
            end = pattern.find(")", i)
            if end < 0:
                return pattern
            out.append(pattern[i : end + 1])
            i = end + 1
        elif c == "#" and verbose:
            end = pattern.find("\n", i)
            end = n if end < 0 else end
            out.append(pattern[i:end])
            i = end
        elif c == "$":
            out.append(_LINE_END)
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)
