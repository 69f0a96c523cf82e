"""JSON previews of number-dense documents: orjson's parse, every number still as spelled.

The preview of a document is the same, byte for byte, whichever way it was read: by orjson
when one comparison proves every number spelled as orjson writes it
(``jsonio.loads_spelled``), or by the literal parse, with every size measured afresh (the
reference below, the code before).
"""

from __future__ import annotations

import json
import math
import random
import re
from functools import cache
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetware.core import jsonio, jsonpreview
from budgetware.core.fit import SlotPreview
from budgetware.core.jsonio import compact_literal, loads_literal, loads_spelled
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
    """The literal parse, every size measured by serializing (the code before)."""
    patch.setattr(jsonpreview, "loads_spelled", lambda text: None)
    patch.setattr(jsonpreview.Document, "size", lambda self, node: jsonpreview._size(node))
    patch.setattr(
        jsonpreview._Fitter,
        "value_sizes",
        lambda self, obj, values, key_sizes: [jsonpreview._size(v) for v in values],
    )


def _previews(text: str) -> list[str]:
    return [
        fit_text(text, room, refs=refs, unit=unit)  # type: ignore[arg-type]
        for room in ROOMS
        for unit in ("chars", "utf8_bytes", "tokens")
        for refs in ((), [REF])
    ]


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_a_preview_is_byte_identical_to_the_literal_parse(name: str) -> None:
    got = _previews(DOCUMENTS[name])
    with pytest.MonkeyPatch.context() as patch:
        # orjson's parse where it is proven faithful, whatever the document looks like
        patch.setattr(jsonpreview, "_number_dense", lambda text: True)
        patch.setattr(jsonpreview, "_OTHER_EXPONENT", re.compile("^$"))
        assert _previews(DOCUMENTS[name]) == got
    with pytest.MonkeyPatch.context() as patch:
        _the_code_before(patch)
        assert _previews(DOCUMENTS[name]) == got


