"""Hypothesis strategies shared by the JSON preview tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hypothesis import strategies as st

T = TypeVar("T")

_DIGITS = "0123456789"


def _integer_part(digits: int) -> st.SearchStrategy[str]:
    return st.just("0") | st.builds(
        str.__add__, st.sampled_from("123456789"), st.text(_DIGITS, max_size=digits - 1)
    )


def json_numbers(int_digits: int, fraction_digits: int) -> st.SearchStrategy[str]:
    """Numbers as JSON spells them, ``-?(0|[1-9][0-9]{0,int_digits-1})(\\.[0-9]{1,f})?
    ([eE][+-]?[0-9]{1,3})?``, built from their parts: the same texts as ``st.from_regex``
    of that pattern, at a fraction of its cost per example (most of a run's time went to
    drawing from the regex)."""
    fraction = st.just("") | st.text(_DIGITS, min_size=1, max_size=fraction_digits).map(
        lambda digits: "." + digits
    )
    exponent = st.just("") | st.builds(
        lambda e, sign, digits: e + sign + digits,
        st.sampled_from("eE"),
        st.sampled_from(["", "+", "-"]),
        st.text(_DIGITS, min_size=1, max_size=3),
    )
    return st.builds(
        lambda sign, whole, part, power: sign + whole + part + power,
        st.sampled_from(["", "-"]),
        _integer_part(int_digits),
        fraction,
        exponent,
    )


def json_trees(
    leaves: st.SearchStrategy[T],
    array: Callable[[list[T]], T],
    obj: Callable[[list[tuple[str, T]]], T],
    keys: st.SearchStrategy[str],
    *,
    max_leaves: int,
    array_size: int,
    object_size: int,
) -> st.SearchStrategy[T]:
    """JSON documents of ``leaves`` nested in arrays (``array`` of the elements) and objects
    (``obj`` of the members, a key from ``keys`` each): what ``st.recursive(leaves, lambda
    children: st.lists(children, max_size=array_size).map(array) | st.lists(st.tuples(keys,
    children), max_size=object_size).map(obj), max_leaves=max_leaves)`` draws, as deep (as
    many levels as st.recursive nests), as long and up to as many leaves, at less than half
    its cost per example. st.recursive draws a document again from the start when one
    exceeds ``max_leaves`` (more than half the leaves it drew were thrown away so) and goes
    through a choice of nesting level for every element; here a document that reaches
    ``max_leaves`` ends its arrays and objects there, and each element draws its level once.
    Every choice shrinks toward a shorter, shallower document."""
    levels = 2  # as st.recursive counts them: the leaves, then each further nesting
    while 2 ** (levels - 1) <= max_leaves:
        levels += 1
    more = st.sampled_from([False] * 2 + [True] * 7)  # about as long as it drew them
    is_object = st.booleans()
    below = [st.integers(0, level - 1) for level in range(1, levels)]

    @st.composite
    def documents(draw: st.DrawFn) -> T:
        room = max_leaves

        def node(level: int) -> T:
            nonlocal room
            if level == 0 or room <= 0:
                room -= 1
                return draw(leaves)
            if draw(is_object):
                members: list[tuple[str, T]] = []
                while len(members) < object_size and room > 0 and draw(more):
                    key = draw(keys)
                    members.append((key, node(draw(below[level - 1]))))
                return obj(members)
            items: list[T] = []
            while len(items) < array_size and room > 0 and draw(more):
                items.append(node(draw(below[level - 1])))
            return array(items)

        return node(draw(st.integers(0, levels - 1)))

    return documents()
