"""The session log and ``budgetware report``, on a scripted agent session run as a person
runs one (``budgetware run --report -- python agent.py``; tests/cli/conftest.py)."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest
from testing.agent_session import TURNS, AgentSession, run_session, run_tests

from budgetware.cli.main import main as cli
from budgetware.cli.report import table
from budgetware.diagnostics.sessionlog import VERSION, read_session
from budgetware.testing import FakeProvider, scripted_tool_calls

pytestmark = [pytest.mark.xdist_group("agent_session"), pytest.mark.sdk]

# Words of the tool outputs: none may reach a session log or a report.
TOOL_TEXT = ("test_endpoint_", "AssertionError", "quantize", "orders", "src/shop")


def _tool_messages(body: bytes) -> list[str]:
    return [m["content"] for m in json.loads(body)["messages"] if m.get("role") == "tool"]


def test_run_report_prints_what_budgetware_did_when_the_program_exits(
    agent_session: AgentSession,
) -> None:
    err = agent_session.done.stderr
    assert agent_session.done.stdout.strip() == "done"
    # The numbers are the provider's: 5 requests, and the tool results they carried.
    sent = [_tool_messages(body) for body in agent_session.bodies]
    cut = [sum(1 for text in texts if text.startswith("[")) for texts in sent]
    assert len(sent) == 5
    assert f"budgetware session {agent_session.path.name}: 5 requests from 1 process" in err
    assert "requests bounded    4 of 5 (openai_chat)" in err
    assert f"tool results        {sum(map(len, sent))} sent, {sum(cut)} cut" in err
    assert re.search(r"their size +[\d,]+ -> [\d,]+ chars \(-9\d%\)", err), err
    after = sum(len(body) for body in agent_session.bodies)
    assert re.search(rf"request bodies +[\d,]+ -> {after:,} bytes", err), err
    assert "artifacts           4 written, 0 reused" in err
    tokens, read = (sum(counts) for counts in zip(*agent_session.cache))
    assert 0 < read < tokens
    assert f"provider's cache    {read:,} of {tokens:,} input tokens read from it" in err
    assert f"See it: budgetware inspect {agent_session.path.name}" in err
    assert not any(word in err for word in TOOL_TEXT)


def test_report_reads_the_same_session(
    agent_session: AgentSession, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(["report", str(agent_session.path)]) == 0
    out = capsys.readouterr().out
    assert out == agent_session.done.stderr
    # A session id under the configured directory, or the latest session in it.
    os.environ["BUDGETWARE_SESSION_LOG"] = str(agent_session.root)
    try:
        assert cli(["report", agent_session.path.name]) == 0
        assert capsys.readouterr().out == out
        assert cli(["report"]) == 0
        assert capsys.readouterr().out == out
    finally:
        del os.environ["BUDGETWARE_SESSION_LOG"]


def test_the_session_log_holds_sizes_never_text(agent_session: AgentSession) -> None:
    (log,) = agent_session.path.iterdir()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(agent_session.path.stat().st_mode) == 0o700
    assert stat.S_IMODE(agent_session.root.stat().st_mode) == 0o700
    text = log.read_text()
    assert not any(word in text for word in TOOL_TEXT)
    assert "127.0.0.1" not in text
    assert "fix the failing test" not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert records[0]["type"] == "process"
    assert records[0]["version"] == VERSION
    assert records[0]["session"] == agent_session.path.name
    requests = [r for r in records if r["type"] == "request"]
    assert [r["bytes_after"] for r in requests] == [len(b) for b in agent_session.bodies]
    usage = [r for r in records if r["type"] == "usage"]
    assert [(u["input_tokens"], u["cache_read_tokens"]) for u in usage] == agent_session.cache
    assert [u["request"] for u in usage] == [r["seq"] for r in requests]
    # The first request carried no tool result (its body, within budget, was not read).
    assert [r["api"] for r in requests] == [None] + ["openai_chat"] * 4
    assert {r["budget"] for r in requests} == {20_000}
    # A batch re-sent with every turn is written once and named by its id after that.
    batches = [r for r in records if r["type"] == "batch"]
    assert len(batches) < sum(len(r["batches"]) for r in requests) + 4
    first = next(b for b in batches if b["results"][0]["tool"] == "run_tests")
    tests, list_dir = first["results"]
    assert tests["cut"]
    assert tests["written"]
    assert tests["priority"] == "normal"
    assert tests["size"] == len(run_tests({}))
    assert tests["room"] == tests["sent"] == 20_000 - list_dir["size"]
    assert tests["refs"][0].startswith(str(agent_session.root.parent / "artifacts"))
    assert list_dir == {
        "tool": "list_dir",
        "size": 34,
        "room": 34,
        "sent": 34,
        "priority": "normal",
        "cut": False,
    }


def test_report_html_writes_one_self_contained_file(
    agent_session: AgentSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "report.html"
    assert cli(["report", "--html", str(page), str(agent_session.path)]) == 0
    assert f"wrote {page}" in capsys.readouterr().out
    html = page.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing from a network
    assert "<script src" not in html
    assert "<link" not in html
    assert not any(word in html for word in TOOL_TEXT)
    data = json.loads(re.search(r'id="data" type="application/json">(.*?)</script>', html)[1])
    assert data["session"] == agent_session.path.name
    assert len(data["requests"]) == 5
    assert len(data["request_batches"]) == 5
    assert {r["tool"] for b in data["batches"] for r in b["results"]} == {
        "run_tests",
        "list_dir",
        "grep",
        "read_json",
    }


def test_report_without_a_session_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.environ["BUDGETWARE_SESSION_LOG"] = str(tmp_path / "none")
    try:
        assert cli(["report"]) == 1
    finally:
        del os.environ["BUDGETWARE_SESSION_LOG"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("budgetware report: no session in ")
    assert cli(["report", "no-such-session"]) == 1
    assert "no session 'no-such-session'" in capsys.readouterr().err
    junk = tmp_path / "notes.jsonl"
    junk.write_text("just some notes\n")
    assert cli(["report", str(junk)]) == 1
    assert "is not a budgetware session log" in capsys.readouterr().err


def test_log_level_info_shows_the_info_lines_without_code(tmp_path: Path) -> None:
    with FakeProvider(scripted_tool_calls(TURNS[:1])) as fake:
        done = run_session(fake.url, tmp_path, "--log-level", "info")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert all(line.startswith("budgetware INFO: budgetware") for line in lines), lines
    (bounded,) = [line for line in lines if "bounded a request" in line]
    assert "(openai_chat)" in bounded
    assert "1 of 2 tool results cut" in bounded
    # and the provider's usage of each of the two requests
    assert sum("the provider's usage (openai_chat)" in line for line in lines) == 2


def test_report_needs_the_session_log(tmp_path: Path) -> None:
    with FakeProvider() as fake:
        done = run_session(fake.url, tmp_path, "--report", "--session-log", "off")
    assert done.returncode == 2
    assert "--report reads the session log" in done.stderr


def test_the_processes_of_one_run_share_its_session(tmp_path: Path) -> None:
    """A program that runs the agent twice as Python programs of its own: one file each,
    one session, one report."""
    parent = tmp_path / "parent.py"
    agent = Path(__file__).parent.parent / "testing" / "agent_session.py"
    run_agent = f"subprocess.run([sys.executable, {str(agent)!r}], check=True)\n"
    parent.write_text("import subprocess, sys\n" + run_agent * 2)
    with FakeProvider(scripted_tool_calls(TURNS[:1])) as fake:
        done = run_session(fake.url, tmp_path, "--report", script=str(parent))
    assert done.returncode == 0, done.stderr
    (path,) = (tmp_path / "sessions").iterdir()
    assert len(list(path.iterdir())) == 2
    session = read_session(str(path))
    assert session.processes == 2
    assert len(session.requests) == 4
    assert "4 requests from 2 processes" in done.stderr


def test_run_report_of_a_program_that_sent_nothing(tmp_path: Path) -> None:
    script = tmp_path / "quiet.py"
    script.write_text("import sys; sys.exit(3)\n")
    done = run_session("http://127.0.0.1:9", tmp_path, "--report", script=str(script))
    assert done.returncode == 3  # the program's own exit code
    assert done.stderr == "budgetware: no request went through budgetware in this run\n"


def test_history_steps_are_reported(tmp_path: Path) -> None:
    """With a history budget, old results are sent as stubs in rare steps: the log keeps
    what the history pass did, and the summary counts its steps."""
    with FakeProvider(scripted_tool_calls(TURNS)) as fake:
        done = run_session(fake.url, tmp_path, "--report", "--history-budget", "45000")
        sent = [_tool_messages(request.body) for request in fake.requests]
    assert done.returncode == 0, done.stderr
    assert "history steps       2 (each a provider cache miss); 2 results masked" in done.stderr
    (path,) = (tmp_path / "sessions").iterdir()
    session = read_session(str(path))
    history = [r.get("history") for r in session.requests]
    assert history[0] is None  # within every budget: not read
    assert [h["masked"] for h in history[1:]] == [0, 0, 1, 2]
    assert [h["new_step"] for h in history[1:]] == [False, False, True, True]
    # What the summary and the page call sent is what the provider got: stubs included.
    rows = table(session)
    assert [row[7] for row in rows[1:]] == [h["after"] for h in history[1:]]
    assert rows[-1][7] == sum(len(text) for text in sent[-1])