_SMALL = [
    {"a": "x" * 60, "b": [1, 2.5, 3], "c": {"d": "y" * 40, "e": 1.5e-05}},
    {"k": [{"n": i, "s": "é" * i} for i in range(6)], "m": "z" * 30, "t": True},
    [{"a": 1.25, "b": "q" * 20}, {"c": [1e-07, 2, 3], "d": {"e": "w" * 25}}, "v" * 15],
    {"outer": {"inner": {"deep": ["r" * 12, 0.5, -0.0], "x": "s" * 18}, "y": [7, 8]}},
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
        patch.setattr(jsonpreview, "_number_dense", lambda text: True)
        patch.setattr(jsonpreview, "_OTHER_EXPONENT", re.compile("^$"))
        got = [fit_text(text, room, unit="utf8_bytes") for room in rooms]
    with pytest.MonkeyPatch.context() as patch:
        _the_code_before(patch)
        assert [fit_text(text, room, unit="utf8_bytes") for room in rooms] == got


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_orjson_reads_every_number_as_spelled_or_leaves_the_document_to_the_literal_parse(
    name: str,
) -> None:
    text = DOCUMENTS[name].lstrip("\ufeff")
    read = loads_spelled(text)
    if read is None:
        return
    value, size = read
    written = jsonio.dumps_literal(value)
    assert written == compact_literal(text)
    assert size == len(written)


def test_the_documents_that_orjson_reads() -> None:
    # The literal parse is left the documents orjson refuses, cannot write back, or whose
    # bytes differ from orjson's writing in anything but whitespace.
    refused = {
        name for name, text in DOCUMENTS.items() if loads_spelled(text.lstrip("\ufeff")) is None
    }
    assert refused == {
        "64-bit edges",
        "big ints",
        "crlf and tabs",
        "duplicate keys",
        "escaped quotes and backslashes",
        "every number otherwise",
        "heavy middle member",
        "minus zero int",
        "nan and infinity",
        "odd numbers in keys' values",
        "one odd number first",
        "one odd number last",
        "python exponents",
        "python exponents in rows",
        "slash escapes",
        "spelled otherwise",
        "unicode escaped, python exponents",
        "upper-case hex",
    }


@pytest.mark.parametrize("name", ["dense floats", "dense rounded, indented", "dense ints"])
def test_a_number_dense_document_is_read_by_orjson_alone(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def literal_parse(text: str) -> Any:
        raise AssertionError("the literal parse read the document")

    monkeypatch.setattr(jsonpreview, "loads_literal", literal_parse)
    preview = fit_text(DOCUMENTS[name], 1_500)
    assert "JSON" in preview.split("\n", 1)[0]


@pytest.mark.parametrize(
    "name", ["compact api", "unicode escaped", "long strings", "python exponents"]
)
def test_a_document_of_strings_is_read_by_the_literal_parse_alone(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Few numbers, or numbers Python spells (1e-05): the literal parse costs less than
    # orjson's and the comparison (which would fail).
    def spelled(text: str) -> Any:
        raise AssertionError("orjson read the document")

    monkeypatch.setattr(jsonpreview, "loads_spelled", spelled)
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
    # Its size is known from reading it; the object holding the big array, and the array,
    # measure that less the rest; a second and third fit measure nothing measured before.
    assert whole == []


def test_a_document_spelled_as_orjson_writes_is_read_once() -> None:
    text = json.dumps({"x": [1.5, -0.0, 2**63 - 1, 0.1, 1e15], "s": "é"}, indent=2)
    value, size = loads_spelled(text)  # type: ignore[misc]
    assert isinstance(value["x"][0], float)
    assert orjson.dumps(value) == compact_literal(text)
    assert size == len(orjson.dumps(value))


@pytest.mark.parametrize(
    "text",
    [
        '{"a": NaN}',
        '{"a": 1, "a": 2}',  # a key orjson keeps once: the trees differ
        '{"a": [1, 2], "a": [1, 2]}',
        '{"a": "\\ud800"}',  # a lone surrogate: orjson refuses it
        "[" * 300 + "]" * 300,  # deeper than orjson writes
        '{"a": [1.10, 2.5]}',  # numbers spelled otherwise than orjson writes them
        "[1E5]",
        "[-0]",
        "[1e-05]",
        "[18446744073709551616]",  # beyond 64 bits: orjson reads a float
        '["a\\/b"]',  # a string escaped otherwise
    ],
)
def test_what_orjson_cannot_read_faithfully_is_left_to_the_literal_parse(text: str) -> None:
    assert loads_spelled(text) is None


@pytest.mark.parametrize("depth", [50, 200, 254])
def test_a_number_spelled_otherwise_deep_down_is_kept(depth: int) -> None:
    text = "[" * depth + "1.10, " + "2.5, " * 2_000 + "1E5" + "]" * depth
    assert loads_spelled(text) is None
    preview = fit_text(text, 300)
    with pytest.MonkeyPatch.context() as patch:
        _the_code_before(patch)
        assert fit_text(text, 300) == preview


def test_without_orjson_nothing_is_read_by_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonio, "_orjson", None)
    assert loads_spelled("[1.5]") is None


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
    read = loads_spelled(text)
    if read is not None:
        assert jsonio.dumps_literal(read[0]) == compact_literal(text)
        assert read[1] == len(compact_literal(text))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonpreview, "_number_dense", lambda text: True)
        patch.setattr(jsonpreview, "_OTHER_EXPONENT", re.compile("^$"))
        got = fit_text(text, allocation, refs=[REF], unit=unit)  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as patch:
        _the_code_before(patch)
        assert fit_text(text, allocation, refs=[REF], unit=unit) == got  # type: ignore[arg-type]


def test_the_literal_parse_keeps_reading_what_orjson_refuses() -> None:
    text = '{"a": [NaN, 1.10, 123456789012345678901234567890], "s": "' + "x" * 3000 + '"}'
    assert loads_spelled(text) is None
    body = fit_text(text, 500).split("\n", 1)[1].lstrip("\n")
    assert body.startswith('{"a":[NaN,1.10,123456789012345678901234567890],"s":"')
    assert loads_literal(text) is not None
