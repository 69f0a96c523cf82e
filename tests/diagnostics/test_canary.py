"""Canary: secrets planted everywhere cross every boundary; the debug log holds none of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetware import BudgetConfig
from budgetware.diagnostics import events as diagnostics
from budgetware.diagnostics import recorder as recorder
from budgetware.diagnostics.diagnose import read_log
from budgetware.display.projection import project_acp_frame, project_headless_message
from budgetware.finalizer import finalize_body

CANARY = "Kanarie-9f27c1"  # mixed case: checked case-insensitively too
URL = "https://api.example.test/v1/chat/completions"


def _canaries() -> dict[str, str]:
    return {
        "output": f"{CANARY}-output-汉😀",
        "prompt": f"{CANARY}-prompt",
        "call": f"{CANARY}-call",
        "tool": f"{CANARY}_tool",
        "dir": f"{CANARY}-dir",
        "session": f"{CANARY}-session",
    }


def _body(c: dict[str, str]) -> bytes:
    messages: list[dict[str, object]] = [
        {"role": "user", "content": c["prompt"]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"{c['call']}-{i}",
                    "type": "function",
                    "function": {"name": f"{c['tool']}_{i}", "arguments": "{}"},
                }
                for i in range(2)
            ],
        },
    ]
    for i in range(2):
        text = f"{c['output']} start {i} " + "o" * 150_000 + f" end {c['output']}"
        messages.append({"role": "tool", "tool_call_id": f"{c['call']}-{i}", "content": text})
    return json.dumps({"model": "m", "messages": messages}).encode()


def test_no_canary_reaches_the_debug_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    c = _canaries()
    log_file = tmp_path / "debug.jsonl"
    monkeypatch.setenv(diagnostics.ENV_VAR, str(log_file))
    diagnostics.refresh()  # the per-batch hooks read a flag decided at import
    recorder.set_recorder(recorder.Recorder(tmp_path / "records"))
    try:
        config = BudgetConfig(batch_budget=200_000, artifact_dir=tmp_path / c["dir"])
        sent = finalize_body(URL, _body(c), config=config)
        recorder.submitted(URL, sent)

        # The display side: an ACP tool_call_update and a headless tool_result, projected.
        big = f"{c['output']} " + "d" * 100_000
        frame = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": c["session"],
                "update": {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": c["call"],
                    "_meta": {"toolName": c["tool"]},
                    "rawOutput": big,
                    "content": [{"type": "content", "content": {"type": "text", "text": big}}],
                },
            },
        }
        projected = project_acp_frame(frame)
        diagnostics.display_pair("acp", frame, projected)
        diagnostics.display_wire("acp", projected, json.dumps(projected).encode() + b"\n")
        message = {
            "type": "user",
            "session_id": c["session"],
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": c["call"] + "-headless", "content": big}
                ],
            },
        }
        projected_message = project_headless_message(message)
        diagnostics.display_pair("headless", message, projected_message)
    finally:
        recorder.set_recorder(None)

    text = log_file.read_text("utf-8")
    assert diagnostics.failures == 0
    lowered = text.lower()
    for value in c.values():
        for form in (value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]):
            assert form.lower() not in lowered
    assert CANARY.lower() not in lowered
    assert CANARY.encode().hex() not in lowered
    assert str(tmp_path) not in text

    # ...and still shows which stage changed each result.
    parsed = read_log(text.splitlines())
    changed = {
        rows[0].stage.rsplit("_", 1)[0]: next(r.stage for r in rows if r.changed)
        for path in parsed.calls.values()
        for rows in path.passes
        if any(r.changed for r in rows)
    }
    assert changed == {
        "finalizer": "finalizer_output",
        "acp_projection": "acp_projection_output",
        "headless_projection": "headless_projection_output",
    }
    stages = [json.loads(line)["stage"] for line in text.splitlines()]
    assert stages.count("http_wire") == 1
    assert "recorder" not in stages
    assert stages.count("acp_wire") == 0  # projected: nothing oversized is left on the wire
