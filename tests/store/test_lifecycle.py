"""The artifact lifecycle: last use, pruning by age and by size, and the CLI around it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from budgetware import BudgetConfig
from budgetware.cli.artifacts import parse_age, parse_size
from budgetware.cli.main import main as cli
from budgetware.core.artifacts import text_key
from budgetware.finalizer import LocalArtifactStore, ToolResult, finalize_batch

DAY = 86400.0
NOW = time.time()


def put_aged(store: LocalArtifactStore, text: str, days_ago: float) -> Path:
    ref = Path(store.put(text))
    os.utime(ref, (NOW - days_ago * DAY, NOW - days_ago * DAY))
    return ref


def test_usage_counts_artifacts_only(store: LocalArtifactStore) -> None:
    put_aged(store, "a" * 100, 3)
    put_aged(store, "b" * 50, 1)
    store.record_decision(text_key("x"), ())
    usage = store.usage()
    assert (usage.count, usage.total_bytes) == (2, 150)
    assert usage.oldest == NOW - 3 * DAY
    assert usage.newest == NOW - 1 * DAY


def test_prune_by_age_deletes_only_what_was_unused_that_long(store: LocalArtifactStore) -> None:
    old = put_aged(store, "old", 10)
    recent = put_aged(store, "recent", 1)
    gone = store.prune(older_than=7 * DAY, now=NOW)
    assert gone.count == 1
    assert not old.exists()
    assert recent.exists()


def test_prune_by_size_deletes_least_recently_used_first(store: LocalArtifactStore) -> None:
    refs = [put_aged(store, str(i) * 1000, days_ago=10 - i) for i in range(5)]
    gone = store.prune(max_total_bytes=2_500, now=NOW)
    assert gone.count == 3
    assert [r.exists() for r in refs] == [False, False, False, True, True]


def test_a_dry_run_deletes_nothing(store: LocalArtifactStore) -> None:
    ref = put_aged(store, "keep me", 30)
    assert store.prune(older_than=DAY, now=NOW, dry_run=True).count == 1
    assert ref.exists()


def test_reuse_refreshes_last_use_so_live_artifacts_survive(tmp_path: Path) -> None:
    first = LocalArtifactStore(tmp_path)
    text = "t" * 10_000
    ref = put_aged(first, text, 30)
    # A later process finalizes the same output again: the artifact is reused, not
    # rewritten, and marked as used now.
    (result,) = finalize_batch(
        [ToolResult("c", "t", (text,))],
        config=BudgetConfig(batch_budget=1_000),
        store=LocalArtifactStore(tmp_path),
    )
    assert result.persisted_output_files == (str(ref),)
    assert os.stat(ref).st_mtime > NOW - DAY
    assert (
        LocalArtifactStore(tmp_path).prune(older_than=7 * DAY, now=os.stat(ref).st_mtime).count
        == 0
    )


def test_decisions_naming_a_pruned_artifact_go_with_it(store: LocalArtifactStore) -> None:
    ref = put_aged(store, "full output", 30)
    keep = put_aged(store, "other", 0)
    store.record_decision(text_key("bounded"), (str(ref),))
    store.record_decision(text_key("bounded too"), (str(keep),))
    store.prune(older_than=7 * DAY, now=NOW)
    assert LocalArtifactStore(store.directory).lookup_decision(text_key("bounded")) is None
    assert store.lookup_decision(text_key("bounded too")) == (str(keep),)


def test_a_store_that_does_not_exist_yet_is_empty(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "nothing")
    assert store.usage().count == 0
    assert store.prune(older_than=0, now=NOW).count == 0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("30m", 1800), ("12h", 43200), ("7d", 7 * DAY), ("2w", 14 * DAY)],
)
def test_ages_parse(text: str, seconds: float) -> None:
    assert parse_age(text) == seconds


@pytest.mark.parametrize(
    ("text", "size"),
    [("1048576", 1 << 20), ("100k", 100 << 10), ("500M", 500 << 20), ("2GiB", 2 << 30)],
)
def test_sizes_parse(text: str, size: int) -> None:
    assert parse_size(text) == size


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``budgetware artifacts args`` by its main() in this process (with this test's file
    API): the exit code, stdout and stderr."""
    capsys.readouterr()
    code = cli(["artifacts", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_reports_and_prunes_without_showing_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = LocalArtifactStore(tmp_path)
    for i in range(3):
        store.put(f"SECRET-{i}-" + "z" * 1000)
    code, usage, _ = run_cli(capsys, "--dir", str(tmp_path), "usage")
    assert code == 0
    assert "3 artifacts" in usage
    code, pruned, _ = run_cli(capsys, "--dir", str(tmp_path), "prune", "--max-size", "1k")
    assert code == 0
    assert "deleted 2 artifacts" in pruned
    assert "left: 1 artifact," in pruned
    assert "SECRET" not in usage + pruned


@pytest.mark.files_in_subprocesses
def test_cli_prune_needs_a_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "--dir", str(tmp_path), "prune")
    assert code == 2
    assert "--older-than" in err
