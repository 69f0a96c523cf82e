"""The 21 acceptance cases of PROJECTION.md, one behavior per test."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from budgetware.core.jsonio import dumps_bytes
from budgetware.core.measure import json_string_bytes
from budgetware.display.projection import (
    ACP_MARKER,
    FIELD_BUDGET,
    HEADLESS_MARKER,
    project_acp_frame,
    project_acp_update,
    project_headless_message,
    project_string,
)

from .reference import reference_json_bytes

BUDGET = FIELD_BUDGET


def text_block(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def tool_update(**fields: Any) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": "call-1", **fields}


def texts_of(update: dict[str, Any]) -> list[str]:
    return [block["content"]["text"] for block in update["content"]]


def content_bytes(update: dict[str, Any]) -> int:
    return len(dumps_bytes(update["content"]))


def has_split_pair(s: str) -> bool:
    # A high surrogate not followed by a low one (or the reverse) where the input had none.
    for i, c in enumerate(s):
        if "\ud800" <= c <= "\udbff" and (i + 1 == len(s) or not "\udc00" <= s[i + 1] <= "\udfff"):
            return True
        if "\udc00" <= c <= "\udfff" and (i == 0 or not "\ud800" <= s[i - 1] <= "\udbff"):
            return True
    return False


# 1 --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [65_533, 65_534])
def test_case01_ascii_string_at_or_under_budget_is_the_same_object(n: int) -> None:
    s = "x" * n
    assert project_string(s, BUDGET, ACP_MARKER) is s


def test_case01_ascii_string_one_byte_over_is_cut_to_exactly_the_budget() -> None:
    out = project_string("x" * 65_535, BUDGET, ACP_MARKER)
    assert ACP_MARKER in out
    assert json_string_bytes(out) == BUDGET


# 2 --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "s",
    ["汉" * 100_000, '"\\\n\0' * 30_000, chr(0xD800) * 100_000, chr(0xDC00) * 100_000],
    ids=["cjk", "escapes", "lone-high", "lone-low"],
)
def test_case02_costly_characters_are_cut_within_budget_with_marker(s: str) -> None:
    out = project_string(s, BUDGET, ACP_MARKER)
    assert out != s
    assert ACP_MARKER in out
    assert json_string_bytes(out) <= BUDGET
    assert reference_json_bytes(out) <= BUDGET


# 3 --------------------------------------------------------------------------------------


def test_case03_cut_keeps_head_and_tail_in_a_one_to_four_ratio() -> None:
    s = "HEAD-" + "h" * 200_000 + "-" + "t" * 200_000 + "-TAIL"
    out = project_string(s, BUDGET, ACP_MARKER)
    head, tail = out.split(ACP_MARKER)
    assert head.startswith("HEAD-")
    assert tail.endswith("-TAIL")
    assert 3.9 < len(tail) / len(head) < 4.1
    # The worked example: 13,098 head bytes and 52,395 tail bytes.
    assert (len(head), len(tail)) == (13_098, 52_395)


# 4 --------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["-tail", "-tail!!"])
def test_case04_astral_characters_are_never_split(suffix: str) -> None:
    s = "head-" + "😀" * 100_000 + suffix
    out = project_string(s, BUDGET, ACP_MARKER)
    assert out.startswith("head-")
    assert out.endswith(suffix)
    assert json_string_bytes(out) <= BUDGET
    # Also with the astral characters held as explicit surrogate pairs (two code points).
    paired = "head-" + "\ud83d\ude00" * 100_000 + suffix
    cut = project_string(paired, BUDGET, ACP_MARKER)
    assert not has_split_pair(cut)
    assert json_string_bytes(cut) <= BUDGET


# 5 --------------------------------------------------------------------------------------


def test_case05_budget_smaller_than_marker_keeps_the_longest_prefix_without_marker() -> None:
    out = project_string("abcdef", 5, ACP_MARKER)
    assert out == "abc"
    assert json_string_bytes(out) == 5


# 6 --------------------------------------------------------------------------------------


def test_case06_ruler_matches_a_reference_serializer_on_a_seeded_fuzz() -> None:
    rng = random.Random(20261130)
    alphabet = ["a", '"', "\\", "\n", "\0", "汉", "😀", "\ud800", "\udc00", "\u2028"]
    alphabet += [chr(c) for c in range(0x20)] + ["\x7f", "\x80", "\u07ff", "\u0800"]
    for _ in range(300):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 200)))
        assert json_string_bytes(s) == reference_json_bytes(s), repr(s)


# 7 --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [65_533, 65_534])
def test_case07_raw_output_within_budget_returns_the_same_update(n: int) -> None:
    update = tool_update(rawOutput="r" * n)
    assert project_acp_update(update) is update


def test_case07_raw_output_over_budget_returns_a_new_bounded_update() -> None:
    update = tool_update(rawOutput="r" * 65_535)
    out = project_acp_update(update)
    assert out is not update
    assert json_string_bytes(out["rawOutput"]) <= BUDGET
    assert ACP_MARKER in out["rawOutput"]


# 8 --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [65_479, 65_480])
def test_case08_one_block_within_budget_returns_the_same_update(n: int) -> None:
    update = tool_update(content=[text_block("c" * n)])
    assert project_acp_update(update) is update


def test_case08_one_block_over_budget_is_bounded_as_a_whole_array() -> None:
    out = project_acp_update(tool_update(content=[text_block("c" * 65_481)]))
    assert len(out["content"]) == 1
    assert content_bytes(out) <= BUDGET


# 9 --------------------------------------------------------------------------------------


def test_case09_two_big_blocks_share_the_budget_equally() -> None:
    first = "first-" + "a" * 300_000 + "-first-tail"
    second = "second-" + "b" * 300_000 + "-second-tail"
    out = project_acp_update(tool_update(content=[text_block(first), text_block(second)]))
    a, b = texts_of(out)
    assert ACP_MARKER in a
    assert ACP_MARKER in b
    assert a.startswith("first-")
    assert a.endswith("-first-tail")
    assert b.startswith("second-")
    assert b.endswith("-second-tail")
    assert abs(len(a) - len(b)) <= 1
    assert content_bytes(out) <= BUDGET


# 10 -------------------------------------------------------------------------------------


def test_case10_small_block_kept_and_big_ones_fill_exactly_the_budget() -> None:
    update = tool_update(
        content=[text_block("small"), text_block("x" * 200_000), text_block("y" * 200_000)]
    )
    out = project_acp_update(update)
    assert texts_of(out)[0] == "small"
    assert out["content"][0] is update["content"][0]
    assert content_bytes(out) == BUDGET


# 11 -------------------------------------------------------------------------------------


def test_case11_block_under_its_share_is_kept_verbatim() -> None:
    update = tool_update(
        content=[text_block("a" * 10_000), text_block("b" * 50_000), text_block("c" * 200_000)]
    )
    out = project_acp_update(update)
    assert texts_of(out)[0] == "a" * 10_000
    assert content_bytes(out) == BUDGET


# 12 -------------------------------------------------------------------------------------


def test_case12_six_hundred_blocks_all_keep_a_marker_and_fill_the_budget() -> None:
    update = tool_update(content=[text_block(f"{i}:" + "x" * 40_000) for i in range(600)])
    out = project_acp_update(update)
    texts = texts_of(out)
    assert len(texts) == 600
    assert all(ACP_MARKER in t for t in texts)
    # Order is preserved: each head (2 bytes at this share) is the start of its own block.
    assert all(t.startswith(f"{i}:"[:2]) for i, t in enumerate(texts))
    assert content_bytes(out) == BUDGET


# 13 -------------------------------------------------------------------------------------


def test_case13_1191_empty_blocks_fit_and_return_the_same_update() -> None:
    update = tool_update(content=[text_block("") for _ in range(1_191)])
    assert content_bytes(update) <= BUDGET
    assert project_acp_update(update) is update


def test_case13_1192_empty_blocks_collapse_to_one_marker_block() -> None:
    out = project_acp_update(tool_update(content=[text_block("") for _ in range(1_192)]))
    assert out["content"] == [text_block(ACP_MARKER)]


def test_case13_minimums_beyond_the_room_collapse_to_one_marker_block() -> None:
    out = project_acp_update(tool_update(content=[text_block("x" * 100) for _ in range(1_000)]))
    assert out["content"] == [text_block(ACP_MARKER)]


# 14 -------------------------------------------------------------------------------------


def test_case14_one_block_and_equal_raw_output_share_one_projected_text() -> None:
    s = "head-" + "x" * 499_999 + "-tail"
    out = project_acp_update(tool_update(content=[text_block(s)], rawOutput=s))
    assert out["rawOutput"] == texts_of(out)[0]
    assert out["rawOutput"] is texts_of(out)[0]
    assert content_bytes(out) <= BUDGET
    assert json_string_bytes(out["rawOutput"]) <= BUDGET


# 15 -------------------------------------------------------------------------------------


def test_case15_mixed_content_is_kept_and_raw_output_bounded_on_its_own() -> None:
    diff = {"type": "diff", "path": "/a.py", "oldText": "a", "newText": "b"}
    content = [text_block("t" * 100_000), diff]
    out = project_acp_update(tool_update(content=content, rawOutput="r" * 100_000))
    assert out["content"] is content
    assert json_string_bytes(out["rawOutput"]) <= BUDGET


def test_case15_structured_raw_output_is_kept_and_content_bounded_on_its_own() -> None:
    raw = {"value": "r" * 100_000}
    out = project_acp_update(tool_update(content=[text_block("t" * 100_000)], rawOutput=raw))
    assert out["rawOutput"] is raw
    assert content_bytes(out) <= BUDGET


# 16 -------------------------------------------------------------------------------------

BIG = "z" * 200_000


@pytest.mark.parametrize(
    "block",
    [
        {"type": "content", "content": {"type": "text", "text": BIG}, "annotations": {}},
        {"type": "content", "content": {"type": "text", "text": BIG, "annotations": None}},
        {"type": "diff", "path": "/big.txt", "oldText": BIG, "newText": BIG},
        {"type": "terminal", "terminalId": "term-" + BIG},
        {"type": "content", "content": {"type": "image", "data": BIG, "mimeType": "image/png"}},
    ],
    ids=["outer-annotations", "inner-annotations", "diff", "terminal", "image"],
)
def test_case16_non_text_or_annotated_content_is_left_untouched(block: dict[str, Any]) -> None:
    update = tool_update(content=[block])
    assert project_acp_update(update) is update


# 17 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "meta",
    [{"toolName": "mcp__ui__present_ui"}, {"serverId": "dq-A2UI"}],
    ids=["tool-name", "server-id"],
)
def test_case17_a2ui_updates_are_exempt(meta: dict[str, Any]) -> None:
    update = tool_update(content=[text_block(BIG)], rawOutput=BIG, _meta=meta)
    assert project_acp_update(update) is update


def test_case17_tool_name_only_ending_like_a2ui_is_not_exempt() -> None:
    update = tool_update(rawOutput=BIG, _meta={"toolName": "mcp__ui__present_uis"})
    assert project_acp_update(update) is not update


# 18 -------------------------------------------------------------------------------------


def test_case18_input_is_never_mutated() -> None:
    update = tool_update(
        content=[text_block("keep"), text_block(BIG)], rawOutput=BIG, _meta={"k": [1]}
    )
    before = copy.deepcopy(update)
    project_acp_update(update)
    assert update == before


def test_case18_projecting_twice_returns_the_same_object_the_second_time() -> None:
    once = project_acp_update(
        tool_update(content=[text_block(BIG), text_block(BIG)], rawOutput=BIG)
    )
    assert project_acp_update(once) is once


def test_case18_untouched_blocks_and_meta_are_shared_by_identity() -> None:
    meta = {"toolName": "read_file"}
    update = tool_update(content=[text_block("keep"), text_block(BIG)], _meta=meta)
    out = project_acp_update(update)
    assert out["_meta"] is meta
    assert out["content"][0] is update["content"][0]
    assert out["content"][1] is not update["content"][1]


# 19 -------------------------------------------------------------------------------------


def test_case19_message_chunks_are_never_projected() -> None:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": BIG}}
    assert project_acp_update(update) is update


def test_case19_tool_call_start_is_never_projected() -> None:
    update = {"sessionUpdate": "tool_call", "toolCallId": "c", "title": "t", "rawOutput": BIG}
    assert project_acp_update(update) is update


def test_case19_in_progress_tool_call_update_is_bounded() -> None:
    out = project_acp_update(tool_update(status="in_progress", rawOutput="r" * 100_000))
    assert json_string_bytes(out["rawOutput"]) <= BUDGET


# 20 -------------------------------------------------------------------------------------


@pytest.mark.parametrize("s", ["a" * 499_999, "汉" * 500_001], ids=["ascii", "cjk"])
def test_case20_big_content_and_equal_raw_output_make_a_small_frame(s: str) -> None:
    frame = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": tool_update(content=[text_block(s)], rawOutput=s)},
    }
    out = project_acp_frame(frame)
    update = out["params"]["update"]
    assert content_bytes(update) <= BUDGET
    assert json_string_bytes(update["rawOutput"]) <= BUDGET
    assert len(dumps_bytes(out)) < 256 * 1024
    assert frame["params"]["update"]["rawOutput"] is s


def test_frame_that_is_not_a_session_update_is_returned_as_is() -> None:
    frame = {"jsonrpc": "2.0", "id": 3, "result": {"rawOutput": BIG}}
    assert project_acp_frame(frame) is frame


# 21 -------------------------------------------------------------------------------------


def headless_message(content: str) -> dict[str, Any]:
    return {
        "type": "user",
        "session_id": "s",
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "tu-1",
                    "is_error": True,
                    "content": content,
                }
            ],
        },
    }


def test_case21_headless_tool_result_is_bounded_with_its_marker() -> None:
    message = headless_message("HEAD-" + "x" * 100_000 + "-TAIL")
    out = project_headless_message(message)
    block = out["message"]["content"][0]
    assert json_string_bytes(block["content"]) <= BUDGET
    assert HEADLESS_MARKER in block["content"]
    assert block["content"].startswith("HEAD-")
    assert block["content"].endswith("-TAIL")
    assert block["is_error"] is True
    assert block["tool_use_id"] == "tu-1"


def test_case21_headless_message_within_budget_is_the_same_object() -> None:
    message = headless_message("small")
    assert project_headless_message(message) is message


def test_case21_projected_headless_message_serializes_as_parseable_json() -> None:
    out = project_headless_message(headless_message("\ud800" + "x" * 100_000))
    parsed = json.loads(dumps_bytes(out))
    assert parsed["message"]["content"][0]["content"].startswith("\ud800")
