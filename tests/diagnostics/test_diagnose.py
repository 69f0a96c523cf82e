"""`budgetware diagnose LOG`: per tool call, the stages, the sizes and where it changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetware import BudgetConfig
from budgetware.cli.main import main as cli
from budgetware.diagnostics import events as diagnostics
from budgetware.finalizer import ToolResult, finalize_batch, guard_batch

from .conftest import Log


def _run(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> str:
    assert cli(["diagnose", str(path), *args]) == 0
    return capsys.readouterr().out


def _turn(budget: int = 200_000) -> list[ToolResult]:
    entries = [
        ToolResult("call-big", "grep", ["x" * 300_000]),
        ToolResult("call-small", "ls", ["small"]),
    ]
    config = BudgetConfig(batch_budget=budget, persist=False)
    guarded = guard_batch(finalize_batch(entries, config=config), config=config)
    diagnostics.tool_results_wire("http_wire", [guarded], wire_bytes=123_456)
    return guarded


def _save(log: Log, tmp_path: Path) -> Path:
    path = tmp_path / "debug.jsonl"
    path.write_bytes(b"".join(log.lines))
    return path


def test_shows_where_the_big_result_changed(
    log: Log, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _turn()
    out = _run(capsys, _save(log, tmp_path))
    big = diagnostics.keyed_hash("call-big")[:12]
    section = out.split(f"tool call {big}")[1].split("tool call ")[0]
    assert "first changed at finalizer_output (line 2): 300,000 -> 199,995 code points" in section
    for stage in ("finalizer_input", "guard_output", "http_wire"):
        assert stage in section
    assert "123,456" in section


def test_an_untouched_result_is_reported_unchanged(
    log: Log, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _turn()
    small = diagnostics.keyed_hash("call-small")[:12]
    out = _run(capsys, _save(log, tmp_path), "--call", small)
    assert f"tool call {small}" in out
    assert "unchanged across these stages" in out
    assert "changed here" not in out


def test_a_call_re_sent_on_a_later_turn_is_a_second_pass(
    log: Log, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _turn()
    _turn()
    big = diagnostics.keyed_hash("call-big")[:12]
    out = _run(capsys, _save(log, tmp_path), "--call", big)
    assert "pass 1" in out
    assert "pass 2" in out
    assert out.count("first changed at finalizer_output") == 2


def test_reports_what_the_rate_limit_dropped(
    log: Log, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    diagnostics.configure(limit=2, window=1)
    _turn()  # five events: two written, three dropped
    diagnostics.configure(limit=50)
    _turn()
    out = _run(capsys, _save(log, tmp_path))
    assert "rate limit: 3 events were dropped (counted on line 3)" in out


def test_skips_other_lines_and_lists_events_without_ids(
    log: Log, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    diagnostics.boundary("http_wire", values=lambda: [("model_text", "z" * 70_000)])
    path = _save(log, tmp_path)
    with path.open("a") as handle:
        handle.write("not json\n" + json.dumps({"event": "other"}) + "\n")
    out = _run(capsys, path)
    assert "2 other lines skipped" in out
    assert "events without a tool call id" in out
    assert "70,000" in out


def test_a_missing_log_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["diagnose", str(tmp_path / "missing.jsonl")]) == 1
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize(
    "damage",
    [
        {"values": [{"call": 0, "code_points": "x", "hmac_sha256": "ab"}]},
        {"values": [{"call": 0, "json_utf8_bytes": 1.5}]},
        {"values": {"not": "a list"}},
        {"artifacts": "written"},
        {"suppressed_count": "many"},
        {"suppressed_count": -3},
    ],
    ids=[
        "text-count",
        "float-bytes",
        "values-object",
        "artifacts-text",
        "suppressed-text",
        "suppressed-negative",
    ],
)
def test_a_malformed_event_is_counted_and_skipped_not_a_traceback(
    log: Log, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: dict[str, object]
) -> None:
    _turn()
    path = _save(log, tmp_path)
    good = path.read_text().splitlines()
    bad = json.loads(good[0]) | damage
    path.write_text("\n".join([*good, json.dumps(bad)]) + "\n")
    out = _run(capsys, path)
    assert f"{len(good)} events" in out
    assert "1 malformed event skipped" in out
    assert "first changed at" in out  # the good events still make their report
