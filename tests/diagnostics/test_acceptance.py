"""The ten acceptance cases of DIAGNOSTICS.md, one test (or a few) each."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from budgetware import BudgetConfig
from budgetware.diagnostics import events as diagnostics
from budgetware.diagnostics.events import keyed_hash
from budgetware.finalizer import ToolResult, finalize_batch, guard_batch

from .conftest import FakeClock, Log

MIXED = 'secret "汉😀\ud800" output'


def _never() -> list[tuple[str, str]]:
    raise AssertionError("a thunk was evaluated")


# 1 ----------------------------------------------------------------------------------------


def test_case1_sizes_of_a_mixed_value(log: Log) -> None:
    diagnostics.boundary("finalizer_output", values=lambda: [("model_text", MIXED)], mutated=True)
    (value,) = log.events[0]["values"]
    assert value["code_points"] == 19
    assert len(MIXED.encode("utf-16-le", "surrogatepass")) // 2 == 20  # not UTF-16 units
    assert value["raw_utf8_bytes"] == 26
    assert value["json_utf8_bytes"] == 33
    assert value["hmac_sha256"] == keyed_hash(MIXED)


def test_case1_the_line_holds_no_part_of_the_value_no_id_and_no_path(log: Log) -> None:
    diagnostics.boundary(
        "finalizer_output",
        values=lambda: [("model_text", MIXED)],
        ids=lambda: {
            "session": "sess-zq81",
            "request": "req-zq82",
            "tool_call": "call-zq83",
            "tool_name": "tool-zq84",
        },
        artifacts=lambda: [("/home/u/zq85-artifact.txt",)],
        mutated=True,
    )
    text = log.text
    escaped = json.dumps(MIXED)[1:-1]  # the JSON-escaped body, ASCII form
    raw_escaped = json.dumps(MIXED, ensure_ascii=False)[1:-1]
    for secret in (
        "secret",
        '" output',
        "汉",
        "😀",
        "\\u6c49",
        "\\ud800",
        "\\ud83d",
        escaped,
        raw_escaped,
        "zq8",
        "/home/u",
    ):
        assert secret not in text


# 2 ----------------------------------------------------------------------------------------


def test_case2_unchanged_value_keeps_its_hash_and_changed_one_differs(log: Log) -> None:
    small = ToolResult("c-small", "read", ["small output"])
    big = ToolResult("c-big", "grep", ["x" * 70_000])
    finalize_batch([small, big], config=BudgetConfig(batch_budget=10_000, persist=False))
    before, after = log.events
    assert (before["stage"], after["stage"]) == ("finalizer_input", "finalizer_output")
    assert before["mutated"] is after["mutated"] is True
    assert before["values"][0]["hmac_sha256"] == after["values"][0]["hmac_sha256"]
    assert before["values"][1]["hmac_sha256"] != after["values"][1]["hmac_sha256"]
    assert [v["call"] for v in after["values"]] == [0, 1]


# 3 ----------------------------------------------------------------------------------------


def test_case3_lone_surrogates_hash_differently_in_slots_0_and_1(log: Log) -> None:
    diagnostics.boundary(
        "guard_output",
        values=lambda: [("model_text", "\ud800"), ("model_text", "\udc00")],
        mutated=True,
    )
    first, second = log.events[0]["values"]
    assert (first["slot"], second["slot"]) == (0, 1)
    assert first["hmac_sha256"] != second["hmac_sha256"]


def test_slots_are_numbered_per_representation(log: Log) -> None:
    diagnostics.boundary(
        "acp_wire",
        values=lambda: [("acp_content", "a"), ("acp_raw_output", "b"), ("acp_content", "c")],
        mutated=True,
    )
    assert [v["slot"] for v in log.events[0]["values"]] == [0, 0, 1]


def test_values_are_hashed_alone_never_concatenated(log: Log) -> None:
    diagnostics.boundary(
        "guard_output", values=lambda: [("model_text", "ab"), ("model_text", "c")], mutated=True
    )
    diagnostics.boundary(
        "guard_output", values=lambda: [("model_text", "a"), ("model_text", "bc")], mutated=True
    )
    hashes = [v["hmac_sha256"] for e in log.events for v in e["values"]]
    assert len(set(hashes)) == 4


# 4 ----------------------------------------------------------------------------------------


def test_case4_disabled_calls_no_thunk_and_writes_nothing(tmp_path: Path) -> None:
    assert not diagnostics.active()
    diagnostics.boundary(
        "finalizer_output", values=_never, ids=_never, artifacts=_never, mutated=True
    )
    assert diagnostics.failures == 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("length", "events"), [(65_533, 0), (65_534, 0), (65_535, 1)])
def test_case4_threshold_is_json_bytes_above_65536(log: Log, length: int, events: int) -> None:
    diagnostics.boundary("http_wire", values=lambda: [("model_text", "a" * length)])
    assert len(log.lines) == events


# 5 ----------------------------------------------------------------------------------------


def test_case5_rate_limit_counts_and_reports_suppressed(log: Log, clock: FakeClock) -> None:
    diagnostics.configure(limit=1, window=0.1)

    def call() -> None:
        diagnostics.boundary("guard_output", values=lambda: [("model_text", "v")], mutated=True)

    call(), call(), call()
    assert len(log.lines) == 1
    assert "suppressed_count" not in log.events[0]
    clock.now = 0.1
    call()
    assert len(log.lines) == 2
    assert log.events[1]["suppressed_count"] == 2
    clock.now = 0.2
    call()
    assert "suppressed_count" not in log.events[2]


def test_a_clock_that_moves_backwards_starts_a_new_window(log: Log, clock: FakeClock) -> None:
    diagnostics.configure(limit=1, window=60)
    clock.now = 100.0
    diagnostics.boundary("guard_output", values=lambda: [("model_text", "v")], mutated=True)
    clock.now = 50.0
    diagnostics.boundary("guard_output", values=lambda: [("model_text", "v")], mutated=True)
    assert len(log.lines) == 2


def test_unchanged_small_values_do_not_use_up_the_rate_limit(log: Log) -> None:
    diagnostics.configure(limit=1)
    for _ in range(5):
        diagnostics.boundary("guard_output", values=lambda: [("model_text", "small")])
    diagnostics.boundary("guard_output", values=lambda: [("model_text", "v")], mutated=True)
    assert len(log.lines) == 1
    assert "suppressed_count" not in log.events[0]


# 6 ----------------------------------------------------------------------------------------


def test_case6_limit_zero_counts_without_evaluating_values(log: Log, clock: FakeClock) -> None:
    diagnostics.configure(limit=0, window=1)
    diagnostics.boundary("finalizer_output", values=_never, ids=_never, mutated=True)
    diagnostics.boundary("finalizer_output", values=_never, ids=_never, mutated=True)
    assert log.lines == []
    assert diagnostics.failures == 0
    diagnostics.configure(limit=1)
    clock.now = 1.0
    diagnostics.boundary("finalizer_output", values=list, mutated=True)
    assert log.events[0]["suppressed_count"] == 2


# 7 ----------------------------------------------------------------------------------------


def test_case7_a_raising_values_thunk_never_reaches_the_caller(log: Log) -> None:
    def boom() -> list[tuple[str, str]]:
        raise RuntimeError("boom")

    diagnostics.boundary("finalizer_output", values=boom, mutated=True)
    diagnostics.boundary("finalizer_output", values=boom)
    assert log.lines == []
    assert diagnostics.failures == 2


def test_case7_a_raising_sink_never_reaches_the_caller(clock: FakeClock) -> None:
    def sink(line: bytes) -> None:
        raise OSError("disk full")

    diagnostics.configure(sink=sink, clock=clock)
    entries = [ToolResult("c", "t", ["y" * 50_000])]
    out = finalize_batch(entries, config=BudgetConfig(batch_budget=1_000, persist=False))
    assert len(out[0].slots[0]) <= 1_000
    assert diagnostics.failures == 1


def test_diagnostics_never_change_the_finalized_result(log: Log) -> None:
    entries = [ToolResult("c1", "t", ["y" * 50_000]), ToolResult("c2", "t", ["small"])]
    config = BudgetConfig(batch_budget=1_000, persist=False)
    with_diagnostics = finalize_batch(entries, config=config)
    diagnostics.reset()
    without = finalize_batch(entries, config=config)
    assert with_diagnostics == without
    assert with_diagnostics[1] is entries[1]


# 8 ----------------------------------------------------------------------------------------


def test_case8_artifact_states_from_the_tri_state(log: Log) -> None:
    diagnostics.boundary(
        "producer_output",
        values=list,
        artifacts=lambda: [None, [], ["/var/tmp/zq9/abc.txt"]],
        mutated=True,
    )
    artifacts = log.events[0]["artifacts"]
    assert [a["state"] for a in artifacts] == ["undecided", "none", "reusable"]
    assert artifacts[2]["kinds"] == ["file"]
    assert "zq9" not in log.text
    assert "abc" not in log.text


def test_case8_kinds_come_from_the_closed_set_never_the_path(log: Log) -> None:
    diagnostics.boundary(
        "producer_output",
        values=list,
        artifacts=lambda: [["/srv/zq7/report.pdf", "/srv/zq7/x.hologram", 42, "zq7"]],
        mutated=True,
    )
    (artifact,) = log.events[0]["artifacts"]
    assert artifact == {"state": "reusable", "kinds": ["pdf", "file", "unknown", "other"]}
    assert "zq7" not in log.text
    assert "hologram" not in log.text


def _raising() -> list[str]:
    raise RuntimeError("a broken artifact list")


def _broken_refs() -> object:
    yield "/var/tmp/zq5/abc.txt"
    raise RuntimeError("a broken iterator")


@pytest.mark.parametrize(
    "bad",
    [
        "/var/tmp/zq5/abc.txt",  # a bare string, not a list of references
        b"/var/tmp/zq5/abc.txt",
        42,
        _broken_refs(),
    ],
    ids=["str", "bytes", "int", "raise"],
)
def test_bad_artifact_metadata_is_written_as_a_documented_state_with_no_kinds(
    log: Log, bad: object
) -> None:
    diagnostics.boundary(
        "producer_output",
        values=lambda: [("model_text", "x", 0), ("model_text", "y", 1)],
        artifacts=lambda: [bad, ["/var/tmp/zq5/ok.txt"]],
        mutated=True,
    )
    (event,) = log.events
    assert event["values"][1]["code_points"] == 1
    assert event["artifacts"] == [
        {"state": "undecided", "kinds": []},
        {"state": "reusable", "kinds": ["file"]},
    ]
    assert "zq5" not in log.text
    assert diagnostics.failures == 0


@pytest.mark.parametrize(
    "artifacts", [_raising, lambda: None, lambda: 42], ids=["raises", "none", "int"]
)
def test_an_unreadable_artifact_list_still_writes_the_event(log: Log, artifacts: object) -> None:
    diagnostics.boundary(
        "producer_output",
        values=lambda: [("model_text", "x")],
        artifacts=artifacts,  # type: ignore[arg-type]
        mutated=True,
    )
    (event,) = log.events
    assert event["values"][0]["code_points"] == 1
    assert "artifacts" not in event


@pytest.mark.parametrize(
    ("ref", "kind"),
    [
        ("https://example.com/zq/page", "link"),
        ("/a/b/c.HTML", "html"),
        ("C:\\x\\y.png", "image"),
        ("/a/clip.mp4", "video"),
        ("/a/song.mp3", "audio"),
        ("/a/paper.pdf", "pdf"),
        ("/a/nb.ipynb", "notebook"),
        ("/a/letter.docx", "document"),
        ("/a/out.txt", "file"),
        ("/a/no_extension", "file"),
        ("artifact-42", "other"),
    ],
)
def test_artifact_kind_of_a_reference(ref: str, kind: str) -> None:
    assert diagnostics.artifact_kind(ref) == kind


# 9 ----------------------------------------------------------------------------------------


def _tool_update(call: str, text: str) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "sess-zq6",
            "update": {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call,
                "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": text}}],
                "rawOutput": text,
            },
        },
    }


def test_case9_acp_wire_bytes_and_frame_order(log: Log) -> None:
    frame = [_tool_update("call-second-zq6", "b" * 70_000), _tool_update("call-first-zq6", "a")]
    stream = io.BytesIO()
    line = json.dumps(frame, ensure_ascii=False).encode() + b"\n"
    stream.write(line)
    diagnostics.display_wire("acp", frame, line)
    (event,) = log.events
    assert event["stage"] == "acp_wire"
    assert event["wire_utf8_bytes"] == len(stream.getvalue())
    assert event["tool_call_hmacs"] == [
        keyed_hash("call-second-zq6"),
        keyed_hash("call-first-zq6"),
    ]
    assert event["session_hmac"] == keyed_hash("sess-zq6")
    reps = [(v["representation"], v["call"]) for v in event["values"]]
    assert reps == [
        ("acp_content", 0),
        ("acp_raw_output", 0),
        ("acp_content", 1),
        ("acp_raw_output", 1),
    ]
    assert "zq6" not in log.text


def test_headless_wire_lists_tool_results_in_message_order(log: Log) -> None:
    message = {
        "type": "user",
        "session_id": "sess-zq5",
        "message": {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "tu-1-zq5", "content": "c" * 70_000},
                {"type": "tool_result", "tool_use_id": "tu-2-zq5", "content": "d"},
            ],
        },
    }
    line = json.dumps(message).encode() + b"\n"
    diagnostics.display_wire("headless", message, line)
    (event,) = log.events
    assert event["wire_utf8_bytes"] == len(line)
    assert event["tool_call_hmacs"] == [keyed_hash("tu-1-zq5"), keyed_hash("tu-2-zq5")]
    assert "zq5" not in log.text


# 10 ---------------------------------------------------------------------------------------


def test_case10_end_to_end_hashes_show_the_stage_that_changed_it(log: Log) -> None:
    canary = "CANARY-e2e-7f3a"
    output = f"{canary} begin " + "z" * 300_000 + f" {canary} end"
    prompt = f"please summarize {canary}-prompt"
    entries = [ToolResult(f"{canary}-call", f"{canary}-tool", [output], (), None)]
    config = BudgetConfig(batch_budget=200_000, persist=False)
    finalized = finalize_batch(entries, config=config)
    guarded = guard_batch(finalized, config=config)
    body = json.dumps(
        {
            "messages": [
                {"role": "user", "content": prompt},
                {"role": "tool", "content": guarded[0].slots[0]},
            ]
        }
    ).encode()
    diagnostics.tool_results_wire("http_wire", [guarded], wire_bytes=len(body))

    events = log.events
    stages = [e["stage"] for e in events]
    assert stages == [
        "finalizer_input",
        "finalizer_output",
        "guard_input",
        "guard_output",
        "http_wire",
    ]
    hashes = [e["values"][0]["hmac_sha256"] for e in events]
    assert hashes[0] != hashes[1]  # the finalizer changed it
    assert hashes[1] == hashes[2] == hashes[3] == hashes[4]  # nothing after it did
    assert [e["mutated"] for e in events] == [True, True, False, False, False]
    assert events[-1]["wire_utf8_bytes"] == len(body)
    assert len({e["tool_call_hmacs"][0] for e in events}) == 1
    assert canary not in log.text
    assert canary.lower() not in log.text.lower()
