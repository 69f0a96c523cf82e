"""Request bodies exactly as each real SDK writes them, bounded by finalize_body.

Each driver sends one request to the local fake provider; the recorded bytes are then
finalized as an HTTP adapter would (URL, body, headers).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# tests/ is on sys.path (rootdir-relative packages), so the SDK drivers import as ``sdk``.
from testing.drivers import DRIVERS, missing_sdk, params

from budgetware.core.config import BudgetConfig
from budgetware.testing import FakeProvider, RecordedRequest
from budgetware.wire.body import finalize_body

pytestmark = [
    pytest.mark.sdk,
    # One worker drives the SDKs once for the whole module (scripts/test): the one of the
    # other litellm tests, since the module's fixture drives litellm too.
    pytest.mark.xdist_group("litellm_proxy"),
    # litellm's gemini provider imports TypedDicts with `ReadOnly` items on its first call
    # and pydantic warns about each once (see tests/testing/test_fake_provider.py).
    pytest.mark.filterwarnings(
        "ignore:Items? .* on TypedDict class '_\\w*CachedContent\\w*' (is|are) using the "
        "`ReadOnly`:UserWarning"
    ),
]

BUDGET = 2_000
RESULTS = [f"HEAD{i} " + 'é "quoted" \\ line\n' * 400 + f" TAIL{i}" for i in range(3)]
SYNC = [d for d in DRIVERS if d.send is not None]


@pytest.fixture(scope="module")
def recorded() -> dict[str, tuple[str, RecordedRequest]]:
    captured: dict[str, tuple[str, RecordedRequest]] = {}
    with FakeProvider() as fp:
        for driver in SYNC:
            assert driver.send is not None
            if missing_sdk(driver):
                continue  # its tests are skipped
            driver.send(fp.url, RESULTS)
            captured[driver.name] = (fp.url, fp.requests[-1])
    return captured


def _diff(old: Any, new: Any, out: list[tuple[Any, Any]]) -> None:
    """Collect the leaves that differ between two decoded bodies of the same shape."""
    if isinstance(old, dict):
        assert isinstance(new, dict)
        assert list(old) == list(new)
        for key in old:
            _diff(old[key], new[key], out)
    elif isinstance(old, list):
        assert isinstance(new, list)
        assert len(old) == len(new)
        for a, b in zip(old, new):
            _diff(a, b, out)
    elif old != new:
        out.append((old, new))


@pytest.mark.parametrize("driver", params(SYNC))
def test_a_real_sdk_body_is_bounded_and_only_its_results_change(
    driver: Any, recorded: dict[str, tuple[str, RecordedRequest]], tmp_path: Path
) -> None:
    base, request = recorded[driver.name]
    config = BudgetConfig(batch_budget=BUDGET, artifact_dir=tmp_path, raise_errors=True)
    out = finalize_body(base + request.path, request.body, headers=request.headers, config=config)
    changed: list[tuple[Any, Any]] = []
    _diff(json.loads(request.body), json.loads(out), changed)
    assert [old for old, _ in changed] == RESULTS
    previews = [new for _, new in changed]
    assert sum(len(p) for p in previews) <= BUDGET
    for i, preview in enumerate(previews):
        assert f"HEAD{i}" in preview
        assert preview.endswith(f"TAIL{i}")
        assert str(tmp_path) in preview


@pytest.mark.parametrize("driver", params(SYNC))
def test_a_real_sdk_body_within_budget_is_the_same_object(
    driver: Any, recorded: dict[str, tuple[str, RecordedRequest]], tmp_path: Path
) -> None:
    base, request = recorded[driver.name]
    # One byte short of the body: it is parsed and measured, and its results fit.
    budget = len(request.body) - 1
    config = BudgetConfig(batch_budget=budget, artifact_dir=tmp_path, raise_errors=True)
    out = finalize_body(base + request.path, request.body, headers=request.headers, config=config)
    assert out is request.body


@pytest.mark.parametrize("driver", params(SYNC))
def test_a_real_sdk_body_keeps_every_byte_outside_its_results(
    driver: Any, recorded: dict[str, tuple[str, RecordedRequest]], tmp_path: Path
) -> None:
    base, request = recorded[driver.name]
    config = BudgetConfig(batch_budget=BUDGET, artifact_dir=tmp_path, raise_errors=True)
    out = finalize_body(base + request.path, request.body, headers=request.headers, config=config)
    # Everything before the first result token and after the last one is byte-identical.
    body = request.body
    first = body.find(b"HEAD0")
    last = body.rfind(b"TAIL2") + len(b"TAIL2")
    assert out[: first - 1] == body[: first - 1]
    assert out.endswith(body[last:])
