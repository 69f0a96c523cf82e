"""Every entry point gets its store from the configuration, and a store that cannot be
named never sends a batch whole."""

from __future__ import annotations

import json
import logging
import pwd
from pathlib import Path

import pytest

from budgetware import BudgetConfig
from budgetware.finalizer import LocalArtifactStore, finalize_body
from budgetware.store import select
from budgetware.store.select import store_for_config


def test_the_configured_directory_is_the_store(tmp_path: Path) -> None:
    store = store_for_config(BudgetConfig(artifact_dir=tmp_path / "a"))
    assert isinstance(store, LocalArtifactStore)
    assert store.directory == tmp_path / "a"


def test_persist_off_means_no_store(tmp_path: Path) -> None:
    assert store_for_config(BudgetConfig(artifact_dir=tmp_path, persist=False)) is None


def test_no_home_directory_bounds_the_batch_with_no_reference(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An unknown uid with HOME unset: Path.home() cannot name the default directory.
    for name in ("HOME", "XDG_CACHE_HOME", "BUDGETWARE_ARTIFACT_DIR"):
        monkeypatch.delenv(name, raising=False)

    def unknown_uid(uid: int) -> pwd.struct_passwd:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", unknown_uid)
    with pytest.raises(RuntimeError):
        Path.home()
    config = BudgetConfig(batch_budget=20_000)
    assert store_for_config(config) is None
    body = json.dumps(
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]},
                {"role": "tool", "tool_call_id": "c", "content": "x" * 600_000},
            ],
        }
    ).encode()
    out = json.loads(
        finalize_body("https://api.openai.com/v1/chat/completions", body, config=config)
    )
    text = out["messages"][2]["content"]
    assert len(text) <= 20_000
    assert "Full output" not in text


def test_no_artifact_directory_is_logged_once_per_process(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("HOME", "XDG_CACHE_HOME", "BUDGETWARE_ARTIFACT_DIR"):
        monkeypatch.delenv(name, raising=False)

    def unknown_uid(uid: int) -> pwd.struct_passwd:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", unknown_uid)
    monkeypatch.setattr(select, "_warned_no_store", False)
    with caplog.at_level(logging.WARNING, logger="budgetware"):
        for _ in range(5):
            assert store_for_config(BudgetConfig(batch_budget=20_000)) is None
    warned = [r for r in caplog.records if "no artifact directory" in r.getMessage()]
    assert len(warned) == 1  # before: one per request
