"""Hypothesis strategies shared by the JSON preview tests."""

from __future__ import annotations

from hypothesis import strategies as st

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
