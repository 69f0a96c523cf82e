"""Generated bodies per format: bounded, only slots change, idempotent, identical when fitting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budgetware.core.config import BudgetConfig
from budgetware.core.measure import measure
from budgetware.wire.body import finalize_body

from ._bodies import FORMAT_IDS, FORMATS, Fmt, blank_slots, get


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-artifacts")


def _texts(ascii_only: bool) -> st.SearchStrategy[str]:
    # Raw UTF-8 cannot carry a lone surrogate (no SDK can send one that way); escaped
    # JSON can, and does.
    excluded = () if ascii_only else ("Cs",)
    small = st.text(st.characters(blacklist_categories=excluded), max_size=40)
    large = st.builds(
        lambda head, n, tail: head + "x\n" * n + tail,
        small,
        st.integers(0, 900),
        small,
    )
    return st.one_of(small, large)


@st.composite
def _cases(draw: st.DrawFn) -> tuple[list[list[str]], BudgetConfig, bool]:
    ascii_only = draw(st.booleans())
    texts = _texts(ascii_only)
    batches = draw(st.lists(st.lists(texts, min_size=1, max_size=4), min_size=1, max_size=3))
    config = BudgetConfig(
        batch_budget=draw(st.integers(40, 2_500)),
        unit=draw(st.sampled_from(["chars", "utf8_bytes", "tokens"])),
        persist=draw(st.booleans()),
        raise_errors=True,
    )
    return batches, config, ascii_only


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=_cases())
def test_generated_bodies_keep_every_contract(
    fmt: Fmt, artifacts: Path, case: tuple[list[list[str]], BudgetConfig, bool]
) -> None:
    batches, config, ascii_only = case
    config = config.model_copy(update={"artifact_dir": artifacts})
    decoded, paths = fmt.build(batches)
    body = json.dumps(decoded, ensure_ascii=ascii_only).encode("utf-8")
    out = finalize_body(fmt.url, body, config=config)
    new = json.loads(out)
    unit, budget = config.unit, config.batch_budget
    fits = all(sum(measure(get(decoded, p), unit) for p in batch) <= budget for batch in paths)
    if fits:
        assert out is body
    for batch in paths:
        assert sum(measure(get(new, p), unit) for p in batch) <= budget
    assert blank_slots(new, paths) == blank_slots(decoded, paths)
    out.decode("utf-8")
    assert finalize_body(fmt.url, out, config=config) is out
