"""Where a producer's decision is looked up: for a large text on a local store the lookup (a
file's open) costs less than searching the text for preview phrases, so it is not searched;
a producer's preview is found either way, and other stores still search first."""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetware import BudgetConfig
from budgetware.core import finalize
from budgetware.core.artifacts import text_key
from budgetware.core.fit import fit_text
from budgetware.core.notice import may_be_preview
from budgetware.finalizer import LocalArtifactStore, ToolResult, finalize_batch


class _OwnStore(LocalArtifactStore):
    local = False  # as any store but budgetware's local one


@pytest.mark.parametrize(("make", "searched"), [(LocalArtifactStore, False), (_OwnStore, True)])
def test_a_large_text_on_a_local_store_is_looked_up_not_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: type, searched: bool
) -> None:
    lengths: list[int] = []

    def counted(text: str) -> bool:
        lengths.append(len(text))
        return may_be_preview(text)

    monkeypatch.setattr(finalize, "may_be_preview", counted)
    store = make(tmp_path / "store")
    producer = LocalArtifactStore(tmp_path / "store")
    full = producer.put("the producer's full output " * 10_000)
    preview = fit_text("p" * 300_000, 100_000, refs=(full,))  # a producer's large preview
    producer.record_decision(text_key(preview), (full,))
    log = "a large log line\n" * 10_000
    config = BudgetConfig(batch_budget=4_000)
    batch = [ToolResult("a", "t", (preview,)), ToolResult("b", "t", (log,))]
    first, second = finalize_batch(batch, config=config, store=store)
    assert first.persisted_output_files == (full,)  # the producer's decision, found
    assert len(second.persisted_output_files) == 1
    assert (max(lengths, default=0) > 1 << 16) is searched
