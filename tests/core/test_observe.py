"""The observation seam: subscribers get batch reports; with none, the hook is None."""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetware.core import observe
from budgetware.core.config import BudgetConfig
from budgetware.core.finalize import finalize_batch, finalize_batch_written, guard_batch
from budgetware.core.models import ToolResult
from budgetware.store.local import LocalArtifactStore


def test_no_listener_means_no_hook() -> None:
    assert observe.batch_observer is None
    assert not observe.requests_watched


def test_subscribe_and_close_switch_the_hook() -> None:
    seen: list[observe.BatchReport] = []
    with observe.subscribe(batch=seen.append):
        assert observe.batch_observer is not None
        finalize_batch([ToolResult("c", "t", ("ok",))])
    assert observe.batch_observer is None
    finalize_batch([ToolResult("c", "t", ("ok",))])
    assert [r.boundary for r in seen] == ["finalizer"]


def test_batch_reports_sizes_cuts_and_the_artifacts_written(tmp_path: Path) -> None:
    config = BudgetConfig(batch_budget=1_000, artifact_dir=tmp_path)
    store = LocalArtifactStore(tmp_path)
    entries = [ToolResult("a", "read", ("x" * 5_000,)), ToolResult("b", "read", ("small",))]
    seen: list[observe.BatchReport] = []
    with observe.subscribe(batch=seen.append):
        result, written = finalize_batch_written(entries, config=config, store=store)
        guard_batch(result, config=config)
        # The same output again: its artifact is reused, not written.
        _, again = finalize_batch_written(entries, config=config, store=store)
    assert len(written) == 1
    assert Path(written[0]).is_file()
    assert again == ()
    first, guard, second = seen
    assert (first.boundary, guard.boundary, second.boundary) == ("finalizer", "guard", "finalizer")
    assert first.results == 2
    assert first.cut == 1
    assert first.size_before == 5_005
    assert first.size_after <= 1_000
    assert first.budget == 1_000
    assert first.unit == "chars"
    assert first.written == written
    assert second.written == ()
    assert guard.cut == 0


def test_an_observer_that_raises_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(report: observe.BatchReport) -> None:
        raise RuntimeError("observer bug")

    with observe.subscribe(batch=broken):
        # The test suite sets BUDGETWARE_RAISE_ERRORS=1: internal errors raise.
        with pytest.raises(RuntimeError, match="observer bug"):
            finalize_batch([ToolResult("c", "t", ("ok",))])
        monkeypatch.setenv("BUDGETWARE_RAISE_ERRORS", "0")
        (entry,) = finalize_batch([ToolResult("c", "t", ("ok",))])
    assert entry.slots == ("ok",)


def test_watching_follows_listeners_and_the_info_log_level(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("WARNING", logger="budgetware")
    assert not observe.watching()
    with observe.subscribe(request=lambda report: None):
        assert observe.watching()
    assert not observe.watching()
    caplog.set_level("INFO", logger="budgetware")
    assert observe.watching()


def test_a_printed_report_shows_sizes_never_the_tool_output(tmp_path: Path) -> None:
    config = BudgetConfig(batch_budget=1_000, artifact_dir=tmp_path)
    secret = "SECRET-TOOL-OUTPUT " * 500
    seen: list[observe.BatchReport] = []
    with observe.subscribe(batch=seen.append):
        finalize_batch(
            [ToolResult("a", "read", (secret,))], config=config, store=LocalArtifactStore(tmp_path)
        )
    (batch,) = seen
    request = observe.RequestReport("openai_chat", 20_000, 1_500, 1_000, "chars", 0.01, (batch,))
    shown = repr(request)
    assert "SECRET" not in shown
    assert str(tmp_path) not in shown  # nor where the output went
    assert len(shown) < 400
    assert "bytes_before=20000" in shown
    batch_shown = f"BatchReport(boundary='finalizer', results=1, cut=1, size_before={len(secret)}"
    assert batch_shown in shown
    assert "written=1" in shown
