"""Enablement through the environment and the safety of the debug log file."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from budgetware.diagnostics import events as diagnostics


def _emit(text: str = "v") -> None:
    diagnostics.boundary("guard_output", values=lambda: [("model_text", text)], mutated=True)


def test_unset_means_off() -> None:
    assert diagnostics.active() is False


@pytest.mark.parametrize("value", ["", "0", "false", " FALSE ", "Off", "no", "  "])
def test_off_values(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(diagnostics.ENV_VAR, value)
    assert diagnostics.active() is False


def test_setting_and_removing_the_variable_switches_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "debug.jsonl"
    monkeypatch.setenv(diagnostics.ENV_VAR, str(log))
    assert diagnostics.active() is True
    _emit()
    monkeypatch.delenv(diagnostics.ENV_VAR)
    assert diagnostics.active() is False
    _emit()
    assert len(log.read_bytes().splitlines()) == 1


def test_the_file_is_created_0600_and_appended(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "debug.jsonl"
    log.write_bytes(b'{"earlier":1}\n')
    log.chmod(0o600)
    monkeypatch.setenv(diagnostics.ENV_VAR, str(log))
    _emit()
    _emit()
    lines = log.read_bytes().splitlines()
    assert lines[0] == b'{"earlier":1}'
    assert [json.loads(line)["stage"] for line in lines[1:]] == ["guard_output"] * 2


def test_a_new_file_is_private(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    log = tmp_path / "new.jsonl"
    monkeypatch.setenv(diagnostics.ENV_VAR, str(log))
    _emit()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="needs O_NOFOLLOW")
def test_a_symlink_at_the_path_is_not_followed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    target = tmp_path / "victim"
    target.write_bytes(b"keep\n")
    link = tmp_path / "debug.jsonl"
    link.symlink_to(target)
    monkeypatch.setenv(diagnostics.ENV_VAR, str(link))
    _emit()  # refused, silently
    assert target.read_bytes() == b"keep\n"
    assert diagnostics.failures == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_at_the_path_neither_hangs_nor_raises(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fifo = tmp_path / "debug.jsonl"
    os.mkfifo(fifo)
    monkeypatch.setenv(diagnostics.ENV_VAR, str(fifo))
    _emit()
    assert diagnostics.failures == 1


def test_an_unwritable_path_never_raises(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(diagnostics.ENV_VAR, str(tmp_path / "missing-dir" / "debug.jsonl"))
    _emit()
    assert diagnostics.failures == 1


def test_concurrent_writers_produce_whole_lines(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "debug.jsonl"
    monkeypatch.setenv(diagnostics.ENV_VAR, str(log))
    diagnostics.configure(limit=10_000)

    def work() -> None:
        for _ in range(25):
            _emit("w" * 70_000)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = log.read_bytes().splitlines()
    assert len(lines) == 200
    assert all(json.loads(line)["values"][0]["code_points"] == 70_000 for line in lines)


def test_the_key_is_per_process_random() -> None:
    first = diagnostics.keyed_hash("same")
    diagnostics.reset()
    assert diagnostics.keyed_hash("same") != first


def test_the_hot_path_flag_follows_refresh_and_active(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert diagnostics.enabled is False
    monkeypatch.setenv(diagnostics.ENV_VAR, str(tmp_path / "debug.jsonl"))
    assert diagnostics.enabled is False  # per-batch hooks pay one attribute read, no lookup
    assert diagnostics.refresh() is True
    assert diagnostics.enabled is True
    monkeypatch.delenv(diagnostics.ENV_VAR)
    assert diagnostics.active() is False  # a changed variable is noticed by active()
    assert diagnostics.enabled is False


def test_import_decides_from_the_environment(tmp_path: Path) -> None:
    code = "from budgetware.diagnostics import events as d; print(d.enabled)"
    env = {**os.environ, diagnostics.ENV_VAR: str(tmp_path / "debug.jsonl")}
    on = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    env[diagnostics.ENV_VAR] = "off"
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert (on.stdout.strip(), off.stdout.strip()) == ("True", "False")
