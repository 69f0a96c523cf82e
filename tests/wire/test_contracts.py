"""The contracts of finalize_body, for every wire format: bounded, only values, cache-safe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from budgetware.core.artifacts import text_key
from budgetware.core.config import BudgetConfig
from budgetware.wire.body import finalize_body

from ._bodies import FORMAT_IDS, FORMATS, Fmt, blank_slots, get

BUDGET = 4_000


def _config(tmp_path: Path, **overrides: Any) -> BudgetConfig:
    values: dict[str, Any] = {
        "batch_budget": BUDGET,
        "artifact_dir": tmp_path / "artifacts",
        "raise_errors": True,
    }
    values.update(overrides)
    return BudgetConfig(**values)


def _result(turn: int, i: int, size: int) -> str:
    body = "".join(f"line {n} of turn {turn} result {i}: ok é\n" for n in range(size // 36 + 1))
    return f"HEAD-{turn}-{i}\n{body}TAIL-{turn}-{i}"


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_a_batch_within_budget_is_the_same_bytes_object(fmt: Fmt, tmp_path: Path) -> None:
    body, _ = fmt.body([[_result(t, i, 1_000) for i in range(3)] for t in range(2)])
    assert len(body) > BUDGET  # past the length shortcut: the body is parsed and measured
    assert finalize_body(fmt.url, body, config=_config(tmp_path)) is body


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_an_oversized_batch_is_bounded_with_head_tail_and_full_artifact(
    fmt: Fmt, tmp_path: Path
) -> None:
    results = [_result(0, i, 6_000) for i in range(5)]
    body, paths = fmt.body([results])
    out = finalize_body(fmt.url, body, config=_config(tmp_path))
    decoded = json.loads(out)
    slots = [get(decoded, path) for path in paths[0]]
    assert sum(len(s) for s in slots) <= BUDGET
    for i, (slot, original) in enumerate(zip(slots, results)):
        assert slot.startswith("[Tool output truncated")
        assert f"HEAD-0-{i}" in slot
        assert slot.endswith(f"TAIL-0-{i}")
        artifact = tmp_path / "artifacts" / f"{text_key(original)}.txt"
        assert str(artifact) in slot
        assert artifact.read_text(encoding="utf-8") == original


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_only_tool_text_slots_change(fmt: Fmt, tmp_path: Path) -> None:
    body, paths = fmt.body([[_result(0, i, 3_000) for i in range(4)], ["small"]])
    out = finalize_body(fmt.url, body, config=_config(tmp_path))
    assert out != body
    old, new = json.loads(body), json.loads(out)
    assert blank_slots(new, paths) == blank_slots(old, paths)
    # Key order too, not only equality of the dicts.
    assert json.dumps(blank_slots(new, paths)) == json.dumps(blank_slots(old, paths))


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_finalizing_a_finalized_body_returns_the_same_object(fmt: Fmt, tmp_path: Path) -> None:
    body, _ = fmt.body([[_result(0, i, 5_000) for i in range(3)]])
    config = _config(tmp_path)
    once = finalize_body(fmt.url, body, config=config)
    assert once is not body
    assert finalize_body(fmt.url, once, config=config) is once


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_every_batch_is_bounded_not_only_the_last(fmt: Fmt, tmp_path: Path) -> None:
    turns = [[_result(t, i, 3_000) for i in range(3)] for t in range(3)]
    body, paths = fmt.body(turns)
    decoded = json.loads(finalize_body(fmt.url, body, config=_config(tmp_path)))
    for batch in paths:
        assert sum(len(get(decoded, path)) for path in batch) <= BUDGET


def _turns(count: int) -> list[list[str]]:
    return [[_result(t, i, 1_500 + 700 * i) for i in range(1 + t % 3)] for t in range(count)]


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_shared_messages_are_identical_across_twenty_turns(fmt: Fmt, tmp_path: Path) -> None:
    config = _config(tmp_path, batch_budget=3_000)
    turns = _turns(20)
    previous: tuple[Any, list[list[Any]]] | None = None
    for k in range(1, len(turns) + 1):
        body, paths = fmt.body(turns[:k])
        decoded = json.loads(finalize_body(fmt.url, body, config=config))
        values = [[get(decoded, path) for path in batch] for batch in paths]
        if previous is not None:
            earlier_decoded, earlier_values = previous
            # Every earlier batch reads exactly as it did when it was the newest one.
            assert values[: k - 1] == earlier_values
            key = next(iter(k for k in decoded if isinstance(decoded[k], list)))
            shared = len(earlier_decoded[key])
            assert decoded[key][:shared] == earlier_decoded[key]
        previous = (decoded, values)


_CHILD = """
import json, sys
from budgetware.wire.body import finalize_body
from budgetware.core.config import BudgetConfig
url, path, artifacts = sys.argv[1:4]
config = BudgetConfig(batch_budget=3000, artifact_dir=artifacts, raise_errors=True)
body = open(path, "rb").read()
sys.stdout.buffer.write(finalize_body(url, body, config=config))
"""


def test_a_second_process_writes_the_same_bytes(tmp_path: Path) -> None:
    fmt = FORMATS[0]
    body, _ = fmt.body(_turns(4))
    source = tmp_path / "body.json"
    source.write_bytes(body)
    artifacts = tmp_path / "artifacts"
    here = finalize_body(fmt.url, body, config=_config(tmp_path, batch_budget=3_000))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETWARE_")}
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, fmt.url, str(source), str(artifacts)],
        capture_output=True,
        check=True,
        env=env,
        timeout=60,
    )
    assert here != body
    assert child.stdout == here
