"""grep_artifact: matching lines with 1-based numbers, character offsets and context, from
any store, streamed in pieces; bad and runaway patterns end in typed errors."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from budgetware import (
    ArtifactNotFound,
    InvalidPattern,
    InvalidReadArgument,
    SearchTimeout,
    grep_artifact,
    read_artifact,
)
from budgetware.finalizer import LocalArtifactStore
from budgetware.retrieval import grep as grep_module
from budgetware.retrieval.grep import grep_result
from budgetware.store.base import ContentStore
from budgetware.types import GrepMatch

LOG = "\n".join(
    [f"PASSED tests/test_{i}.py::test_ok" for i in range(1, 3000)]
    + ["FAILED tests/test_cart.py::test_checkout_total - AssertionError: 汉字 ≠ 😀"]
    + [f"PASSED tests/test_{i}.py::test_more" for i in range(3000, 6000)]
    + ["=== 1 failed, 5998 passed in 42.10s ==="]
)


def expected(text: str, pattern: str) -> list[tuple[int, str]]:
    lines = text.split("\n")
    return [(i + 1, line) for i, line in enumerate(lines) if re.search(pattern, line)]


@pytest.mark.parametrize("pattern", ["FAILED", "test_cart\\.py", "^===", "汉字", "passed in \\d+"])
def test_matches_are_the_lines_grep_finds(any_store: ContentStore, pattern: str) -> None:
    ref = any_store.put(LOG)
    matches = grep_artifact(ref, pattern, store=any_store)
    assert [(m.line_number, m.line) for m in matches] == expected(LOG, pattern)
    for m in matches:
        assert read_artifact(ref, offset=m.offset, limit=len(m.line), store=any_store) == m.line


def test_context_lines_come_around_each_match(any_store: ContentStore) -> None:
    ref = any_store.put(LOG)
    [match] = grep_artifact(ref, "FAILED", context=2, store=any_store)
    lines = LOG.split("\n")
    assert match.line_number == 3000
    assert [(b.line_number, b.line) for b in match.before] == [
        (2998, lines[2997]),
        (2999, lines[2998]),
    ]
    assert [(a.line_number, a.line) for a in match.after] == [
        (3001, lines[3000]),
        (3002, lines[3001]),
    ]
    for line in (*match.before, *match.after):
        assert LOG[line.offset : line.offset + len(line.line)] == line.line


def test_max_matches_stops_early_and_says_more_follow(any_store: ContentStore) -> None:
    ref = any_store.put(LOG)
    result = grep_result(ref, "PASSED", max_matches=5, store=any_store)
    assert [m.line_number for m in result.matches] == [1, 2, 3, 4, 5]
    assert result.more
    assert not grep_result(ref, "FAILED", max_matches=1, store=any_store).more


def test_a_match_not_taken_is_never_a_context_line(any_store: ContentStore) -> None:
    # max_matches cuts the matches at line 3: the lines after the last ones taken stop
    # before it, so a line shown as context never matches.
    ref = any_store.put("hit 1\nhit 2\nhit 3\nhit 4\nend\n")
    for pattern in ("hit", "h[i]t", "hit \\d"):
        result = grep_result(ref, pattern, context=2, max_matches=2, store=any_store)
        assert result.more
        assert [m.line_number for m in result.matches] == [1, 2]
        assert [a.line_number for a in result.matches[0].after] == [2]
        assert result.matches[1].after == ()
    [*_, last] = grep_artifact(ref, "hit", context=2, store=any_store)  # all taken
    assert [a.line for a in last.after] == ["end"]


def test_pieces_and_their_seams_lose_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pieces of a few hundred bytes: every seam between lines, lines across seams, context
    # across seams; plain strings, regular expressions with a plain string in every match
    # (pieces without it skipped) and without one (decoded whole).
    monkeypatch.setattr(grep_module, "CHUNK", 333)
    monkeypatch.setattr(grep_module, "LONG_LINE", 1000)
    store = LocalArtifactStore(tmp_path / "a")
    text = "\n".join(
        f"{i} {'汉' * (i % 7)} {'hit' if i % 13 == 0 else 'miss'}" for i in range(1, 800)
    )
    ref = store.put(text + "\n")
    lines = text.split("\n")
    for pattern in ("hit", "h.t", "^1", "\\d 汉+ hit", "[0-9] miss$", "汉汉汉 miss"):
        matches = grep_artifact(ref, pattern, context=3, max_matches=10_000, store=store)
        assert [(m.line_number, m.line) for m in matches] == expected(text, pattern), pattern
        for m in matches:
            n = m.line_number
            assert [b.line for b in m.before] == lines[max(n - 4, 0) : n - 1]
            assert [a.line for a in m.after] == lines[n : n + 3]
            for line in (m, *m.before, *m.after):
                assert text[line.offset : line.offset + len(line.line)] == line.line


def test_a_long_line_is_shown_around_the_match(any_store: ContentStore) -> None:
    line = "x" * 50_000 + " needle " + "汉" * 50_000
    ref = any_store.put("first\n" + line + "\nlast")
    [m] = grep_artifact(ref, "needle", max_line_chars=100, store=any_store)
    assert m.line_number == 2
    assert "needle" in m.line
    assert len(m.line) == 100
    assert read_artifact(ref, offset=m.offset, limit=100, store=any_store) == m.line
    [r] = grep_artifact(ref, "ne+dle", max_line_chars=100, store=any_store)
    assert r.line == m.line
    assert r.offset == m.offset


def test_a_search_streams_the_artifact_in_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from budgetware.retrieval import artifact

    piece = 64 * 1024
    monkeypatch.setattr(grep_module, "CHUNK", piece)
    monkeypatch.setattr(artifact, "READ_CHUNK", piece)
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put("line\n" * 400_000 + "needle\n")  # 2 MB
    reads: list[int] = []
    window = store.read_piece

    def counting_window(key: str, start: int, end: int, version: Any = None) -> Any:
        reads.append(end - start)
        return window(key, start, end, version)

    monkeypatch.setattr(store, "read_piece", counting_window)
    for pattern in ("needle", "ne+dle"):
        [match] = grep_artifact(ref, pattern, context=1, store=store)
        assert (match.line_number, match.line) == (400_001, "needle")
        assert max(reads) <= piece + len("needle")
        assert sum(reads) >= 2_000_000
        reads.clear()


def test_context_around_many_matches(tmp_path: Path) -> None:
    # Non-ASCII lines, a match every third line, two lines of context: every line and
    # offset right.
    store = LocalArtifactStore(tmp_path / "a")
    row = "汉字" * 50
    text = "".join(f"{row} FAILED {i}\n{row}\n{row}\n" for i in range(1500))
    ref = store.put(text)
    lines = text.split("\n")
    for pattern in ("FAILED", "F[A]ILED \\d", "^[^F\\n]+F"):
        matches = grep_artifact(ref, pattern, context=2, max_matches=10_000, store=store)
        assert [m.line_number for m in matches] == list(range(1, 4500, 3)), pattern
        for m in matches[::97]:
            n = m.line_number
            assert [b.line for b in m.before] == lines[max(n - 3, 0) : n - 1]
            assert [a.line for a in m.after] == lines[n : n + 2]
            for line in (m, *m.before, *m.after):
                assert text[line.offset : line.offset + len(line.line)] == line.line


def test_no_match_is_an_empty_list(any_store: ContentStore) -> None:
    ref = any_store.put(LOG)
    assert grep_artifact(ref, "ERROR", store=any_store) == []


def test_matches_are_grep_matches(any_store: ContentStore) -> None:
    ref = any_store.put("a\nb\n")
    [m] = grep_artifact(ref, "b", store=any_store)
    assert isinstance(m, GrepMatch)
    assert (m.line_number, m.line, m.offset) == (2, "b", 2)


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["foo(", "[a-", "*x", "a{2,1}", "trailing\\"])
def test_an_invalid_pattern_is_invalid_pattern(any_store: ContentStore, pattern: str) -> None:
    ref = any_store.put("abc")
    with pytest.raises(InvalidPattern, match="not a valid regular expression"):
        grep_artifact(ref, pattern, store=any_store)


def test_a_pattern_must_be_a_string(any_store: ContentStore) -> None:
    ref = any_store.put("abc")
    with pytest.raises(InvalidPattern):
        grep_artifact(ref, 42, store=any_store)  # type: ignore[arg-type]


def test_catastrophic_backtracking_is_stopped_at_the_time_limit(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put(("a" * 64 + "b\n") * 10)
    started = time.monotonic()
    with pytest.raises(SearchTimeout):
        grep_artifact(ref, "^(a|aa)+$", timeout=0.5, store=store)
    # the limit is checked inside the match: well under the hours the pattern would take
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("context", -1),
        ("max_matches", 0),
        ("context", "2"),
        pytest.param("context", 10**5000, id="context-5000-digits"),
        pytest.param("max_line_chars", 10**5000, id="max_line_chars-5000-digits"),
        ("timeout", float("nan")),
        ("timeout", float("inf")),
        ("timeout", 0),
        ("timeout", "10"),
    ],
)
def test_counts_are_checked(any_store: ContentStore, name: str, value: object) -> None:
    ref = any_store.put("abc")
    with pytest.raises(InvalidReadArgument):
        grep_artifact(ref, "a", store=any_store, **{name: value})  # type: ignore[arg-type]


def test_an_unknown_reference_is_not_found(any_store: ContentStore) -> None:
    with pytest.raises(ArtifactNotFound):
        grep_artifact("e" * 64, "x", store=any_store)


def test_plain_strings_need_no_regex_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put(LOG)
    monkeypatch.setitem(sys.modules, "regex", None)  # not installed
    assert [m.line_number for m in grep_artifact(ref, "FAILED tests/", store=store)] == [3000]
    with pytest.raises(ImportError, match=r"budgetware\[retrieval\]"):
        grep_artifact(ref, "FAIL(ED)?", store=store)


# -- CRLF line ends ------------------------------------------------------------------------

CRLF = "FAIL a\r\nFAIL b\r\nok\r\nprice $5\r\nmixed lf\nlast b"


@pytest.mark.parametrize(
    ("pattern", "lines"),
    [
        ("FAIL b$", [2]),
        ("b$", [2, 6]),  # the last line has no line break at all
        ("^ok$", [3]),
        ("[a-z]$", [1, 2, 3, 5, 6]),
        ("lf$", [5]),  # a "\n" line end in the same file
        ("\\$5$", [4]),  # an escaped dollar is a dollar sign
        ("[$]5", [4]),
        ("b\\r$", [2]),  # the "\r" itself can still be matched
    ],
)
def test_dollar_matches_at_crlf_line_ends(
    any_store: ContentStore, pattern: str, lines: list[int]
) -> None:
    ref = any_store.put(CRLF)
    matches = grep_artifact(ref, pattern, context=1, store=any_store)
    assert [m.line_number for m in matches] == lines
    for m in matches:
        assert "\r" not in m.line  # lines are shown without their line break
        assert CRLF[m.offset : m.offset + len(m.line)] == m.line
        for around in (*m.before, *m.after):
            assert "\r" not in around.line
            assert CRLF[around.offset : around.offset + len(around.line)] == around.line
