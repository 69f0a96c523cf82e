"""JSON previews: valid JSON of the same shape within the room, or the text cut."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetware.core.fit import PreviewOptions
from budgetware.finalizer import fit_text, measure

from .strategies import json_numbers, json_trees

# Measuring, fitting and parsing touch no file: one file API is enough (fs_watch.py).
TOUCHES_NO_FILES = True

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


def test_json_previews_hold_in_bytes_and_for_non_ascii() -> None:
    text = json.dumps(
        {"rows": [{"名前": "値" * 30, "n": i} for i in range(2_000)]}, ensure_ascii=False
    )
    for unit in ("chars", "utf8_bytes", "tokens"):
        preview = fit_text(text, 3_000, unit=unit)  # type: ignore[arg-type]
        assert measure(preview, unit) <= 3_000  # type: ignore[arg-type]
        assert list(_json_body(preview)) == ["rows"]


json_values: st.SearchStrategy[Any] = json_trees(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=80),
    list,
    dict,
    st.text(max_size=12),
    max_leaves=300,
    array_size=30,
    object_size=12,
)


@settings(max_examples=75, deadline=None)
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


# -- nothing but the cuts changes: numbers keep their spelling -------------------------------

NUMBERS = (
    '"inf": 1e400, "nan": NaN, "ninf": -Infinity, "pinf": Infinity, "tiny": 1e-400, '
    '"big": 123456789012345678901234567890, "neg_big": -99999999999999999999, '
    '"u64": 18446744073709551616, "e": 1E5, "e_plus": 1E+2, "f": 1.10, "price": 1.50, '
    '"zero": -0, "nzero": -0.0'
)


def _literals(json_text: str) -> list[str]:
    """Every number literal (and NaN / Infinity) of a JSON text, as spelled, in order."""
    found: list[str] = []

    def keep(literal: str) -> str:
        found.append(literal)
        return literal

    json.loads(json_text, parse_float=keep, parse_int=keep, parse_constant=keep)
    return found


def test_every_number_is_written_as_the_output_spelled_it() -> None:
    text = '{"stdout": "' + "x" * 20_000 + '", ' + NUMBERS + "}"
    preview = fit_text(text, 1_000)
    body = preview.split("\n", 1)[1].lstrip("\n")
    assert "JSON" in preview.split("\n", 1)[0]
    assert body.endswith(NUMBERS.replace(": ", ":").replace(", ", ",") + "}")
    assert _literals(body) == _literals(text)


def test_integers_beyond_64_bits_survive_in_kept_array_elements() -> None:
    big = [str(10**30 + i) for i in range(2_000)]
    text = "[" + ", ".join(big) + "]"
    value = _json_body(fit_text(text, 2_000))
    kept = [x for x in value if isinstance(x, int)]
    assert kept[0] == 10**30
    assert kept[-1] == 10**30 + 1_999
    assert all(str(x) in big for x in kept)


def test_a_document_after_a_bom_and_long_whitespace_is_still_json() -> None:
    doc = json.dumps(_api_payload(500), indent=2)
    for text in (
        "\ufeff" + doc,
        " " * 200 + doc + "\n" * 200,
        "\ufeff\n\n" + "\t" * 100 + doc + " \r\n" * 100,
    ):
        preview = fit_text(text, 2_000)
        assert len(preview) <= 2_000
        assert list(_json_body(preview)) == ["object", "data", "has_more", "next_cursor"]


def test_the_standard_library_path_writes_the_same_preview(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from budgetware.core import jsonio

    text = '{"rows": [' + ", ".join(f'{{"n": {i}.10, "s": "é{i}"}}' for i in range(3_000))
    text += "], " + NUMBERS + "}"
    with_orjson = fit_text(text, 3_000, refs=[REF])
    monkeypatch.setattr(jsonio, "_orjson", None)
    assert fit_text(text, 3_000, refs=[REF]) == with_orjson
    body = with_orjson.split("\n", 1)[1]
    assert _literals(body)[-len(_literals(NUMBERS.join("{}"))) :] == _literals(NUMBERS.join("{}"))


_number = json_numbers(int_digits=41, fraction_digits=6)
_leaf = (
    _number
    | st.sampled_from(["NaN", "Infinity", "-Infinity", "true", "false", "null"])
    | st.text(max_size=60).map(json.dumps)
)
_space = st.sampled_from(["", " ", "\n  "])


def _array(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def _object(members: list[tuple[str, str]]) -> str:
    return "{" + ", ".join(json.dumps(k) + ": " + v for k, v in members) + "}"


json_texts = json_trees(
    _leaf, _array, _object, st.text(max_size=12), max_leaves=300, array_size=30, object_size=12
)


@settings(max_examples=75, deadline=None)
@given(json_texts, st.integers(0, 4_000), st.sampled_from(["chars", "utf8_bytes"]), _space)
def test_every_number_in_a_preview_is_spelled_as_in_the_output(
    inner: str, allocation: int, unit: str, space: str
) -> None:
    text = space + "[" + inner + ", " + inner + "]" + space
    preview = fit_text(text, allocation, refs=[REF], unit=unit)  # type: ignore[arg-type]
    assert measure(preview, unit) <= allocation  # type: ignore[arg-type]
    first, _, rest = preview.partition("\n")
    if preview is text or "JSON" not in first or not first.startswith("["):
        return
    remaining = list(_literals(text))
    for literal in _literals(rest):
        assert literal in remaining, literal  # byte-identical to a literal of the output
        remaining.remove(literal)


# -- escapes cost their bytes once (issue 30, item 9) ------------------------------------


@pytest.mark.parametrize("piece", ['"\\\n', '\\"\n\t', 'C:\\dir\\"quoted"\n', "\n"])
@pytest.mark.parametrize("room", [500, 2_000, 10_000])
def test_a_document_made_mostly_of_escapes_stays_json(piece: str, room: int) -> None:
    # An 80 KB object whose strings are mostly quotes, backslashes and newlines: each
    # costs two bytes in JSON, and the strings still get their share of the room.
    count = 40_000 // (len(json.dumps(piece)) - 2)
    doc = {"cwd": "C:\\work", "stdout": piece * count, "stderr": piece * count, "exit_code": 1}
    text = json.dumps(doc)
    assert len(text) > 80_000
    preview = fit_text(text, room)
    assert len(preview) <= room
    value = _json_body(preview)
    assert list(value) == list(doc)
    assert value["exit_code"] == 1
    for key in ("stdout", "stderr"):
        head = value[key].split(" [... ")[0]
        assert doc[key].startswith(head)
        assert len(json.dumps(value[key])) >= room // 5, (key, value[key])


# -- elements that carry a failure take the salient share (issue 30, item 13) ------------

OUTPUTS = Path(__file__).parent / "outputs"


def _markers(items: list[Any]) -> int:
    """How many elements the marker elements of a previewed array say were omitted."""
    found = [
        re.fullmatch(r"\.\.\. ([\d,]+) items omitted \.\.\.", x)
        for x in items
        if isinstance(x, str)
    ]
    return sum(int(m.group(1).replace(",", "")) for m in found if m is not None)


@pytest.mark.parametrize("room", [1_500, 2_500, 4_000, 8_000])
def test_failed_results_from_the_middle_of_an_array_are_kept(room: int) -> None:
    # pytest's per-test results as JSON (81 of them, 8 failed), from a real run.
    text = (OUTPUTS / "pytest_results.json").read_text()
    results = json.loads(text)
    failed = [r["nodeid"] for r in results if r["outcome"] == "failed"]
    preview = fit_text(text, room)
    assert len(preview) <= room
    shown = _json_body(preview)
    elements = [x for x in shown if isinstance(x, dict)]
    assert len(elements) + _markers(shown) == len(results)  # the markers count the rest
    order = [
        next(i for i, r in enumerate(results) if r["nodeid"] == e["nodeid"]) for e in elements
    ]
    assert order == sorted(order)  # document order
    kept = [e["nodeid"] for e in elements if e["outcome"] == "failed"]
    # A quarter of the room goes to them: the more room, the more of them.
    assert len(kept) >= {1_500: 1, 2_500: 4, 4_000: 5, 8_000: 8}[room], kept
    if room == 8_000:
        assert kept == failed


def _jobs(failed: set[int]) -> list[dict[str, Any]]:
    return [
        {
            "id": 9_100 + i,
            "name": f"test (shard {i})",
            "status": "completed",
            "conclusion": "failure" if i in failed else "success",
            "url": f"https://ci.example.com/runs/9{i:03d}",
        }
        for i in range(60)
    ]


@pytest.mark.parametrize(("room", "least"), [(2_000, 5), (3_000, 6), (4_000, 8)])
def test_failed_jobs_in_the_middle_are_shown_between_their_markers(room: int, least: int) -> None:
    # Kept to its first and last elements, the array showed 4 of its 8 failed jobs.
    failed = {3, 11, 19, 27, 33, 41, 49, 57}
    preview = fit_text(json.dumps(_jobs(failed), indent=2), room)
    assert len(preview) <= room
    shown = _json_body(preview)
    ids = [x["id"] - 9_100 for x in shown if isinstance(x, dict)]
    assert len(set(ids) & failed) >= least, ids
    assert ids[:2] == [0, 1]  # the ends stay
    assert ids[-1] == 59
    assert ids == sorted(ids)
    assert len(ids) + _markers(shown) == 60


def test_an_error_member_marks_an_element_and_an_empty_one_does_not() -> None:
    replies = [{"id": i, "result": {"rows": [i] * 20}, "error": None} for i in range(200)]
    replies[97] = {"id": 97, "result": None, "error": {"code": -32000, "message": "db down"}}
    replies[120]["error"] = []
    preview = fit_text(json.dumps(replies), 3_000)
    shown = [x["id"] for x in _json_body(preview) if isinstance(x, dict)]
    assert 97 in shown
    assert 120 not in shown


def test_a_traceback_inside_a_string_marks_its_element() -> None:
    runs = [{"step": i, "log": f"step {i} ok\n" * 3} for i in range(300)]
    runs[150]["log"] = "starting\nTraceback (most recent call last):\n  File ...\nValueError: x\n"
    preview = fit_text(json.dumps(runs), 2_500)
    assert 150 in [x["step"] for x in _json_body(preview) if isinstance(x, dict)]
    # Turned off with salient lines, as for text.
    plain = fit_text(json.dumps(runs), 2_500, options=PreviewOptions(salient_percent=0))
    assert 150 not in [x["step"] for x in _json_body(plain) if isinstance(x, dict)]
