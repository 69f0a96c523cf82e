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
from budgetware.diagnostics.recorder import Recorder, record_submission, redact_url
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


BATCH = [
    ToolResult("call-1", "shell", ["out", "err"], (), ("/artifacts/abc.txt",)),
    ToolResult("call-2", "read", ["small"], (), None),
]


def test_off_by_default_writes_nothing(tmp_path: Path) -> None:
    assert recorder.recording() is False
    record_submission("https://api.example/v1/chat", [BATCH])
    assert list(tmp_path.iterdir()) == []


def test_records_exactly_the_submitted_entries(tmp_path: Path) -> None:
    recorder.set_recorder(Recorder(tmp_path / "rec"))
    body = b'{"messages":[]}'
    record_submission("https://api.example/v1/chat", [BATCH], body=body, request="r-1")
    (record,) = _records(tmp_path / "rec")
    first, second = record["batches"][0]
    assert first["slots"] == ["out", "err"]
    assert first["persisted_output_files"] == ["/artifacts/abc.txt"]
    assert second["persisted_output_files"] is None
    assert (first["call_id"], second["tool_name"]) == ("call-1", "read")
    assert record["body_sha256"] == hashlib.sha256(body).hexdigest()
    assert record["wire_utf8_bytes"] == len(body)
    assert record["request"] == "r-1"
    assert record["source"] == "entries"


def test_record_hashes_match_the_http_wire_diagnostics(tmp_path: Path, log: Log) -> None:
    recorder.set_recorder(Recorder(tmp_path / "rec"))
    entries = [ToolResult("c", "t", ["q" * 300_000])]
    finalized = finalize_batch(entries, config=BudgetConfig(persist=False))
    diagnostics.tool_results_wire("http_wire", [finalized], wire_bytes=1)
    record_submission("https://api.example/v1/chat", [finalized])
    (record,) = _records(tmp_path / "rec")
    wire, recorded = (e for e in log.events if e["stage"] in {"http_wire", "recorder"})
    assert recorded["stage"] == "recorder"
    assert record["key_id"] == wire["key_id"] == diagnostics.key_id()
    hashes = record["batches"][0][0]["hmac_sha256"]
    assert hashes == [v["hmac_sha256"] for v in wire["values"]]
    assert hashes == [v["hmac_sha256"] for v in recorded["values"]]


def test_directory_0700_and_file_0600(tmp_path: Path) -> None:
    target = Recorder(tmp_path / "rec")
    recorder.set_recorder(target)
    record_submission("https://api.example/v1/chat", [BATCH])
    assert stat.S_IMODE((tmp_path / "rec").stat().st_mode) == 0o700
    assert target.path is not None
    assert stat.S_IMODE(target.path.stat().st_mode) == 0o600


def test_one_line_per_request_appended(tmp_path: Path) -> None:
    recorder.set_recorder(Recorder(tmp_path))
    record_submission("https://a/x", [BATCH])
    record_submission("https://a/x", [BATCH[1:]])
    assert [r["sequence"] for r in _records(tmp_path)] == [1, 2]


def test_enabled_by_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(recorder.ENV_VAR, str(tmp_path / "env-rec"))
    assert recorder.recording() is True
    record_submission("https://a/x", [BATCH])
    assert len(_records(tmp_path / "env-rec")) == 1
    monkeypatch.setenv(recorder.ENV_VAR, "off")
    assert recorder.recording() is False


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
    record_submission("https://a/x", [BATCH])
    assert recorder.failures == 1


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="needs O_NOFOLLOW")
def test_a_symlinked_directory_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    recorder.set_recorder(Recorder(tmp_path / "link"))
    record_submission("https://a/x", [BATCH])
    assert recorder.failures == 1
    assert list(real.iterdir()) == []


def test_submitted_records_the_tool_results_read_back_from_the_body(tmp_path: Path) -> None:
    recorder.set_recorder(Recorder(tmp_path))
    body = json.dumps(
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "prompt"},
                {"role": "tool", "tool_call_id": "a", "content": "first"},
                {"role": "tool", "tool_call_id": "b", "content": "second"},
            ],
        }
    ).encode()
    recorder.submitted("https://api.example/v1/chat/completions?key=K", body)
    (record,) = _records(tmp_path)
    (batch,) = record["batches"]
    assert [(e["call_id"], e["slots"]) for e in batch] == [("a", ["first"]), ("b", ["second"])]
    assert record["body_sha256"] == hashlib.sha256(body).hexdigest()
    assert record["url"] == "https://api.example/v1/chat/completions"
    assert record["source"] == "wire"
    assert batch[0]["persisted_output_files"] is None  # a body carries no decision


def test_submitted_ignores_bodies_without_tool_results(tmp_path: Path) -> None:
    recorder.set_recorder(Recorder(tmp_path))
    recorder.submitted("https://api.example/v1/embeddings", b'{"input": "x"}')
    recorder.submitted("https://api.example/v1/chat/completions", b"not json")
    assert list(tmp_path.iterdir()) == []
    assert recorder.failures == 0
