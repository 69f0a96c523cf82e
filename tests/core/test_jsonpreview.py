"""JSON previews: valid JSON of the same shape within the room, or the text cut."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetware import fit_text, measure
from budgetware.core.fit import PreviewOptions

REF = "/cache/budgetware/artifacts/" + "a" * 64 + ".txt"


def _json_body(preview: str) -> Any:
    notice, rest = preview.split("\n", 1)
    assert "JSON" in notice, notice
    return json.loads(rest)


def _api_payload(n: int) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [
            {"id": f"item_{i}", "score": i / 7, "tags": ["a", "b"], "text": "lorem ipsum " * 20}
            for i in range(n)
        ],
        "has_more": True,
        "next_cursor": "c_123",
    }


@pytest.mark.parametrize("allocation", [1_000, 2_000, 5_000, 20_000])
@pytest.mark.parametrize("indent", [None, 2])
def test_a_long_array_keeps_its_first_and_last_elements_and_a_marker(
    allocation: int, indent: int | None
) -> None:
    text = json.dumps(_api_payload(500), indent=indent)
    preview = fit_text(text, allocation, refs=[REF])
    assert len(preview) <= allocation
    assert REF in preview.split("\n", 1)[0]
    value = _json_body(preview)
    assert list(value) == ["object", "data", "has_more", "next_cursor"]  # keys never cut
    data = value["data"]
    assert data[0]["id"] == "item_0"
    markers = [x for x in data if isinstance(x, str)]
    assert len(markers) == 1
    assert markers[0].endswith("items omitted ...")
    omitted = int(markers[0].split()[1].replace(",", ""))
    assert omitted == 500 - (len(data) - 1)
    if allocation >= 2_000:
        assert data[-1]["id"] == "item_499"


def test_a_long_string_keeps_its_head_and_tail() -> None:
    text = json.dumps({"stdout": "START " + "x" * 50_000 + " END", "exit_code": 1})
    value = _json_body(fit_text(text, 1_000))
    assert value["exit_code"] == 1
    assert value["stdout"].startswith("START ")
    assert value["stdout"].endswith(" END")
    assert "chars omitted" in value["stdout"]


def test_deep_values_are_summarized_and_keys_kept() -> None:
    deep: Any = {"leaf": "v" * 1_000}
    for depth in range(40):
        deep = {f"level{depth}": deep, f"list{depth}": list(range(50))}
    text = json.dumps(deep)
    preview = fit_text(text, 600)
    assert len(preview) <= 600
    value = _json_body(preview)
    assert set(value) == {"level39", "list39"}


def test_invalid_json_and_plain_text_get_the_text_cut() -> None:
    for text in ('{"a": ' + "1," * 10_000, "[not json] " * 1_000, "x" * 20_000):
        preview = fit_text(text, 1_000)
        assert "JSON" not in preview.split("\n", 1)[0]
        assert len(preview) <= 1_000


def test_a_room_too_small_for_structure_falls_back_to_the_text_cut() -> None:
    text = json.dumps(_api_payload(500))
    preview = fit_text(text, 120)
    assert len(preview) <= 120
    assert preview.count("\n") >= 1


def test_json_previews_can_be_turned_off() -> None:
    text = json.dumps(_api_payload(500))
    preview = fit_text(text, 2_000, options=PreviewOptions(json=False))
    assert "JSON" not in preview.split("\n", 1)[0]


def test_json_previews_hold_in_bytes_and_for_non_ascii() -> None:
    text = json.dumps(
        {"rows": [{"名前": "値" * 30, "n": i} for i in range(2_000)]}, ensure_ascii=False
    )
    for unit in ("chars", "utf8_bytes", "tokens"):
        preview = fit_text(text, 3_000, unit=unit)  # type: ignore[arg-type]
        assert measure(preview, unit) <= 3_000  # type: ignore[arg-type]
        assert list(_json_body(preview)) == ["rows"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=80),
    lambda children: (
        st.lists(children, max_size=30)
        | st.dictionaries(st.text(max_size=12), children, max_size=12)
    ),
    max_leaves=300,
)


@settings(max_examples=150, deadline=None)
@given(json_values, st.integers(0, 4_000), st.sampled_from(["chars", "utf8_bytes", "tokens"]))
def test_json_previews_are_bounded_idempotent_and_parse(
    value: Any, allocation: int, unit: str
) -> None:
    text = json.dumps(value, ensure_ascii=False)
    once = fit_text(text, allocation, refs=[REF], unit=unit)  # type: ignore[arg-type]
    assert measure(once, unit) <= allocation  # type: ignore[arg-type]
    assert fit_text(once, allocation, refs=[REF], unit=unit) is once  # type: ignore[arg-type]
    assert fit_text(text, allocation, refs=[REF], unit=unit) == once  # type: ignore[arg-type]
    first = once.split("\n", 1)[0]
    if once is not text and "JSON" in first and first.startswith("["):
        json.loads(once.split("\n", 1)[1])
