"""The pure core on its own: bound one batch of tool results and persist the full outputs.

Run: python examples/core_finalize_batch.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from budgetware import BudgetConfig
from budgetware.finalizer import LocalArtifactStore, ToolResult, finalize_batch, guard_batch

test_log = "".join(f"tests/test_api.py::test_{i:05d} PASSED\n" for i in range(5_000))
test_log += "FAILED tests/test_cart.py::test_total - AssertionError\n1 failed, 4999 passed"
batch = [
    ToolResult("call_1", "run_tests", (test_log,)),
    ToolResult("call_2", "git_status", ("On branch main\nnothing to commit",)),
    ToolResult("call_3", "read_file", ("x = 1\n" * 20_000,)),
]

with tempfile.TemporaryDirectory() as directory:
    store = LocalArtifactStore(directory)
    config = BudgetConfig(batch_budget=4_000)
    result = finalize_batch(batch, config=config, store=store)

    for before, after in zip(batch, result):
        state = "unchanged (same object)" if after is before else "previewed"
        sizes = f"{len(before.slots[0]):,} -> {len(after.slots[0]):,} chars"
        print(f"{before.tool_name}: {sizes}, {state}")
    print(f"batch total: {sum(len(r.slots[0]) for r in result):,} (budget 4,000)")

    preview = result[0].slots[0]
    print("\nwhat the model reads for run_tests:\n" + preview[:160] + "\n...\n" + preview[-120:])

    (ref,) = result[0].persisted_output_files or ()
    assert Path(ref).read_text() == test_log  # the full output, byte for byte
    print(f"\nfull output kept in {Path(ref).name}")

    # The guard re-checks what is about to leave, with no I/O: a finalized batch passes.
    assert all(a is b for a, b in zip(guard_batch(result, config=config), result))
