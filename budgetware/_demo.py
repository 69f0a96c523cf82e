"""``budgetware demo``: finalize a sample batch of oversized tool results and show it."""

from __future__ import annotations

import argparse
import tempfile

from budgetware._config import BudgetConfig
from budgetware._finalize import finalize_batch
from budgetware._models import ToolResult
from budgetware._store import LocalArtifactStore

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Run the demo; returns the exit code."""
    parser = argparse.ArgumentParser(prog="budgetware demo", description=__doc__)
    parser.add_argument("--budget", type=int, default=2_000, help="batch budget in chars")
    args = parser.parse_args(argv)
    outputs = [
        "$ pytest\n" + "".join(f"test_{i:05d} PASSED\n" for i in range(3_000)) + "1 failed",
        "small result",
        "".join(f"line {i}: {'x' * 60}\n" for i in range(5_000)) + "EOF",
    ]
    batch = [ToolResult(f"call_{i}", "shell", (text,)) for i, text in enumerate(outputs)]
    with tempfile.TemporaryDirectory(prefix="budgetware-demo-") as directory:
        store = LocalArtifactStore(directory)
        result = finalize_batch(batch, config=BudgetConfig(batch_budget=args.budget), store=store)
        for before, after in zip(batch, result):
            print(f"{before.call_id}: {len(before.slots[0]):,} -> {len(after.slots[0]):,} chars")
            if after is not before:
                print("    " + after.slots[0][:160].replace("\n", "\n    ") + "\n    ...")
    return 0
