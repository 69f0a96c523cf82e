"""JSON previews read from the document's compact text, opened where the preview looks.

With msgspec, a document is compacted once and each container is decoded a level at a
time (``Document.open``); long arrays of numbers are split at their ends only
(``jsonpreview._Ends``). The preview is the same, byte for byte, as the literal parse's
(``jsonio.loads_literal``, every size measured afresh: the reference below), which reads
what msgspec refuses or what orjson would write otherwise.
"""

from __future__ import annotations

import json
import math
import random
from functools import cache
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetware.core import jsonio, jsonpreview
from budgetware.core.fit import SlotPreview
from budgetware.core.jsonio import compact_literal, loads_literal
from budgetware.core.jsonpreview import read_document, respelled
from budgetware.finalizer import fit_text

from .strategies import json_numbers, json_trees

# Measuring, fitting and parsing touch no file: one file API is enough (fs_watch.py).
TOUCHES_NO_FILES = True

REF = "/cache/budgetware/artifacts/" + "a" * 64 + ".txt"


def _documents() -> dict[str, str]:
    rng = random.Random(7)
    floats = [rng.uniform(-1000, 1000) for _ in range(2000)]
    tiny = [rng.gauss(0, 1) * 10 ** rng.randint(-9, 20) for _ in range(1500)]
    names = ["naïve café 汉字 😀 " * (i % 4) for i in range(300)]
    deep: Any = {"leaf": "v" * 600}
    for depth in range(30):
        deep = {f"level{depth}": deep, f"list{depth}": [depth / 3] * 20}
    return {
        "dense floats": json.dumps({"series": [floats[i : i + 10] for i in range(0, 2000, 10)]}),
        "dense rounded, indented": json.dumps([round(x, 3) for x in floats], indent=1),
        "dense ints": json.dumps(list(range(-5000, 5000, 3))),
        "python exponents": json.dumps({"emb": tiny}),
        "python exponents in rows": json.dumps([tiny[i : i + 7] for i in range(0, 1500, 7)]),
        "nested": json.dumps(
            {
                "meta": {"name": "run", "n": 3, "ok": True, "none": None},
                "data": {
                    "rows": [
                        {"id": i, "v": i / 3, "tags": ["x"] * (i % 4), "d": {"a": [i, -i]}}
                        for i in range(500)
                    ]
                },
                "tail": list(range(50)),
            },
            indent=2,
        ),
        "unicode raw": json.dumps(
            [{"name": n, "n": i * 0.5} for i, n in enumerate(names)], ensure_ascii=False
        ),
        "unicode escaped": json.dumps([{"name": n, "n": i * 0.5} for i, n in enumerate(names)]),
        "unicode escaped, python exponents": json.dumps(
            [{"name": n, "n": tiny[i]} for i, n in enumerate(names)]
        ),
        "big ints": "[" + ", ".join(str(10**30 + i * 7) for i in range(600)) + "]",
        "64-bit edges": json.dumps(
            {"a": list(range(300)), "b": 2**64, "c": -(2**63) - 1, "d": 2**64 - 1, "e": -(2**63)}
        ),
        "minus zero": json.dumps({"z": [-0.0, 0.0, -0.0] * 300, "i": 0}),
        "minus zero int": '{"z": [' + ", ".join(["-0", "0", "-0.0", "0.0"] * 250) + "]}",
        "spelled otherwise": '{"a": ['
        + ", ".join(["1.10", "1E5", "1e5", "2.50e-3", "100", "1E+2", "0.0e0"] * 200)
        + "]}",
        "huge exponents": '{"a": ['
        + ", ".join(['{"x": 1e400, "s": "ok"}', '{"x": -1E+999, "s": "failed"}'] * 300)
        + "]}",
        "every number otherwise": "[" + ", ".join(f"{i}.50" for i in range(5000)) + "]",
        "nan and infinity": '{"a": ['
        + ", ".join(["NaN", "Infinity", "-Infinity", "1e400"] * 200)
        + "]}",
        "one odd number last": json.dumps({"x": [i / 7 for i in range(2000)]})[:-2] + ", 1.10]}",
        "one odd number first": "[1.10, " + json.dumps([i / 7 for i in range(2000)])[1:],
        "odd numbers in keys' values": json.dumps({f"k{i}": i / 9 for i in range(400)}).replace(
            "0.1111111111111111", "0.11111111111111110"
        ),
        "duplicate keys": '{"a": 1, "b": [' + ", ".join(map(str, range(1500))) + '], "a": 2.50}',
        "slash escapes": json.dumps({"url": "http://x/y" * 200, "n": [1.5e-05] * 200}).replace(
            "/", "\\/"
        ),
        "upper-case hex": '{"s": "caf\\u00E9 ' + "x" * 4000 + '", "n": [1.5, 2.50]}',
        "escaped quotes and backslashes": json.dumps(
            {"s": ['say \\"hi\\" \\\\', 'a"b\\c'] * 200, "n": [1e-05, 2.0] * 200}
        ),
        "strings with spaces": json.dumps([" a b  c " * 30 + str(i) for i in range(200)]),
        "long strings": json.dumps(
            {"stdout": "START " + "x" * 20000 + " END", "code": 1, "stderr": "err " * 2000}
        ),
        "deep": json.dumps(deep),
        "empties": json.dumps({"a": [], "b": {}, "c": "", "d": [[]] * 2000, "e": [{}] * 100}),
        "compact api": json.dumps(
            {
                "object": "list",
                "data": [
                    {"id": f"item_{i}", "score": i / 7, "tags": ["a"], "text": "lorem " * 20}
                    for i in range(300)
                ],
                "has_more": True,
            },
            separators=(",", ":"),
        ),
        "bom and whitespace": "\ufeff\n  " + json.dumps([i * 1.25 for i in range(2000)]) + "\n",
        "crlf and tabs": json.dumps({"k": [1.5, 2.5e-07] * 600}, indent="\t").replace(
            "\n", "\r\n"
        ),
        "control escapes": json.dumps(['tab\there "q" \\ back\nnl \x01 ctl' * 10] * 80),
        "heavy middle member": json.dumps(
            {"a": 1, "b": list(range(3000)), "c": {"x": "y" * 100, "f": 1e-05}}
        ),
    }


