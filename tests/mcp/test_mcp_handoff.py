"""The producer's decision reaches the finalizer: no second artifact, the reference survives."""

from __future__ import annotations

from pathlib import Path

from mcp_helpers import artifact_files, artifacts_of, call_over_http

from budgetware.core.config import BudgetConfig
from budgetware.core.finalize import finalize_batch
from budgetware.core.models import ToolResult
from budgetware.integrations.mcp import budget_http_client
from budgetware.store.local import LocalArtifactStore


async def test_finalizer_names_the_producer_artifact_and_writes_no_second_one(
    sse_server, tmp_path: Path
) -> None:
    directory = tmp_path / "shared-store"
    async with budget_http_client(store=LocalArtifactStore(directory)) as http:
        result, _ = await call_over_http(sse_server.url, "big_text", http)
    bounded = result.content[0].text
    (ref,) = artifacts_of(result)
    assert artifact_files(directory) == [Path(ref)]
    # Another process sharing the directory: a fresh store object, nothing in memory.
    downstream = LocalArtifactStore(directory)
    batch = [
        ToolResult("call_1", "big_text", (bounded,)),
        ToolResult("call_2", "small_text", ("ok",)),
    ]
    config = BudgetConfig(batch_budget=20_000, artifact_dir=directory)
    out = finalize_batch(batch, config=config, store=downstream)
    assert sum(len(s) for entry in out for s in entry.slots) <= 20_000
    assert out[0].persisted_output_files == (ref,)
    assert ref in out[0].slots[0]
    assert out[1] is batch[1]
    assert artifact_files(directory) == [Path(ref)]
