"""bound_payload, the decoded-dict path: the same bounding as the byte path, without a
serialization, sharing every untouched object with the payload it was given."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from budgetware.core.config import BudgetConfig
from budgetware.core.observe import RequestReport, subscribe
from budgetware.wire.body import finalize_body
from budgetware.wire.payload import bound_payload

from ._bodies import FORMAT_IDS, FORMATS, Fmt, get

BUDGET = 4_000


def _config(tmp_path: Path, **overrides: Any) -> BudgetConfig:
    values: dict[str, Any] = {
        "batch_budget": BUDGET,
        "artifact_dir": tmp_path / "artifacts",
        "raise_errors": True,
    }
    values.update(overrides)
    return BudgetConfig(**values)


def _results(turn: int, count: int, size: int) -> list[str]:
    return [f"HEAD-{turn}-{i} " + "é" * size + f" TAIL-{turn}-{i}" for i in range(count)]


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_a_payload_is_bounded_as_its_serialized_body_would_be(fmt: Fmt, tmp_path: Path) -> None:
    decoded, _ = fmt.build([_results(0, 4, 3_000), _results(1, 2, 500), _results(2, 3, 2_000)])
    config = _config(tmp_path)
    through_bytes = json.loads(finalize_body(fmt.url, fmt.encode(decoded), config=config))
    assert bound_payload(fmt.url, decoded, config=config) == through_bytes


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_the_given_payload_is_left_as_it_was(fmt: Fmt, tmp_path: Path) -> None:
    decoded, paths = fmt.build([_results(0, 4, 3_000)])
    before = copy.deepcopy(decoded)
    out = bound_payload(fmt.url, decoded, config=_config(tmp_path))
    assert decoded == before
    assert sum(len(get(out, path)) for path in paths[0]) <= BUDGET


def test_untouched_objects_are_shared_and_only_changed_containers_copied(
    tmp_path: Path,
) -> None:
    fmt = FORMATS[0]  # openai_chat: system, user, then assistant and tool messages
    decoded, paths = fmt.build([_results(0, 3, 3_000)])
    out = bound_payload(fmt.url, decoded, config=_config(tmp_path))
    assert out is not decoded
    assert out["messages"] is not decoded["messages"]
    for index, (old, new) in enumerate(zip(decoded["messages"], out["messages"])):
        changed = any(path[:2] == ("messages", index) for path in paths[0])
        assert (new is not old) if changed else (new is old)


def test_values_json_cannot_hold_are_kept_as_they_are(tmp_path: Path) -> None:
    marker = object()
    payload = {
        "model": "m",
        "seed": 2**70,
        "temperature": math.nan,
        "limits": {"inf": math.inf},
        "extra": marker,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "a", "content": "x" * 9_000},
        ],
    }
    out = bound_payload("/v1/chat/completions", payload, config=_config(tmp_path))
    assert len(out["messages"][1]["content"]) <= BUDGET
    assert out["seed"] == 2**70
    assert math.isnan(out["temperature"])
    assert out["limits"] is payload["limits"]
    assert out["extra"] is marker


def test_a_payload_within_budget_is_returned_as_it_is(tmp_path: Path) -> None:
    fmt = FORMATS[0]
    decoded, _ = fmt.build([_results(0, 3, 500)])
    assert bound_payload(fmt.url, decoded, config=_config(tmp_path)) is decoded


def test_a_watched_payload_is_reported_with_its_sizes(tmp_path: Path) -> None:
    reports: list[RequestReport] = []
    fmt = FORMATS[0]
    decoded, _ = fmt.build([_results(0, 3, 3_000)])
    with subscribe(request=reports.append):
        out = bound_payload(fmt.url, decoded, config=_config(tmp_path))
    (report,) = reports
    assert report.entry == "payload"
    assert report.api == "openai_chat"
    assert report.bounded
    compact = json.dumps(decoded, ensure_ascii=False, separators=(",", ":")).encode()
    assert report.bytes_before == len(compact)
    assert report.bytes_after < report.bytes_before
    assert out is not decoded
