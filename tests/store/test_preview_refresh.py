"""A producer's preview (the MCP boundary's) that a conversation carries whole, turn after
turn, keeps the artifacts it names young, as every reuse does; with no I/O on the request
path and at most once an interval per artifact."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from fs_watch import watch_file_system

from budgetware import BudgetConfig
from budgetware.finalizer import LocalArtifactStore, ToolResult, finalize_batch
from budgetware.mcp.bound import bound_tool_result
from budgetware.store import sweeper

DAY = 86400.0
HOUR = 3600.0


def age(path: Path | str, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def drain() -> None:
    """Wait until the background thread has run every job submitted so far."""
    done = threading.Event()
    sweeper.submit("test", done.set)
    assert done.wait(30)


def bounded_by_a_producer(store: LocalArtifactStore) -> tuple[str, str]:
    """An MCP boundary's preview of a large result (naming its artifact), and the ref."""
    full = "mcp line of output\n" * 20_000
    bound = bound_tool_result(
        {"content": [{"type": "text", "text": full}]}, budget=3000, store=store
    )
    (ref,) = bound.refs or ()
    text = bound.result["content"][0]["text"]
    assert ref in text
    return text, ref


@pytest.mark.parametrize("same_process", [True, False])
def test_a_producers_preview_carried_whole_keeps_its_artifact_young(
    tmp_path: Path, same_process: bool
) -> None:
    producer = LocalArtifactStore(tmp_path / "a", min_age=0)
    bounded, ref = bounded_by_a_producer(producer)
    # The model request carries the preview, which fits its batch: nothing is cut, so the
    # finalizer never looked the decision up and nothing refreshed the artifact.
    store = producer if same_process else LocalArtifactStore(tmp_path / "a", min_age=0)
    config = BudgetConfig(batch_budget=100_000)
    for _ in range(3):
        age(ref, 8 * DAY)
        with watch_file_system() as events:
            (entry,) = finalize_batch(
                [ToolResult("c", "t", (bounded,))], config=config, store=store
            )
        assert entry.slots == (bounded,)
        assert events == []  # nothing on the request path: the refresh is in the background
        drain()
        assert os.stat(ref).st_mtime > time.time() - DAY
    gone = LocalArtifactStore(store.directory).prune(older_than=7 * DAY, now=time.time())
    assert gone.count == 0
    assert Path(ref).exists()


def test_a_preview_carried_whole_is_looked_at_once_an_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    producer = LocalArtifactStore(tmp_path / "a", min_age=HOUR)  # refresh every 15 minutes
    bounded, ref = bounded_by_a_producer(producer)
    store = LocalArtifactStore(tmp_path / "a", min_age=HOUR)
    jobs: list[str] = []
    real_submit = sweeper.submit
    monkeypatch.setattr(
        sweeper, "submit", lambda what, job: (jobs.append(what), real_submit(what, job))
    )
    config = BudgetConfig(batch_budget=100_000)
    age(ref, 8 * DAY)
    for turn in range(100):
        finalize_batch([ToolResult("c", "t", (bounded,))], config=config, store=store)
        if turn == 0:
            drain()  # the first turn's lookup ran: the artifact was refreshed just now
    drain()
    assert jobs.count("refresh the artifacts a preview names") == 1
    assert os.stat(ref).st_mtime > time.time() - DAY
    # A text that merely looks like a notice, names another store, or names an artifact
    # refreshed lately hands over nothing.
    for text in ("[1, 2, 3]", "[Full output: /elsewhere/" + "a" * 64 + ".txt]", f"[{ref}]"):
        finalize_batch([ToolResult("c", "t", (text,))], config=config, store=store)
    assert jobs.count("refresh the artifacts a preview names") == 1


def test_a_preview_naming_artifacts_with_no_decision_refreshes_nothing(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a", min_age=0)
    ref = store.put("an artifact nobody decided for " * 100)
    age(ref, 8 * DAY)
    text = f"[Tool output truncated: 9 chars, 1 omitted. Full output: {ref}]\nsomething"
    finalize_batch([ToolResult("c", "t", (text,))], config=BudgetConfig(), store=store)
    drain()
    # Only what the text's own decision record names (and verifies) is kept young.
    assert os.stat(ref).st_mtime < time.time() - DAY
