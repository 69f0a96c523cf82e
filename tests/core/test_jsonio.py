"""The JSON codec: what each reader and writer keeps exactly."""

from __future__ import annotations

import datetime
import json
import math

import pytest

from budgetware.core import jsonio
from budgetware.core.jsonio import dumps_faithful, dumps_literal, loads_exact, loads_literal

# Measuring, fitting and parsing touch no file: one file API is enough (fs_watch.py).
TOUCHES_NO_FILES = True

BIG = 123456789012345678901234567891


@pytest.mark.parametrize(
    "text",
    [
        b'{"id": 123456789012345678901234567891}',
        b'{"n": -9223372036854775809, "s": "x"}',
        b"[18446744073709551616, 1.5]",
    ],
)
def test_loads_exact_keeps_integers_beyond_64_bits(text: bytes) -> None:
    assert loads_exact(text) == json.loads(text)
    assert loads_exact(text.decode()) == json.loads(text)
    assert all(
        type(v) is type(w) for v, w in zip(_leaves(loads_exact(text)), _leaves(json.loads(text)))
    )


def _leaves(value: object) -> list[object]:
    if isinstance(value, dict):
        return [leaf for child in value.values() for leaf in _leaves(child)]
    if isinstance(value, list):
        return [leaf for child in value for leaf in _leaves(child)]
    return [value]


def test_loads_exact_is_loads_without_long_digit_runs() -> None:
    text = b'{"a": 9223372036854775807, "b": "123456789012345678", "c": NaN}'
    value = loads_exact(text)
    assert value["a"] == 2**63 - 1
    assert value["b"] == "123456789012345678"
    assert math.isnan(value["c"])


def test_dumps_faithful_writes_what_orjson_writes_unless_a_value_would_change() -> None:
    stamp = datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)
    assert dumps_faithful({"t": stamp, "x": None}) == b'{"t":"2026-01-02T00:00:00+00:00","x":null}'
    assert dumps_faithful({"t": stamp, "x": math.inf}) == (
        b'{"t":"2026-01-02T00:00:00+00:00","x":Infinity}'
    )
    assert dumps_faithful([BIG, None, stamp]) == (
        f"[{BIG},null,".encode() + b'"2026-01-02T00:00:00+00:00"]'
    )
    with pytest.raises(TypeError):
        dumps_faithful({"x": object(), "y": None})


@pytest.mark.parametrize("with_orjson", [True, False])
def test_literals_are_written_back_byte_for_byte(
    with_orjson: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not with_orjson:
        monkeypatch.setattr(jsonio, "_orjson", None)
    text = (
        '{"a":[1.10,1E5,1e400,NaN,-Infinity,-0,123456789012345678901234567890],'
        '"s":"é\\"","t":true,"n":null}'
    )
    assert dumps_literal(loads_literal(text)) == text.encode()
