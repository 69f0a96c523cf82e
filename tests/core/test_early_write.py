"""The write of a large cut output beside its fit: only where a preview will name it, on
another thread, with the same result and the same failures as a write after the fit."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest

from budgetware import BudgetConfig
from budgetware.core import finalize
from budgetware.core.fit import SlotPreview
from budgetware.finalizer import LocalArtifactStore, ToolResult, finalize_batch

# The placeholder the finalizer probes with: as long as the longest reference assumed.
PLACEHOLDER = finalize._PLACEHOLDER

OUTPUTS = {
    "log": "".join(f"line {i}: ok\n" for i in range(20_000)),
    "json": json.dumps({"rows": [{"id": i, "v": i / 7, "s": "x" * 30} for i in range(3_000)]}),
    "cjk": "汉字テキスト😀 " * 8_000,
    "one long line": "q" * 100_000,
}


@pytest.mark.parametrize("unit", ["chars", "utf8_bytes", "tokens"])
@pytest.mark.parametrize("name", list(OUTPUTS))
def test_a_preview_in_a_naming_room_names_the_longest_reference_assumed(
    name: str, unit: str
) -> None:
    # What lets the finalizer write before it fits: in such a room the reference fits.
    preview = SlotPreview(OUTPUTS[name], unit)  # type: ignore[arg-type]
    for room in (finalize._NAMING_ROOM, finalize._NAMING_ROOM + 1, 3 * finalize._NAMING_ROOM):
        fitted = preview.fit(room, (PLACEHOLDER,))
        assert fitted.named
        assert PLACEHOLDER in fitted.text


@pytest.fixture
def any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outputs of any size written early (the tests' outputs are smaller than the size)."""
    monkeypatch.setattr(finalize, "_EARLY_BYTES", 0)


class ThreadRecordingStore(LocalArtifactStore):
    def __init__(self, directory: Path, *, fail: bool = False) -> None:
        super().__init__(directory)
        self.threads: list[str] = []
        self.fail = fail

    def _write(self, key: str, data: bytes, *, replace: bool) -> bool:
        self.threads.append(threading.current_thread().name)
        if self.fail:
            raise OSError("disk full")
        return super()._write(key, data, replace=replace)


@pytest.mark.usefixtures("any_size")
def test_a_large_room_writes_beside_the_fit_with_the_same_result(tmp_path: Path) -> None:
    text = OUTPUTS["json"]
    batch = [ToolResult("c", "shell", (text,))]
    config = BudgetConfig(batch_budget=20_000)
    early = ThreadRecordingStore(tmp_path / "early")
    (new,) = finalize_batch(batch, config=config, store=early)
    assert early.threads
    assert early.threads[0] != threading.current_thread().name
    (ref,) = new.persisted_output_files or ("missing",)
    assert ref in new.slots[0]
    assert Path(ref).read_text("utf-8") == text
    # The same preview, but for the directory it names, as a write after the fit gives.
    late = ThreadRecordingStore(tmp_path / "late")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(finalize, "_NAMING_ROOM", 1 << 40)
        (same,) = finalize_batch(batch, config=config, store=late)
    assert late.threads == [threading.current_thread().name]
    assert same.slots[0].replace(str(tmp_path / "late"), str(tmp_path / "early")) == new.slots[0]


@pytest.mark.usefixtures("any_size")
def test_a_failed_write_beside_the_fit_bounds_and_names_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = ThreadRecordingStore(tmp_path, fail=True)
    batch = [ToolResult("c", "shell", (OUTPUTS["log"],))]
    with caplog.at_level(logging.WARNING, logger="budgetware"):
        (new,) = finalize_batch(batch, config=BudgetConfig(batch_budget=20_000), store=store)
    assert store.threads
    assert store.threads[0] != threading.current_thread().name
    assert new.persisted_output_files == ()
    assert len(new.slots[0]) <= 20_000
    assert str(tmp_path) not in new.slots[0]
    assert "could not persist a tool output (OSError)" in caplog.text


@pytest.mark.usefixtures("any_size")
def test_small_rooms_and_long_references_are_written_after_the_fit(tmp_path: Path) -> None:
    store = ThreadRecordingStore(tmp_path)
    batch = [ToolResult(f"c{i}", "shell", (f"{i} " + OUTPUTS["log"],)) for i in range(8)]
    finalize_batch(batch, config=BudgetConfig(batch_budget=8 * 3_000), store=store)
    assert set(store.threads) == {threading.current_thread().name}

    class LongReferences(ThreadRecordingStore):
        def ref_for(self, key: str) -> str:
            return "/" + "r" * 300 + key

    long = LongReferences(tmp_path / "long")
    finalize_batch(batch[:1], config=BudgetConfig(batch_budget=20_000), store=long)
    assert long.threads == [threading.current_thread().name]


def test_a_smaller_output_is_written_after_the_fit(tmp_path: Path) -> None:
    store = ThreadRecordingStore(tmp_path)
    text = "x" * (finalize._EARLY_BYTES - 1)
    finalize_batch([ToolResult("c", "shell", (text,))], config=BudgetConfig(), store=store)
    assert store.threads == [threading.current_thread().name]
    large = ThreadRecordingStore(tmp_path / "large")
    text = "y" * finalize._EARLY_BYTES
    finalize_batch([ToolResult("c", "shell", (text,))], config=BudgetConfig(), store=large)
    assert large.threads
    assert large.threads[0] != threading.current_thread().name


@pytest.mark.usefixtures("any_size")
def test_a_store_of_the_callers_own_is_called_on_the_callers_thread() -> None:
    class OwnStore:
        def __init__(self) -> None:
            self.threads: list[str] = []

        def put(self, text: str, *, key: str | None = None) -> str:
            self.threads.append(threading.current_thread().name)
            return "/own/" + (key or "")

        def record_decision(self, key: str, refs: tuple[str, ...]) -> None:
            pass

        def lookup_decision(self, key: str) -> tuple[str, ...] | None:
            return None

    store = OwnStore()
    (new,) = finalize_batch(
        [ToolResult("c", "shell", (OUTPUTS["log"],))],
        config=BudgetConfig(batch_budget=20_000),
        store=store,
    )
    assert store.threads == [threading.current_thread().name]
    assert new.persisted_output_files is not None
    assert new.persisted_output_files[0].startswith("/own/")


@pytest.mark.usefixtures("any_size")
def test_an_output_this_process_stored_already_starts_no_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A long session re-sends its outputs every turn: the second one is known, no write.
    calls: list[str] = []
    write = finalize._write

    def recording(*args: object, **kwargs: object) -> tuple[str, bool]:
        calls.append(threading.current_thread().name)
        return write(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(finalize, "_write", recording)
    store = LocalArtifactStore(tmp_path)
    batch = [ToolResult("c", "shell", (OUTPUTS["log"],))]
    config = BudgetConfig(batch_budget=20_000)
    first = finalize_batch(batch, config=config, store=store)
    assert calls[0] != threading.current_thread().name
    assert finalize_batch(batch, config=config, store=store) == first
    assert calls[1:] == [threading.current_thread().name]
