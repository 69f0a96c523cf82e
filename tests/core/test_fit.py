"""Fitting a slot: truthful notice, 20% head, marker, 80% tail, never over the allocation."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgetware import BudgetConfig
from budgetware.core.artifacts import text_key
from budgetware.core.notice import DEFAULT_WORDING
from budgetware.finalizer import ToolResult, finalize_batch, fit_text, measure

# Measuring, fitting and parsing touch no file: one file API is enough (fs_watch.py).
TOUCHES_NO_FILES = True

REF = "/cache/budgetware/artifacts/" + "a" * 64 + ".txt"


def test_text_that_fits_is_returned_itself() -> None:
    text = "x" * 100
    assert fit_text(text, 100) is text


def test_preview_is_exactly_the_allocation_for_ascii() -> None:
    text = "x" * 10_000
    assert len(fit_text(text, 1_000, refs=[REF])) == 1_000


def test_notice_is_one_truthful_line() -> None:
    text = "HEAD" + "x" * 20_000 + "TAIL"
    preview = fit_text(text, 1_000, refs=[REF])
    notice = preview.split("\n", 1)[0]
    numbers = [int(n.replace(",", "")) for n in re.findall(r"[\d,]{2,}", notice)]
    kept = preview.split("\n\n", 1)[1]
    marker = re.search(r"\n\[\.\.\. ([\d,]+) chars omitted \.\.\.\]\n", kept)
    assert marker is not None
    head, tail = kept[: marker.start()], kept[marker.end() :]
    omitted = len(text) - len(head) - len(tail)
    assert numbers[:2] == [len(text), omitted]
    assert int(marker.group(1).replace(",", "")) == omitted
    assert REF in notice
    assert text.startswith(head)
    assert text.endswith(tail)


def test_tail_gets_four_times_the_head() -> None:
    text = "".join(f"{i:08d}\n" for i in range(100_000))
    preview = fit_text(text, 10_000)
    kept = preview.split("\n\n", 1)[1]
    head, _, tail = re.split(r"(\n\[\.\.\. [\d,]+ chars omitted \.\.\.\]\n)", kept)
    assert 3.9 < len(tail) / len(head) < 4.1


def test_reference_is_dropped_whole_when_it_does_not_fit() -> None:
    text = "y" * 5_000
    long_ref = "/" + "r" * 300
    preview = fit_text(text, 200, refs=[long_ref])
    assert len(preview) <= 200
    assert "/r" not in preview
    assert preview.startswith("[Tool output truncated")


def test_a_tiny_room_keeps_the_tail_behind_a_marker() -> None:
    assert fit_text("z" * 5_000, 12) == "[...]zzzzzzz"
    assert fit_text("z" * 5_000, 3) == "[.."


@pytest.mark.parametrize("size", [101, 5_000, 1_000_000])
@pytest.mark.parametrize("with_ref", [False, True])
def test_from_100_up_at_least_half_of_a_preview_is_the_output_itself(
    size: int, with_ref: bool
) -> None:
    text = "q" * size  # no notice or marker holds a "q"
    refs = [REF] if with_ref else []
    for allocation in range(100, min(size, 1_200), 7):
        preview = fit_text(text, allocation, refs=refs)
        assert len(preview) <= allocation
        assert preview.count("q") * 2 >= allocation, (allocation, preview)


def test_a_small_room_uses_the_compact_notice_with_the_same_facts() -> None:
    preview = fit_text("q" * 16_014, 150)
    notice, rest = preview.split("\n", 1)
    omitted = 16_014 - rest.count("q")
    assert notice == f"[{omitted:,} of 16,014 chars omitted.] #{text_key('q' * 16_014)[:8]}"
    assert rest.startswith("q")
    assert rest.endswith("q")
    assert "\n[...]\n" in rest


def test_a_reference_is_named_only_where_half_the_room_stays_content() -> None:
    text = "q" * 50_000
    assert REF not in fit_text(text, 250, refs=[REF])  # 97-char reference: too big a share
    compact = fit_text(text, 330, refs=[REF])
    assert REF in compact.split("\n", 1)[0]  # the compact notice names it
    assert compact.count("q") * 2 >= 330
    assert REF in fit_text(text, 1_000, refs=[REF]).split("\n", 1)[0]


def test_zero_allocation_gives_empty_text() -> None:
    assert fit_text("abc", 0) == ""


def test_all_references_of_an_entry_are_listed() -> None:
    preview = fit_text("q" * 10_000, 2_000, refs=["/a/1.txt", "/a/2.txt"])
    assert "/a/1.txt, /a/2.txt" in preview.split("\n", 1)[0]


def test_emoji_are_never_split() -> None:
    preview = fit_text("😀" * 1000, 201)
    assert len(preview) <= 201
    assert "\ufffd" not in preview
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in preview)


def test_utf8_unit_bounds_bytes() -> None:
    preview = fit_text("汉" * 10_000, 3_001, unit="utf8_bytes")
    assert measure(preview, "utf8_bytes") <= 3_001
    assert "bytes" in preview.split("\n", 1)[0]
    preview.encode("utf-8")  # whole characters only


def test_negative_allocation_is_refused() -> None:
    with pytest.raises(ValueError, match="allocation"):
        fit_text("abc", -1)


texts = st.text(alphabet=st.sampled_from("ab\n汉😀\ud800é"), max_size=3_000)


@given(
    texts, st.integers(0, 3_000), st.sampled_from(["chars", "utf8_bytes", "tokens"]), st.booleans()
)
def test_fit_never_exceeds_and_is_idempotent(
    text: str, allocation: int, unit: str, with_ref: bool
) -> None:
    refs = [REF] if with_ref else []
    once = fit_text(text, allocation, refs=refs, unit=unit)  # type: ignore[arg-type]
    assert measure(once, unit) <= allocation  # type: ignore[arg-type]
    assert fit_text(once, allocation, refs=refs, unit=unit) is once  # type: ignore[arg-type]


@given(texts, st.integers(0, 3_000))
def test_fit_is_deterministic(text: str, allocation: int) -> None:
    assert fit_text(text, allocation, refs=[REF]) == fit_text(text, allocation, refs=[REF])


@given(texts, st.integers(0, 3_000))
def test_a_reference_is_whole_or_absent(text: str, allocation: int) -> None:
    preview = fit_text(text, allocation, refs=[REF])
    if preview is not text and "/cache" in preview:
        assert REF in preview


def test_token_unit_bounds_estimated_tokens_and_says_so() -> None:
    preview = fit_text("hello world " * 10_000, 500, refs=[REF], unit="tokens")
    assert measure(preview, "tokens") <= 500
    assert "30,000 tokens" in preview.split("\n", 1)[0]


def test_count_dependent_phrases_agree_with_their_count() -> None:
    # "1 matching line from it follow" read wrong; so did "1 chars omitted".
    words = DEFAULT_WORDING
    assert "1 matching line from it follows," in words.salient_marker(10, "chars", 1)
    assert "2 matching lines from it follow," in words.salient_marker(10, "chars", 2)
    assert "[... 1 char omitted ...]" in words.marker(1, "chars")
    assert "[... 1 byte omitted ...]" in words.marker(1, "utf8_bytes")
    assert "[... 1 token omitted ...]" in words.marker(1, "tokens:o200k_base")
    assert "[... 2 tokens omitted ...]" in words.marker(2, "tokens")
    assert words.notice(1, 1, "chars", ()) == "[Tool output truncated: 1 char, 1 omitted.]"
    assert words.compact_notice(1, 1, "chars", ()) == "[1 of 1 char omitted.]"
    lines = [f"INFO step {n}" for n in range(3_000)]
    lines[1_500] = "ERROR: disk full"
    preview = fit_text("\n".join(lines) + "\n", 2_000)
    assert "; 1 matching line from it follows, with line numbers ...]\n1501: ERROR" in preview


# -- distinct outputs, distinct previews (issue 30, item 10) -----------------------------


def _pages(count: int) -> list[str]:
    # The same head and tail, told apart only in the middle: what small rooms keep is alike.
    return [
        "Fetched https://example.com/docs\n<html>"
        + "<p>same paragraph</p>" * 40
        + f"<p>page {i}</p>"
        + "<p>same paragraph</p>" * 40
        + "</html>\nstatus 200\n"
        for i in range(count)
    ]


@pytest.mark.parametrize("unit", ["chars", "utf8_bytes", "tokens"])
def test_distinct_outputs_give_distinct_previews_in_any_room(unit: str) -> None:
    pages = _pages(12)
    for room in [*range(30, 400, 3), *range(400, 2_000, 97)]:
        previews = [fit_text(page, room, unit=unit) for page in pages]  # type: ignore[arg-type]
        assert all(measure(p, unit) <= room for p in previews)  # type: ignore[arg-type]
        assert len(set(previews)) == len(pages), (room, previews[:2])
        assert previews == [fit_text(page, room, unit=unit) for page in pages]  # type: ignore[arg-type]


def test_twelve_results_in_a_small_batch_read_apart() -> None:
    entries = [
        ToolResult(call_id=f"call_{i}", tool_name="web_fetch", slots=(page,))
        for i, page in enumerate(_pages(12))
    ]
    for budget in (400, 1_000, 3_000):
        out = finalize_batch(entries, config=BudgetConfig(batch_budget=budget, persist=False))
        slots = [entry.slots[0] for entry in out]
        assert sum(len(s) for s in slots) <= budget
        assert len(set(slots)) == 12, (budget, slots[:2])