DOCUMENTS = _documents()
ROOMS = (40, 120, 400, 1_500, 6_000)


def _the_code_before(patch: pytest.MonkeyPatch) -> None:
    """The literal parse, every size measured by serializing."""
    patch.setattr(jsonpreview, "read_document", lambda text: None)
    patch.setattr(jsonpreview.Document, "size", lambda self, node: jsonpreview._size(node))


def _previews(text: str) -> list[str]:
    return [
        fit_text(text, room, refs=refs, unit=unit)  # type: ignore[arg-type]
        for room in ROOMS
        for unit in ("chars", "utf8_bytes", "tokens")
        for refs in ((), [REF])
    ]


# Written as they are: the literal parse keeps the last of a key's members only.
_DUPLICATES = {"duplicate keys"}


@pytest.mark.parametrize("name", sorted(set(DOCUMENTS) - _DUPLICATES))
@pytest.mark.parametrize("split", [False, True])
def test_a_preview_is_byte_identical_to_the_literal_parse(name: str, split: bool) -> None:
    with pytest.MonkeyPatch.context() as patch:
        if split:  # every array of numbers split at its ends, every other one in windows
            patch.setattr(jsonpreview, "_LONG", 3)
            patch.setattr(jsonpreview, "_WINDOW", 8)
        got = _previews(DOCUMENTS[name])
    with pytest.MonkeyPatch.context() as patch:
        _the_code_before(patch)
        assert _previews(DOCUMENTS[name]) == got


def test_a_key_given_twice_stays_twice_where_its_object_is_shown_whole() -> None:
    text = '{"log": "' + "x" * 5000 + '", "meta": {"a": 1, "b": 2, "a": 3}}'
    body = fit_text(text, 400).split("\n", 1)[1].lstrip("\n")
    assert body.endswith(',"meta":{"a":1,"b":2,"a":3}}')


def test_a_cut_object_keeps_the_last_value_of_a_key_where_it_first_was() -> None:
    text = '{"a": 1, "b": [' + ", ".join(map(str, range(1500))) + '], "a": 2.50}'
    body = fit_text(text, 400).split("\n", 1)[1].lstrip("\n")
    assert body.startswith('{"a":2.50,"b":[0,1,2,')
    assert json.loads(body)["a"] == 2.5


