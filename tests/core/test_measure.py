"""Measuring and cutting text: the JSON byte ruler, budget units, character-safe cuts."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgetware.core.measure import _PIECE_CHARS, cut_prefix, cut_suffix
from budgetware.finalizer import json_string_bytes, measure

# Measuring, fitting and parsing touch no file: one file API is enough (fs_watch.py).
TOUCHES_NO_FILES = True

REFERENCE = [
    ("", 2),
    ("plain ASCII", 13),
    ('"\\\n\b\f\r\t', 16),
    ("\0\x01\x1f", 20),
    ("汉字", 8),
    ("😀", 6),
    ("\ud800", 8),
    ("\udc00", 8),
    ("\u2028\u2029", 8),
    ("\x7f\x80\u07ff\u0800", 10),
]

# Lone surrogates, astral characters, controls and escapes are what rulers get wrong.
tricky_text = st.text(
    alphabet=st.one_of(
        st.sampled_from(['"', "\\", "\n", "\0", "\x1f", "\x7f", "汉", "😀", "\u2028", "a"]),
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
        st.characters(),
    ),
    max_size=200,
)


def reference_json_bytes(s: str) -> int:
    """A reference serializer: the standard library, then lone surrogates as escapes."""
    text = json.dumps(s, ensure_ascii=False)
    out = []
    for ch in text:
        out.append(f"\\u{ord(ch):04x}" if 0xD800 <= ord(ch) <= 0xDFFF else ch)
    return len("".join(out).encode("utf-8"))


@pytest.mark.parametrize(("text", "expected"), REFERENCE)
def test_json_string_bytes_matches_the_reference_table(text: str, expected: int) -> None:
    assert json_string_bytes(text) == expected


@given(tricky_text)
def test_json_string_bytes_equals_a_reference_serializer(text: str) -> None:
    assert json_string_bytes(text) == reference_json_bytes(text)


def test_json_string_bytes_across_its_pieces() -> None:
    # A long string is measured in pieces: what straddles their border counts whole.
    text = "a" * (_PIECE_CHARS - 2) + '😀\ud800"\n汉' + "b" * _PIECE_CHARS
    assert json_string_bytes(text) == reference_json_bytes(text)


def test_json_string_bytes_stops_early_above_a_limit() -> None:
    big = "x" * 1_000_000
    assert json_string_bytes(big, limit=10) > 10
    assert json_string_bytes("abc", limit=10) == 5


def test_measure_counts_code_points_by_default() -> None:
    assert measure("😀汉a") == 3
    assert measure("😀汉a", "utf8_bytes") == 4 + 3 + 1


def test_measure_counts_a_lone_surrogate_as_three_utf8_bytes() -> None:
    assert measure("\ud800", "utf8_bytes") == 3


@given(
    tricky_text,
    st.integers(min_value=0, max_value=250),
    st.sampled_from(["chars", "utf8_bytes", "tokens"]),
)
def test_cuts_never_exceed_their_size_and_are_true_prefixes_and_suffixes(
    text: str, size: int, unit: str
) -> None:
    head = cut_prefix(text, size, unit)  # type: ignore[arg-type]
    tail = cut_suffix(text, size, unit)  # type: ignore[arg-type]
    assert text.startswith(head)
    assert text.endswith(tail)
    assert measure(head, unit) <= size  # type: ignore[arg-type]
    assert measure(tail, unit) <= size  # type: ignore[arg-type]


@given(st.lists(st.sampled_from(["😀", "a", "汉", "é"]), max_size=60), st.integers(0, 80))
def test_utf8_cuts_are_the_longest_that_fit(chars: list[str], size: int) -> None:
    text = "".join(chars)
    head = cut_prefix(text, size, "utf8_bytes")
    if len(head) < len(text):
        assert measure(text[: len(head) + 1], "utf8_bytes") > size
    tail = cut_suffix(text, size, "utf8_bytes")
    if len(tail) < len(text):
        assert measure(text[len(text) - len(tail) - 1 :], "utf8_bytes") > size


def test_cuts_never_split_a_surrogate_pair_held_as_two_code_points() -> None:
    pair = "\ud83d\ude00"  # what a careless decoder may leave in a str
    text = "a" + pair + "b"
    assert cut_prefix(text, 2) == "a"
    assert cut_suffix(text, 2) == "b"


def test_cutting_a_huge_string_reads_only_what_it_keeps() -> None:
    rng = random.Random(7)
    text = "".join(rng.choice("ab汉😀") for _ in range(1000)) * 10_000
    head = cut_prefix(text, 100, "utf8_bytes")
    tail = cut_suffix(text, 100, "utf8_bytes")
    assert 0 < measure(head, "utf8_bytes") <= 100
    assert 0 < measure(tail, "utf8_bytes") <= 100


def test_tokens_are_estimated_as_utf8_bytes_over_four_rounded_up() -> None:
    assert measure("", "tokens") == 0
    assert measure("abcd", "tokens") == 1
    assert measure("abcde", "tokens") == 2
    assert measure("汉字", "tokens") == 2  # 6 bytes


def test_a_token_cut_keeps_at_most_four_bytes_per_token() -> None:
    text = "汉" * 1000
    head = cut_prefix(text, 10, "tokens")
    assert measure(head, "tokens") <= 10
    assert len(head.encode()) == 39  # 13 whole characters of 3 bytes fit in 40


@pytest.mark.parametrize("unit", ["a", "汉", "😀", '"\\\n', "\x01é"])
def test_long_strings_serialize_in_slices_exactly_as_whole(unit: str) -> None:
    orjson = pytest.importorskip("orjson")
    from budgetware.core.jsonio import STR_CHUNK, dumps_str_bytes

    text = (unit * (STR_CHUNK // len(unit) + 1)) * 3 + "tail"
    assert len(text) > STR_CHUNK
    assert dumps_str_bytes(text) == orjson.dumps(text)
    assert json_string_bytes(text) == len(orjson.dumps(text))
    assert json_string_bytes(text + "\ud800") == len(orjson.dumps(text)) + 6
