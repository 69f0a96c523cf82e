"""The session log: on only when asked, off the request path, bounded, private, one file per
process; its setting. (What it holds of a real agent session: tests/cli/test_report.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from budgetware.core.config import BudgetConfig, ConfigError
from budgetware.core.paths import default_sessions_path
from budgetware.diagnostics import sessionlog
from budgetware.diagnostics.sessionlog import directory_for, find_session, read_session
from budgetware.http.transport import BudgetTransport
from budgetware.testing import FakeProvider

BODY = {
    "model": "m",
    "messages": [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "secret line\n" * 5000},
    ],
}


@pytest.fixture
def log_dir(tmp_path: Path) -> Iterator[Path]:
    sessionlog.start(str(tmp_path / "sessions"))
    yield tmp_path / "sessions"
    sessionlog.stop()


def send(fake: FakeProvider, count: int = 1, **settings: object) -> None:
    config = BudgetConfig(batch_budget=5_000, **settings)  # type: ignore[arg-type]
    with httpx.Client(transport=BudgetTransport(httpx.HTTPTransport(), config=config)) as client:
        for _ in range(count):
            url = fake.url + "/v1/chat/completions"
            client.post(url + "?key=sk-in-the-query", json=BODY).raise_for_status()


def records(directory: Path) -> list[dict[str, object]]:
    (session,) = directory.iterdir()
    (log,) = session.iterdir()
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_off_unless_asked_nothing_listens() -> None:
    assert sessionlog._LOG is None
    assert sessionlog._SUBSCRIPTION is None  # no request builds a report for it
    assert directory_for(None, {}) is None
    assert directory_for("off", {"BUDGETWARE_RUN_SESSION": "x"}) is None
    assert directory_for(None, {"BUDGETWARE_RUN_SESSION": "x"}) == default_sessions_path()
    assert directory_for("on", {}) == default_sessions_path()
    assert directory_for("/var/log/agent", {}) == "/var/log/agent"


@pytest.mark.parametrize(
    ("given", "value"),
    [
        ("on", "on"),
        ("TRUE", "on"),
        ("1", "on"),
        (True, "on"),
        ("off", "off"),
        ("no", "off"),
        (False, "off"),
        ("", None),
        ("  ", None),
        ("logs/x", os.path.abspath("logs/x")),
    ],
)
def test_the_setting(given: object, value: str | None) -> None:
    assert BudgetConfig(session_log=given).session_log == value  # type: ignore[arg-type]


def test_a_bad_home_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="session_log"):
        BudgetConfig.from_env({"BUDGETWARE_SESSION_LOG": "~no-such-user-here/x"})


def test_requests_are_logged_as_sizes(log_dir: Path, fake_provider: FakeProvider) -> None:
    send(fake_provider, count=3)
    sessionlog.stop()
    lines = records(log_dir)
    text = json.dumps(lines)
    assert "secret" not in text
    assert "sk-in-the-query" not in text
    assert "127.0.0.1" not in text
    kinds = [line["type"] for line in lines if line["type"] != "usage"]
    # The batch re-sent twice is written once (its second record says it was not written
    # then: the artifact was already stored).
    assert kinds == ["process", "batch", "request", "batch", "request", "request"]
    # Each response's usage follows its request.
    assert [line["request"] for line in lines if line["type"] == "usage"] == [0, 1, 2]
    first, again = [line for line in lines if line["type"] == "batch"]
    assert first["results"][0]["written"] is True
    assert again["results"][0]["written"] is False
    assert [line["batches"] for line in lines if line["type"] == "request"] == [
        [[0, 0]],
        [[1, 1]],
        [[1, 1]],
    ]
    result = first["results"][0]
    assert result["tool"] == "cat"
    assert result["cut"]
    assert result["size"] == 60_000
    assert result["room"] == result["sent"] == 5_000


def test_a_file_stops_at_its_limit(
    log_dir: Path, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sessionlog, "MAX_FILE_BYTES", 1_200)
    send(fake_provider, count=10)
    sessionlog.stop()
    lines = records(log_dir)
    assert lines[-1]["type"] == "stopped"
    assert lines[-1]["reason"] == "size"
    requests = sum(1 for line in lines if line["type"] == "request")
    assert 0 < requests < 10
    session = read_session(str(next(log_dir.iterdir())))
    assert session.stopped == 1
    assert len(session.requests) == requests


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_child_writes_a_file_of_its_own(
    log_dir: Path, fake_provider: FakeProvider
) -> None:
    send(fake_provider)
    pid = os.fork()
    if pid == 0:  # the child: one request, then out without the parent's atexit handlers
        try:
            send(fake_provider)
            sessionlog.stop()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    sessionlog.stop()
    (session,) = log_dir.iterdir()
    assert len(list(session.iterdir())) == 2
    assert len(read_session(str(session)).requests) == 2


def test_old_sessions_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "sessions"
    for n in range(5):
        (root / f"20250101T00000{n}Z-abcdef").mkdir(parents=True)
        (root / f"20250101T00000{n}Z-abcdef" / "1-aaaa.jsonl").write_text("{}\n")
    (root / "mine").mkdir()  # not a session: kept
    monkeypatch.setattr(sessionlog, "KEEP_SESSIONS", 3)
    sessionlog.start(str(root), "20250101T000009Z-abcdef")
    with FakeProvider() as fake:
        send(fake)
    sessionlog.stop()
    assert sorted(p.name for p in root.iterdir()) == [
        "20250101T000003Z-abcdef",
        "20250101T000004Z-abcdef",
        "20250101T000009Z-abcdef",
        "mine",
    ]
    assert find_session(None, str(root)).endswith("20250101T000009Z-abcdef")


def test_the_setting_starts_it_in_a_program_that_instruments(tmp_path: Path) -> None:
    program = (
        "import budgetware, httpx, json, sys\n"
        "budgetware.instrument()\n"
        f"httpx.post(sys.argv[1] + '/v1/chat/completions', json={BODY!r}).raise_for_status()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETWARE_")}
    env.update(BUDGETWARE_SESSION_LOG=str(tmp_path / "s"), BUDGETWARE_BATCH_BUDGET="5000")
    env["BUDGETWARE_ARTIFACT_DIR"] = str(tmp_path / "a")
    with FakeProvider() as fake:
        subprocess.run([sys.executable, "-c", program, fake.url], env=env, check=True, timeout=60)
    lines = records(tmp_path / "s")
    assert [line["type"] for line in lines] == ["process", "batch", "request", "usage"]


def test_under_budgetware_run_the_set_up_stays_cheap(tmp_path: Path) -> None:
    """The log is decided at the first request report: ``instrument()`` (what `budgetware
    run`'s start-up hook calls) still loads no settings model."""
    program = (
        "import sys\n"
        "from budgetware.http.instrument import instrument\n"
        "instrument()\n"
        "print('budgetware.core.config' in sys.modules, 'budgetware.diagnostics.sessionlog'"
        " in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETWARE_")}
    env.update(BUDGETWARE_RUN_SESSION="20250101T000000Z-abcdef", XDG_CACHE_HOME=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.split() == ["False", "False"], done.stderr