_SMALL = [
    {"a": "x" * 60, "b": [1, 2.5, 3], "c": {"d": "y" * 40, "e": 1.5e-05}},
    {"k": [{"n": i, "s": "é" * i} for i in range(6)], "m": "z" * 30, "t": True},
    [{"a": 1.25, "b": "q" * 20}, {"c": [1e-07, 2, 3], "d": {"e": "w" * 25}}, "v" * 15],
    {"outer": {"inner": {"deep": ["r" * 12, 0.5, -0.0], "x": "s" * 18}, "y": [7, 8]}},
    {"rows": [[1, 2.5], [3, 4], [], [5e-07, -0.0, 6]], "flat": [1, 2, 3.25, None, True, 7]},
]


@pytest.mark.parametrize("index", range(len(_SMALL)))
def test_every_room_up_to_the_document_s_size_gives_the_literal_parse_s_preview(
    index: int,
) -> None:
    # Sizes decide only near a value's share: every room, every byte, from the smallest.
    text = json.dumps(_SMALL[index], ensure_ascii=False)
    size = len(text.encode())
    rooms = range(1, size + 2)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonpreview, "_LONG", 3)
        patch.setattr(jsonpreview, "_WINDOW", 8)
        got = [fit_text(text, room, unit="utf8_bytes") for room in rooms]
    with pytest.MonkeyPatch.context() as patch:
        _the_code_before(patch)
        assert [fit_text(text, room, unit="utf8_bytes") for room in rooms] == got


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_the_compact_text_is_the_literal_parse_s_writing(name: str) -> None:
    text = DOCUMENTS[name].lstrip("\ufeff")
    doc = read_document(text)
    if doc is not None and name not in _DUPLICATES:
        assert doc.written(doc.value) == compact_literal(text)


def test_the_documents_left_to_the_literal_parse_or_respelled() -> None:
    docs = {name: read_document(text.lstrip("\ufeff")) for name, text in DOCUMENTS.items()}
    assert {name for name, doc in docs.items() if doc is None} == {"nan and infinity"}
    assert {name for name, doc in docs.items() if doc and doc.respell} == {
        "slash escapes",
        "unicode escaped",
        "unicode escaped, python exponents",
        "upper-case hex",
    }


