"""The shared finalizer: the reference acceptance cases of spec/FINALIZER.md, and properties."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from fs_watch import watch_file_system
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetware import BudgetConfig
from budgetware.core.artifacts import text_key
from budgetware.core.fit import fit_text
from budgetware.finalizer import (
    LocalArtifactStore,
    ToolResult,
    finalize_batch,
    finalize_body,
    guard_batch,
    measure,
)


def cfg(budget: int, **kw: Any) -> BudgetConfig:
    return BudgetConfig(batch_budget=budget, **kw)


def entry(*slots: str, call_id: str = "c", files: tuple[str, ...] | None = None) -> ToolResult:
    return ToolResult(call_id, "shell", slots, persisted_output_files=files)


def artifacts(store: LocalArtifactStore) -> list[Path]:
    if not store.directory.exists():
        return []
    return sorted(p for p in store.directory.iterdir() if p.suffix == ".txt")


class CountingStore(LocalArtifactStore):
    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.puts: list[str] = []

    def put(self, text: str, *, key: str | None = None) -> str:
        self.puts.append(text)
        return super().put(text, key=key)


class FailingStore:
    """A store that fails on any call."""

    def put(self, text: str, *, key: str | None = None) -> str:
        raise OSError("disk full")

    def record_decision(self, key: str, refs: tuple[str, ...]) -> None:
        raise OSError("disk full")

    def lookup_decision(self, key: str) -> tuple[str, ...] | None:
        raise OSError("disk full")


def test_case01_batch_within_budget_is_returned_unchanged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = CountingStore(tmp_path)
    batch = [entry("a" * 10), entry("b" * 20)]
    result = finalize_batch(batch, config=cfg(100), store=store)
    assert all(a is b for a, b in zip(result, batch))
    assert store.puts == []
    assert caplog.records == []


def test_case02_only_the_large_entry_changes(store: LocalArtifactStore) -> None:
    small = entry("ok", call_id="small")
    large = entry("L" * 1000, call_id="large")
    result = finalize_batch([large, small], config=cfg(100), store=store)
    assert result[1] is small
    assert result[0] is not large
    assert len(result[0].slots[0]) == 98


def test_case03_one_write_with_the_full_text_and_a_preview_with_head_tail_reference(
    tmp_path: Path,
) -> None:
    store = CountingStore(tmp_path)
    text = "HEAD" + "x" * 8000 + "MIDDLE" + "y" * 8000 + "TAIL"
    (result,) = finalize_batch([entry(text)], config=cfg(500), store=store)
    assert store.puts == [text]
    (ref,) = result.persisted_output_files or ()
    assert Path(ref).read_text() == text
    preview = result.slots[0]
    assert len(preview) <= 500
    assert "HEAD" in preview
    assert "TAIL" in preview
    assert ref in preview
    assert "MIDDLE" not in preview


def test_case04_decided_without_artifact_never_writes_or_names_a_file(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    (result,) = finalize_batch([entry("z" * 32_000, files=())], config=cfg(1000), store=store)
    assert store.puts == []
    assert result.persisted_output_files == ()
    assert len(result.slots[0]) <= 1000
    assert "Full output" not in result.slots[0]


def test_case05_producer_truncated_results_still_share_the_batch_budget(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    batch = [entry("p" * 7048, call_id=f"c{i}", files=(f"/producer/{i}.txt",)) for i in range(2)]
    result = finalize_batch(batch, config=cfg(10_000), store=store)
    sizes = [len(r.slots[0]) for r in result]
    assert all(s <= 5000 for s in sizes)
    assert sum(sizes) <= 10_000
    assert "/producer/0.txt" in result[0].slots[0]
    assert "/producer/1.txt" in result[1].slots[0]
    assert store.puts == []


def test_case06_two_producer_artifacts_are_both_listed(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    files = ("/producer/out.txt", "/producer/err.txt")
    (result,) = finalize_batch([entry("q" * 5000, files=files)], config=cfg(1000), store=store)
    assert "/producer/out.txt" in result.slots[0]
    assert "/producer/err.txt" in result.slots[0]
    assert result.persisted_output_files == files
    assert store.puts == []


def test_case07_media_beside_an_oversized_text_is_identical_and_uncounted(
    store: LocalArtifactStore,
) -> None:
    image = {"type": "image", "data": "A" * 100_000}
    big = ToolResult("c", "screenshot", ("t" * 5000,), parts=(image,))
    (result,) = finalize_batch([big], config=cfg(1000), store=store)
    assert result.parts[0] is image
    assert len(result.slots[0]) == 1000  # the whole budget went to the text


def test_case08_output_and_error_are_two_slots_and_persisted_together(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    output, error = "o" * 3000, "e" * 3000
    (result,) = finalize_batch([entry(output, error)], config=cfg(1000), store=store)
    assert store.puts == [output + "\n\n" + error]
    assert [len(s) for s in result.slots] == [500, 500]
    ref = (result.persisted_output_files or ("",))[0]
    assert all(ref in s for s in result.slots)


def test_case09_persistence_failure_still_bounds_and_names_nothing() -> None:
    (result,) = finalize_batch([entry("f" * 10_000)], config=cfg(1000), store=FailingStore())
    assert len(result.slots[0]) <= 1000
    assert result.persisted_output_files == ()
    assert "Full output" not in result.slots[0]


def test_case10_emoji_are_never_split(store: LocalArtifactStore) -> None:
    (result,) = finalize_batch([entry("😀" * 1000)], config=cfg(201), store=store)
    text = result.slots[0]
    assert len(text) <= 201
    assert "\ufffd" not in text
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in text)
    text.encode("utf-8")


def test_case11_duplicate_ids_get_distinct_artifacts(store: LocalArtifactStore) -> None:
    batch = [entry("1" * 5000, call_id="dup"), entry("2" * 5000, call_id="dup")]
    result = finalize_batch(batch, config=cfg(1000), store=store)
    refs = [r.persisted_output_files for r in result]
    assert refs[0] != refs[1]
    assert len(artifacts(store)) == 2


def test_case12_a_reference_too_long_is_dropped_but_kept_in_the_state(tmp_path: Path) -> None:
    long_ref = "/" + "d" * 400 + "/out.txt"
    (result,) = finalize_batch([entry("x" * 5000, files=(long_ref,))], config=cfg(300))
    assert len(result.slots[0]) <= 300
    assert "/ddd" not in result.slots[0]
    assert result.slots[0].startswith("[Tool output truncated")
    assert result.persisted_output_files == (long_ref,)


def test_case13_finalizing_the_output_again_is_identical(store: LocalArtifactStore) -> None:
    batch = [entry("a" * 9000, call_id="a"), entry("b" * 300, call_id="b")]
    once = finalize_batch(batch, config=cfg(2000), store=store)
    twice = finalize_batch(once, config=cfg(2000), store=store)
    assert all(a is b for a, b in zip(once, twice))


def test_case14_guard_bounds_without_any_file_access(
    file_system_watch: list[tuple[str, Any]],
) -> None:
    batch = [entry("g" * 50_000, call_id="g", files=("/known/ref.txt",)), entry("h" * 50_000)]
    result = guard_batch(batch, config=cfg(10_000))
    assert sum(measure(s) for r in result for s in r.slots) <= 10_000
    assert "/known/ref.txt" in result[0].slots[0]
    assert "Full output" not in result[1].slots[0]
    assert result[1].persisted_output_files is None
    assert file_system_watch == []


def test_case14_guard_logs_a_warning_only_when_it_changes_something(
    caplog: pytest.LogCaptureFixture,
) -> None:
    guard_batch([entry("small")], config=cfg(10_000))
    assert caplog.records == []
    guard_batch([entry("g" * 50_000)], config=cfg(10_000))
    assert [r.levelname for r in caplog.records] == ["WARNING"]


def test_case15_guard_never_touches_user_text_beside_tool_results(tmp_path: Path) -> None:
    # Through the whole send path (finalizer, then guard): a huge user message beside the
    # tool results is neither counted (results within budget stay whole) nor changed.
    user_text = "u" * 1_000_000
    messages = [
        {"role": "user", "content": user_text},
        {"role": "tool", "tool_call_id": "a", "content": "r" * 4_000},
    ]
    body = json.dumps({"messages": messages}).encode()
    config = cfg(5_000, artifact_dir=tmp_path)
    assert finalize_body("https://x/v1/chat/completions", body, config=config) is body
    messages.append({"role": "tool", "tool_call_id": "b", "content": "s" * 9_000})
    body = json.dumps({"messages": messages}).encode()
    sent = json.loads(finalize_body("https://x/v1/chat/completions", body, config=config))
    assert sent["messages"][0]["content"] == user_text
    assert sum(len(m["content"]) for m in sent["messages"][1:]) <= 5_000


@pytest.mark.parametrize("budget", [0, -1, -200_000])
def test_case16_a_disabled_budget_changes_nothing(budget: int, tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    batch = [entry("x" * 500_000)]
    assert finalize_batch(batch, config=cfg(budget), store=store)[0] is batch[0]
    assert guard_batch(batch, config=cfg(budget))[0] is batch[0]
    assert store.puts == []


def test_case16_non_finite_budget_disables() -> None:
    assert not BudgetConfig(batch_budget=float("inf")).enabled  # type: ignore[arg-type]
    assert not BudgetConfig(batch_budget=float("nan")).enabled  # type: ignore[arg-type]


_CHILD = """
import json, sys
from budgetware import BudgetConfig
from budgetware.finalizer import LocalArtifactStore, ToolResult, finalize_batch
store = LocalArtifactStore(sys.argv[1])
batch = [ToolResult("c1", "t", ("A" * 20000 + "B" * 20000,)), ToolResult("c2", "t", ("x" * 300,))]
out = finalize_batch(batch, config=BudgetConfig(batch_budget=3000), store=store)
print(json.dumps([[list(r.slots), list(r.persisted_output_files or [])] for r in out]))
"""


@pytest.mark.files_in_subprocesses
def test_case17_two_processes_give_identical_bytes_and_the_same_reference(
    tmp_path: Path,
) -> None:
    runs = [
        subprocess.run(
            [sys.executable, "-c", _CHILD, str(tmp_path / "store")],
            capture_output=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout
        for seed in (1, 2)
    ]
    assert runs[0] == runs[1]
    decoded = json.loads(runs[0])
    assert decoded[0][1][0] in decoded[0][0][0]


def test_case18_concurrent_finalizations_write_one_artifact(store: LocalArtifactStore) -> None:
    text = "C" * 300_000
    results: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(200)

    def work() -> None:
        start.wait()
        (r,) = finalize_batch([entry(text)], config=cfg(10_000), store=store)
        with lock:
            results.append(r.slots[0])

    threads = [threading.Thread(target=work) for _ in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 200
    assert len(set(results)) == 1
    assert len(artifacts(store)) == 1
    assert [p.name for p in store.directory.iterdir()] == [f"{text_key(text)}.txt"]


def test_case19_an_unwritable_artifact_directory_still_bounds(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the directory should be")
    store = LocalArtifactStore(blocker / "artifacts")
    (result,) = finalize_batch([entry("w" * 10_000)], config=cfg(1000), store=store)
    assert len(result.slots[0]) <= 1000
    assert result.persisted_output_files == ()
    assert "Full output" not in result.slots[0]


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores permissions"
)
def test_case19_a_read_only_artifact_directory_still_bounds(tmp_path: Path) -> None:
    directory = tmp_path / "ro"
    directory.mkdir(mode=0o500)
    (result,) = finalize_batch(
        [entry("w" * 10_000)], config=cfg(1000), store=LocalArtifactStore(directory)
    )
    assert result.persisted_output_files == ()


def test_case20_a_call_id_never_influences_where_a_file_is_written(
    store: LocalArtifactStore,
) -> None:
    text = "p" * 5000
    (result,) = finalize_batch(
        [ToolResult("../../etc/passwd", "../../tool", (text,))], config=cfg(1_000), store=store
    )
    (ref,) = result.persisted_output_files or ()
    assert Path(ref).parent == store.directory
    assert Path(ref).name == f"{text_key(text)}.txt"


def test_persisting_is_skipped_when_persist_is_off(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    (result,) = finalize_batch([entry("n" * 5000)], config=cfg(100, persist=False), store=store)
    assert store.puts == []
    assert result.persisted_output_files == ()


def test_a_producer_decision_is_used_instead_of_persisting_again(tmp_path: Path) -> None:
    producer = LocalArtifactStore(tmp_path)
    full = producer.put("the producer's full output " * 1000)
    store = CountingStore(tmp_path)
    # A producer's preview (decisions are only looked up for texts that may be one).
    bounded_by_producer = fit_text("m" * 20_000, 5000, refs=(full,))
    producer.record_decision(text_key(bounded_by_producer), (full,))
    (result,) = finalize_batch([entry(bounded_by_producer)], config=cfg(1000), store=store)
    assert store.puts == []
    assert result.persisted_output_files == (full,)
    assert full in result.slots[0]


def test_a_producer_decision_without_artifact_names_nothing(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    text = fit_text("k" * 20_000, 5000)  # a producer's preview, naming nothing
    store.record_decision(text_key(text), ())
    (result,) = finalize_batch([entry(text)], config=cfg(1000), store=store)
    assert store.puts == []
    assert result.persisted_output_files == ()


def test_utf8_byte_budgets_hold(store: LocalArtifactStore) -> None:
    batch = [entry("汉" * 20_000), entry("😀" * 20_000), entry("a" * 10)]
    result = finalize_batch(batch, config=cfg(9_000, unit="utf8_bytes"), store=store)
    assert sum(measure(s, "utf8_bytes") for r in result for s in r.slots) <= 9_000
    assert result[2] is batch[2]


slot_text = st.text(alphabet=st.sampled_from("ab\n汉😀é"), max_size=2_000)
batches = st.lists(
    st.tuples(
        st.lists(slot_text, min_size=1, max_size=3),
        st.sampled_from([None, (), ("/p/1.txt",)]),
    ),
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(batches, st.integers(0, 5_000), st.sampled_from(["chars", "utf8_bytes", "tokens"]))
def test_the_batch_total_never_exceeds_the_budget(
    tmp_path_factory: pytest.TempPathFactory,
    spec: list[tuple[list[str], tuple[str, ...] | None]],
    budget: int,
    unit: str,
) -> None:
    store = LocalArtifactStore(tmp_path_factory.mktemp("prop"))
    batch = [
        ToolResult(f"c{i}", "t", tuple(s), persisted_output_files=f)
        for i, (s, f) in enumerate(spec)
    ]
    config = cfg(budget, unit=unit)
    result = finalize_batch(batch, config=config, store=store)
    if budget > 0:
        assert sum(measure(s, config.unit) for r in result for s in r.slots) <= budget
    assert finalize_batch(result, config=config, store=store) == result
    guarded = guard_batch(result, config=config)
    assert all(a is b for a, b in zip(guarded, result))


@settings(max_examples=60, deadline=None)
@given(batches, st.integers(1, 5_000))
def test_the_guard_bounds_any_batch_without_file_access(
    spec: list[tuple[list[str], tuple[str, ...] | None]], budget: int
) -> None:
    batch = [
        ToolResult(f"c{i}", "t", tuple(s), persisted_output_files=f)
        for i, (s, f) in enumerate(spec)
    ]
    with watch_file_system() as events:
        result = guard_batch(batch, config=cfg(budget))
    assert events == []
    assert sum(measure(s) for r in result for s in r.slots) <= budget
    assert [r.persisted_output_files for r in result] == [r.persisted_output_files for r in batch]


def test_no_artifact_is_written_that_no_preview_names(store: LocalArtifactStore) -> None:
    # 500 results at 100 chars each: no reference fits beside half a room of content.
    batch = [entry(f"result {i} " + "q" * 1_000, call_id=f"c{i}") for i in range(500)]
    result = finalize_batch(batch, config=cfg(50_000), store=store)
    assert artifacts(store) == []
    for new in result:
        (slot,) = new.slots
        assert len(slot) <= 100
        content = slot.split("\n", 1)[1].replace("\n[...]\n", "")  # the notice and marker aside
        assert len(content) * 2 >= 100
        assert new.persisted_output_files == ()
    assert finalize_batch(result, config=cfg(50_000), store=store) == result


def test_an_artifact_is_written_exactly_when_a_preview_names_it(store: LocalArtifactStore) -> None:
    batch = [entry("q" * 5_000, call_id=f"c{i}") for i in range(4)]
    small = finalize_batch(batch, config=cfg(4 * 150), store=store)
    assert artifacts(store) == []
    large = finalize_batch(batch, config=cfg(4 * 1_000), store=store)
    (written,) = artifacts(store)
    for new in large:
        assert str(written) in new.slots[0]
        assert new.persisted_output_files == (str(written),)
    assert all(new.persisted_output_files == () for new in small)


class DelegatingStore:
    """A store with no reference_for: the finalizer can only probe with a placeholder."""

    def __init__(self, inner: LocalArtifactStore) -> None:
        self.inner = inner
        self.puts = 0

    def put(self, text: str, *, key: str | None = None) -> str:
        self.puts += 1
        return self.inner.put(text, key=key)

    def record_decision(self, key: str, refs: tuple[str, ...]) -> None:
        self.inner.record_decision(key, refs)

    def lookup_decision(self, key: str) -> tuple[str, ...] | None:
        return self.inner.lookup_decision(key)


def test_a_store_that_cannot_predict_its_reference_is_not_written_in_tiny_rooms(
    store: LocalArtifactStore,
) -> None:
    plain = DelegatingStore(store)
    batch = [entry("q" * 5_000, call_id=f"c{i}") for i in range(4)]
    finalize_batch(batch, config=cfg(4 * 60), store=plain)
    assert plain.puts == 0
    (new, *_) = finalize_batch(batch, config=cfg(4 * 1_000), store=plain)
    assert plain.puts == 4  # one per entry; the content address makes them one file
    (written,) = artifacts(store)
    assert str(written) in new.slots[0]


class LongReferenceStore:
    """A custom store whose references are 130 characters, and which cannot predict them."""

    def __init__(self) -> None:
        self.puts = 0
        self.decisions: dict[str, tuple[str, ...]] = {}

    def put(self, text: str, *, key: str | None = None) -> str:
        self.puts += 1
        return (
            "s3://my-very-long-bucket-name/with/a/deep/prefix/for/artifacts/" + "0" * 64 + ".txt"
        )

    def record_decision(self, key: str, refs: tuple[str, ...]) -> None:
        self.decisions[key] = refs

    def lookup_decision(self, key: str) -> tuple[str, ...] | None:
        return self.decisions.get(key)


def test_a_store_without_ref_for_never_gets_an_artifact_no_preview_names() -> None:
    # Probed with an empty reference, 10 results of 5,003 chars at 2,000 made 10 writes and
    # no preview named any of them.
    store = LongReferenceStore()
    batch = [entry(f"r{i} " + "q" * 5_000, call_id=f"c{i}") for i in range(10)]
    out = finalize_batch(batch, config=cfg(10 * 200), store=store)
    assert store.puts == 0
    assert all(e.persisted_output_files == () for e in out)
    named = finalize_batch(batch, config=cfg(10 * 2_000), store=store)
    assert store.puts == 10
    for e in named:
        (ref,) = e.persisted_output_files or ("missing",)
        assert ref in e.slots[0]


def test_remembered_previews_are_bounded(
    monkeypatch: pytest.MonkeyPatch, store: LocalArtifactStore
) -> None:
    from budgetware.core import finalize as module

    monkeypatch.setattr(module, "_FITTED", {})
    monkeypatch.setattr(module, "_fitted_chars", 0)
    monkeypatch.setattr(module, "_FITTED_MAX_CHARS", 9_000)  # four 2,000-char previews
    for n in range(20):
        finalize_batch(
            [entry(f"{n} " + "q" * 5_000, call_id=f"c{n}")], config=cfg(2_000), store=store
        )
        assert 0 < module._fitted_chars == sum(len(f.text) for f in module._FITTED.values())
        assert module._fitted_chars <= 9_000
    # The most recent preview is still remembered: the same batch again hits it.
    last = entry("19 " + "q" * 5_000, call_id="c19")
    before = dict(module._FITTED)
    monkeypatch.setattr(module.SlotPreview, "fit", None)  # a hit fits nothing
    assert finalize_batch([last], config=cfg(2_000), store=store)[0].slots[0] in {
        f.text for f in before.values()
    }
