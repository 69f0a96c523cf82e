"""The submitted-request recorder: off by default, private files, provably what was sent."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from budgetware import BudgetConfig
from budgetware.diagnostics import events as diagnostics
from budgetware.diagnostics import recorder as recorder
from budgetware.diagnostics.recorder import Recorder, redact_url
from budgetware.finalizer import ToolResult, finalize_batch

from .conftest import Log


@pytest.fixture(autouse=True)
def _no_recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(recorder.ENV_VAR, raising=False)
    recorder.set_recorder(None)
    recorder.failures = 0
    yield
    recorder.set_recorder(None)


def _records(directory: Path) -> list[dict[str, Any]]:
    (path,) = directory.iterdir()
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _body(*outputs: str) -> bytes:
    """A chat request whose tool messages carry ``outputs`` (call ids a, b, ...)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "prompt"}]
    for call, output in zip("abcdef", outputs):
        messages.append({"role": "tool", "tool_call_id": call, "content": output})
    return json.dumps({"model": "m", "messages": messages}).encode()


URL = "https://api.example/v1/chat/completions"
BODY = _body("first", "second")


def test_off_by_default_writes_nothing(tmp_path: Path) -> None:
    assert recorder.current() is None
    recorder.submitted(URL, BODY)
    assert list(tmp_path.iterdir()) == []


def test_records_the_tool_results_read_back_from_the_body(tmp_path: Path) -> None:
    recorder.set_recorder(Recorder(tmp_path))
    recorder.submitted(URL + "?key=K", BODY)
    (record,) = _records(tmp_path)
    (batch,) = record["batches"]
    assert [(e["call_id"], e["slots"]) for e in batch] == [("a", ["first"]), ("b", ["second"])]
    assert record["body_sha256"] == hashlib.sha256(BODY).hexdigest()
    assert record["wire_utf8_bytes"] == len(BODY)
    assert record["url"] == URL


def test_record_hashes_match_the_http_wire_diagnostics(tmp_path: Path, log: Log) -> None:
    recorder.set_recorder(Recorder(tmp_path / "rec"))
    entries = [ToolResult("c", "t", ["q" * 300_000])]
    finalized = finalize_batch(entries, config=BudgetConfig(persist=False))
    recorder.submitted(URL, _body(finalized[0].slots[0]))
    (record,) = _records(tmp_path / "rec")
    (wire,) = (e for e in log.events if e["stage"] == "http_wire")
    assert "recorder" not in {e["stage"] for e in log.events}
    assert record["key_id"] == wire["key_id"] == diagnostics.key_id()
    hashes = record["batches"][0][0]["hmac_sha256"]
    assert hashes == [v["hmac_sha256"] for v in wire["values"]]
    assert hashes == [diagnostics.keyed_hash(finalized[0].slots[0])]


def test_directory_0700_and_file_0600(tmp_path: Path) -> None:
    target = Recorder(tmp_path / "rec")
    recorder.set_recorder(target)
    recorder.submitted(URL, BODY)
    assert stat.S_IMODE((tmp_path / "rec").stat().st_mode) == 0o700
    assert target.path is not None
    assert stat.S_IMODE(target.path.stat().st_mode) == 0o600


def test_one_line_per_request_appended(tmp_path: Path) -> None:
    recorder.set_recorder(Recorder(tmp_path))
    recorder.submitted(URL, BODY)
    recorder.submitted(URL, _body("third"))
    assert [r["sequence"] for r in _records(tmp_path)] == [1, 2]


def test_enabled_by_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(recorder.ENV_VAR, str(tmp_path / "env-rec"))
    assert recorder.current() is not None
    recorder.submitted(URL, BODY)
    assert len(_records(tmp_path / "env-rec")) == 1
    monkeypatch.setenv(recorder.ENV_VAR, "off")
    assert recorder.current() is None


@pytest.mark.parametrize(
    ("url", "stored"),
    [
        ("https://user:pw@api.example:8443/v1/x?key=SECRET#frag", "https://api.example:8443/v1/x"),
        ("http://localhost/v1/chat", "http://localhost/v1/chat"),
    ],
)
def test_urls_are_stored_without_credentials_or_query(url: str, stored: str) -> None:
    assert redact_url(url) == stored


def test_a_failing_recorder_never_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    recorder.set_recorder(Recorder(blocker / "rec"))
    recorder.submitted(URL, BODY)
    assert recorder.failures == 1


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="needs O_NOFOLLOW")
def test_a_symlinked_directory_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    recorder.set_recorder(Recorder(tmp_path / "link"))
    recorder.submitted(URL, BODY)
    assert recorder.failures == 1
    assert list(real.iterdir()) == []


def test_submitted_ignores_bodies_without_tool_results(tmp_path: Path) -> None:
    recorder.set_recorder(Recorder(tmp_path))
    recorder.submitted("https://api.example/v1/embeddings", b'{"input": "x"}')
    recorder.submitted("https://api.example/v1/chat/completions", b"not json")
    assert list(tmp_path.iterdir()) == []
    assert recorder.failures == 0