@pytest.mark.parametrize(
    "name", ["dense floats", "python exponents", "compact api", "control escapes", "deep"]
)
def test_a_document_is_read_without_the_literal_parse(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def literal_parse(text: str) -> Any:
        raise AssertionError("the literal parse read the document")

    monkeypatch.setattr(jsonpreview, "loads_literal", literal_parse)
    preview = fit_text(DOCUMENTS[name], 1_500)
    assert "JSON" in preview.split("\n", 1)[0]


def test_the_whole_document_is_never_serialized_to_fit_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = json.dumps({"meta": {"n": 1}, "data": {"series": [[i / 3] * 10 for i in range(3_000)]}})
    whole: list[int] = []
    dumps = jsonio.dumps_literal

    def counting(value: Any, **kwargs: Any) -> bytes:
        out = dumps(value, **kwargs)
        if len(out) > len(text) // 4:
            whole.append(len(out))
        return out

    monkeypatch.setattr(jsonpreview, "dumps_literal", counting)
    slot = SlotPreview(text)
    for allocation in (2_000, 5_000, 800):
        assert "JSON" in slot.fit(allocation, [REF]).text.split("\n", 1)[0]
    assert whole == []


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": "\\ud800"}', "[1, 2,]", "[Infinity]"])
def test_what_msgspec_refuses_is_left_to_the_literal_parse(text: str) -> None:
    assert read_document(text) is None


@pytest.mark.parametrize(
    ("text", "other"),
    [
        ('{"a": "\\u00e9"}', True),  # orjson writes "é"
        ('["a\\/b"]', True),
        ('["\\u001F"]', True),  # orjson writes lowercase hex
        ('["\\u0008"]', True),  # orjson writes "\\b"
        ('["a\\\\/b"]', False),  # a backslash, then a slash
        ('["\\\\u00e9"]', False),
        ('["\\u001f\\n\\t\\"\\\\"]', False),
        ('["\\u000b"]', False),
    ],
)
def test_escapes_orjson_writes_otherwise_are_respelled(text: str, other: bool) -> None:
    doc = read_document(text)
    assert doc is not None
    assert respelled(bytes(doc.value)) is doc.respell is other
    assert doc.written(doc.value) == compact_literal(text)


# -- long arrays of numbers, split at their ends ------------------------------------------


def _long_arrays() -> dict[str, str]:
    rng = random.Random(11)
    floats = [json.dumps(rng.gauss(0, 1) * 10 ** rng.randint(-9, 9)) for _ in range(12_000)]
    rows = [floats[i : i + rng.randint(0, 9)] for i in range(0, 12_000, 5)]
    return {
        "flat": "[" + ", ".join(floats) + "]",
        "flat, literals": json.dumps([None, True, False, 1] * 5_000),
        "rows": "[" + ",".join("[" + ",".join(row) + "]" for row in rows) + "]",
        "rows in an object": json.dumps({"a": 1, "rows": [[i, -i] for i in range(12_000)]}),
        "one long element": "[[" + ",".join(floats) + "],[1]]",
        "rows with a scalar": "[" + ",".join("[" + ",".join(r) + "]" for r in rows) + ",7]",
        "rows nested deeper": "[[[1]]," + ",".join("[" + ",".join(r) + "]" for r in rows) + "]",
        "a string among them": "[" + ", ".join(floats) + ', "failed"]',
    }


LONG_ARRAYS = _long_arrays()


def _opened(text: str) -> Any:
    doc = jsonpreview.parse_document(text)
    assert doc is not None
    return doc.open(doc.value)


def test_only_long_arrays_of_numbers_are_split() -> None:
    split = {n for n, text in LONG_ARRAYS.items() if isinstance(_opened(text), jsonpreview._Ends)}
    assert split == {"flat", "flat, literals"}
    assert not isinstance(_opened(json.dumps(list(range(100)))), jsonpreview._Ends)  # short


@pytest.mark.parametrize("name", list(LONG_ARRAYS))
@pytest.mark.parametrize("room", [30, 300, 3_000, 40_000, 150_000, 10**6])
def test_a_long_array_gives_the_literal_parse_s_preview(name: str, room: int) -> None:
    text = LONG_ARRAYS[name]
    got = [fit_text(text, room, unit=unit) for unit in ("chars", "tokens")]  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as patch:
        _the_code_before(patch)
        assert [fit_text(text, room, unit=unit) for unit in ("chars", "tokens")] == got  # type: ignore[arg-type]


def test_the_middle_of_a_long_array_is_never_split() -> None:
    numbers = [str(i * 7) for i in range(200_000)]
    text = "[" + ", ".join(numbers) + "]"
    doc = jsonpreview.parse_document(text)
    assert doc is not None
    ends = doc.open(doc.value)
    assert isinstance(ends, jsonpreview._Ends)
    assert len(ends) == 200_000
    preview = fit_text(text, 3_000)
    jsonpreview.render_within(doc, 3_000, "chars", text, len(text), jsonpreview.Wording())
    assert len(ends.front) + len(ends.back) < 20_000  # a chunk from each end
    assert [bytes(ends[i]) for i in (0, 1, 199_998, 199_999)] == [
        n.encode() for n in numbers[:2] + numbers[-2:]
    ]
    assert '"... 199,' in preview


def test_every_element_reached_from_either_end_is_the_same() -> None:
    text = LONG_ARRAYS["flat"]
    elements = [jsonio.dumps_literal(number) for number in loads_literal(text)]
    for order in (range(len(elements)), reversed(range(len(elements)))):
        ends = _opened(text)
        assert len(ends) == len(elements)
        got = {i: bytes(ends[i]) for i in order}
        assert [got[i] for i in range(len(elements))] == elements


# -- generated documents ------------------------------------------------------------------

_finite = st.floats(allow_nan=False, allow_infinity=False)
_number = st.one_of(
    _finite.map(json.dumps),  # Python's spelling: 1e-05, 1e+16
    _finite.map(lambda x: orjson.dumps(x).decode()),  # orjson's own
    st.integers(-(2**70), 2**70).map(str),
    json_numbers(int_digits=26, fraction_digits=8),
).filter(lambda s: math.isfinite(float(s)))
_text = st.text(max_size=30)
_leaf = st.one_of(
    _number,
    st.sampled_from(["true", "false", "null"]),
    _text.map(json.dumps),
    _text.map(lambda s: json.dumps(s, ensure_ascii=False)),
    _text.map(lambda s: json.dumps(s).replace("/", "\\/")),  # escapes orjson respells
)


def _array(items: list[str], space: str) -> str:
    return "[" + ("," + space).join(items) + "]"


def _object(members: list[tuple[str, str]], space: str) -> str:
    return "{" + ("," + space).join(json.dumps(k) + ":" + space + v for k, v in members) + "}"


@cache  # flatmap asks for it every example: built once per spacing
def _documents_of(space: str) -> st.SearchStrategy[str]:
    return json_trees(
        _leaf,
        lambda items: _array(items, space),
        lambda members: _object(members, space),
        st.text(max_size=8),
        max_leaves=400,
        array_size=40,
        object_size=10,
    )


documents = st.sampled_from(["", " ", "\n  "]).flatmap(_documents_of)


@settings(max_examples=60, deadline=None)
@given(documents, st.integers(0, 3_000), st.sampled_from(["chars", "utf8_bytes"]))
def test_generated_documents_give_the_literal_parse_s_preview(
    inner: str, allocation: int, unit: str
) -> None:
    text = "[" + inner + ", " + inner + "]"
    doc = read_document(text)
    pairs: list[int] = []
    loads_literal(text)  # valid JSON
    json.loads(text, object_pairs_hook=lambda kv: pairs.append(len(kv) - len(dict(kv))))
    if doc is not None and not any(pairs):
        assert doc.written(doc.value) == compact_literal(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonpreview, "_LONG", 3)
        patch.setattr(jsonpreview, "_WINDOW", 8)
        got = fit_text(text, allocation, refs=[REF], unit=unit)  # type: ignore[arg-type]
    if any(pairs):
        return  # a key given twice: written as it is, where the literal parse keeps one
    with pytest.MonkeyPatch.context() as patch:
        _the_code_before(patch)
        assert fit_text(text, allocation, refs=[REF], unit=unit) == got  # type: ignore[arg-type]


def test_the_literal_parse_keeps_reading_what_orjson_refuses() -> None:
    text = '{"a": [NaN, 1.10, 123456789012345678901234567890], "s": "' + "x" * 3000 + '"}'
    assert read_document(text) is None
    body = fit_text(text, 500).split("\n", 1)[1].lstrip("\n")
    assert body.startswith('{"a":[NaN,1.10,123456789012345678901234567890],"s":"')
    assert loads_literal(text) is not None


@pytest.mark.parametrize("depth", [254, 256, 600, 2_000])
@pytest.mark.parametrize("escape", ["", "caf\\u00e9 "])
@pytest.mark.parametrize("room", [3_000, 20_000])
def test_a_document_nested_deeper_than_orjson_writes_gets_the_text_form(
    depth: int, escape: str, room: int
) -> None:
    text = "[" * depth + '"' + escape + "x" * 50_000 + '"' + "]" * depth
    preview = fit_text(text, room)
    assert len(preview) <= room
    assert ("of JSON" in preview.split("\n", 1)[0]) is (depth < 256)


def test_a_lone_surrogate_gets_the_text_form() -> None:
    text = '{"a": "\\ud800", "b": "' + "x" * 5_000 + '"}'
    preview = fit_text(text, 1_000)
    assert len(preview) <= 1_000
    assert "of JSON" not in preview.split("\n", 1)[0]


@pytest.mark.parametrize(("rows", "json_form"), [(1_000, True), (200_000, False)])
def test_the_literal_parse_reads_documents_up_to_4_mib(rows: int, json_form: bool) -> None:
    # NaN keeps a document from msgspec; a longer one than 4 MiB gets the text forms.
    text = json.dumps({"a": float("nan"), "rows": [[i, i / 7] for i in range(rows)]})
    assert (len(text) <= jsonpreview._LITERAL) is json_form
    assert ("of JSON" in fit_text(text, 2_000).split("\n", 1)[0]) is json_form


@pytest.mark.parametrize("window", [8, 1 << 18])
@pytest.mark.parametrize("bad", ['{"id": 1, "tags": ["a",]}', '{"id": 01}', "[1.2.3]", "tru"])
def test_bad_json_in_any_window_of_an_array_leaves_it_to_the_text_forms(
    window: int, bad: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonpreview, "_WINDOW", window)
    rows = [json.dumps({"id": i, "tags": ["a", "b"], "n": i / 3}) for i in range(20_000)]
    floats = [json.dumps(i / 3) for i in range(200_000)]
    assert jsonpreview.parse_document("[" + ", ".join(rows) + "]") is not None
    rows[12_345] = floats[123_456] = bad
    for items in (rows, floats):
        assert jsonpreview.parse_document("[" + ", ".join(items) + "]") is None
