"""preview_tool_hint: when on, every notice that names a full output names the
read_tool_output tool too, in fixed words, and a preview still never exceeds its
allocation in any unit; off by default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetware import BudgetConfig
from budgetware.core.finalize import preview_options
from budgetware.core.fit import DEFAULT_PREVIEW, PreviewOptions
from budgetware.core.notice import TOOL_HINT, TOOL_HINT_WORDING
from budgetware.finalizer import LocalArtifactStore, ToolResult, finalize_batch, fit_text, measure

HINTED = PreviewOptions(wording=TOOL_HINT_WORDING)
REF = "/home/me/.cache/budgetware/artifacts/" + "a" * 64 + ".txt"
LOG = "".join(f"line {i}: PASSED tests/test_{i}.py\n" for i in range(5_000))


def test_off_by_default() -> None:
    assert BudgetConfig().preview_tool_hint is False
    assert preview_options(BudgetConfig()) == DEFAULT_PREVIEW
    assert "read_tool_output" not in fit_text(LOG, 2_000, refs=[REF])


def test_on_the_notice_names_the_tool_after_the_reference() -> None:
    assert preview_options(BudgetConfig(preview_tool_hint=True)).wording is TOOL_HINT_WORDING
    notice = fit_text(LOG, 2_000, refs=[REF], options=HINTED).split("\n", 1)[0]
    assert notice.endswith(f" Full output: {REF}; read_tool_output can page or search it]")
    assert TOOL_HINT == "; read_tool_output can page or search it"


def test_every_notice_form_names_it() -> None:
    compact = fit_text(LOG, 420, refs=[REF], options=HINTED)
    assert compact.startswith("[")
    assert f"{REF}{TOOL_HINT}]" in compact.split("\n", 1)[0]
    document = json.dumps({"items": [{"id": i, "name": f"item {i}"} for i in range(2_000)]})
    shortened = fit_text(document, 2_000, refs=[REF], options=HINTED)
    assert f"{REF}{TOOL_HINT}]" in shortened.split("\n", 1)[0]


def test_no_reference_no_hint() -> None:
    assert "read_tool_output" not in fit_text(LOG, 2_000, options=HINTED)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(min_size=1, max_size=3_000),
    allocation=st.integers(0, 1_500),
    unit=st.sampled_from(["chars", "utf8_bytes", "tokens"]),
    hinted=st.booleans(),
)
def test_within_the_allocation_in_every_unit_with_and_without(
    text: str, allocation: int, unit: str, hinted: bool
) -> None:
    options = HINTED if hinted else DEFAULT_PREVIEW
    preview = fit_text(text, allocation, refs=[REF], unit=unit, options=options)  # type: ignore[arg-type]
    assert measure(preview, unit) <= allocation  # type: ignore[arg-type]
    assert preview == fit_text(text, allocation, refs=[REF], unit=unit, options=options)  # type: ignore[arg-type]
    if REF in preview:
        assert (TOOL_HINT in preview) == hinted


def test_the_environment_variable_reaches_the_finalizer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUDGETWARE_PREVIEW_TOOL_HINT", "1")
    config = BudgetConfig.from_env(batch_budget=3_000)
    store = LocalArtifactStore(tmp_path / "a")
    batch = [ToolResult("c1", "shell", (LOG,))]
    [first] = finalize_batch(batch, config=config, store=store)
    [again] = finalize_batch(batch, config=config, store=store)
    notice = first.slots[0].split("\n", 1)[0]
    assert notice.endswith(f"{first.persisted_output_files[0]}{TOOL_HINT}]")
    assert again.slots == first.slots  # cache-safe: the same batch, the same bytes
    assert measure(first.slots[0], "chars") <= 3_000
