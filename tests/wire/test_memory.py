"""What stays in memory after requests: nothing of their tool outputs."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import pytest

from budgetware.core.config import BudgetConfig
from budgetware.wire.body import finalize_body
from budgetware.wire.payload import bound_payload

CHAT = "https://api.example.com/v1/chat/completions"
MIB = 1024 * 1024


def _body(n: int) -> bytes:
    # A distinct 1 MB output per request (as an agent's turns would send).
    text = f"request {n} " + "log line of a tool run\n" * (MIB // 23)
    messages = [{"role": "tool", "tool_call_id": f"c{n}", "content": text}]
    return json.dumps({"model": "m", "messages": messages}).encode()


@pytest.mark.parametrize("entry", ["finalize_body", "bound_payload"])
def test_six_1mb_requests_leave_no_output_alive(tmp_path: Path, entry: str) -> None:
    config = BudgetConfig(batch_budget=20_000, artifact_dir=tmp_path)
    bodies = [_body(n) for n in range(6)]
    # One request first: what a process builds once (the settings read from the
    # environment, pydantic's and abc's caches: 4 MB where many packages are installed)
    # is not an output kept alive.
    finalize_body(CHAT, _body(6), config=config)
    bound_payload(CHAT, json.loads(_body(7)), config=config)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(6):
            if entry == "finalize_body":
                assert len(finalize_body(CHAT, bodies[n], config=config)) < 30_000
            else:
                # Decoded here, as an SDK hook's payload is built per request.
                result = bound_payload(CHAT, json.loads(bodies[n]), config=config)
                assert len(result["messages"][0]["content"]) <= 20_000
                del result
        bodies.clear()
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # A digest cache once held every output (6 MB here); previews and caches are small.
    assert kept < 2 * MIB, kept
