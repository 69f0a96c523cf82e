"""The JSON codec budgetware uses: orjson when it can, the standard library otherwise."""

from __future__ import annotations

import codecs
import json
import math
from typing import Any

_orjson: Any
try:  # pragma: no cover - depends on the platform
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

__all__ = [
    "STR_CHUNK",
    "NumberLiteral",
    "compact_literal",
    "dumps_bytes",
    "dumps_faithful",
    "dumps_literal",
    "dumps_str_bytes",
    "loads",
    "loads_exact",
    "loads_literal",
]


def loads(data: bytes | str) -> Any:
    """Parse JSON with orjson, else the standard library: for finding values, not writing
    them back (orjson rounds integers beyond 64 bits: ``loads_exact``)."""
    if _orjson is not None:
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(data)


# orjson reads -2**63 to 2**64 - 1 exactly: an integer it rounds has 19 digits or more.
_DIGIT_RUN = b"0" * 19
_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))


def loads_exact(data: bytes | str) -> Any:
    """Parse JSON to exactly the values the standard library reads (integers of any size),
    with orjson unless the text holds a run of 19 or more digits."""
    if _orjson is None:
        return json.loads(data)
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    if raw.translate(_DIGITS_ONLY).find(_DIGIT_RUN) >= 0:
        return json.loads(data)
    return loads(data)


def dumps_bytes(value: Any) -> bytes:
    """Serialize compactly as UTF-8; lone surrogates are escaped, never emitted raw."""
    if _orjson is not None:
        try:
            out: bytes = _orjson.dumps(value)
            return out
        except TypeError:
            pass
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    return text.encode("utf-8", "backslashreplace_json")


def dumps_faithful(value: Any) -> bytes:
    """Serialize compactly as UTF-8 with the values ``json.dumps`` would write (big integers,
    ``NaN``, which orjson writes as ``null``); other types as orjson writes them."""
    if _orjson is not None:
        try:
            out: bytes = _orjson.dumps(value)
        except TypeError:
            pass
        else:
            if b"null" not in out or not _holds_non_finite(value):
                return out
    text = json.dumps(
        value,
        ensure_ascii=False,
        separators=(",", ":"),
        allow_nan=True,
        default=_as_orjson_writes if _orjson is not None else None,
    )
    return text.encode("utf-8", "backslashreplace_json")


def _holds_non_finite(value: Any) -> bool:
    """Whether a float orjson writes as ``null`` (NaN, an infinity) is inside ``value``."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, float):
            if not math.isfinite(node):
                return True
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return False


def _as_orjson_writes(obj: Any) -> Any:
    # The standard library's default= hook: a type it cannot write, as orjson writes it.
    return _orjson.loads(_orjson.dumps(obj))


# --- numbers kept as written: for previews that show part of a JSON document -------------


class NumberLiteral:
    """A number (or ``NaN``, ``Infinity``) as spelled in the document: what ``loads_literal``
    reads numbers as without orjson (with it, ``orjson.Fragment``)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def loads_literal(text: str) -> Any:
    """Parse JSON text, every number kept as an opaque literal of its own spelling that
    ``dumps_literal`` writes back byte for byte. ``ValueError`` on bad text."""
    literal = _orjson.Fragment if _orjson is not None else NumberLiteral
    return json.loads(text, parse_float=literal, parse_int=literal, parse_constant=literal)


def dumps_literal(value: Any) -> bytes:
    """Compact UTF-8 JSON of a value from ``loads_literal``, each number as it was read.
    ``TypeError`` for a value it cannot write."""
    if _orjson is not None:
        out: bytes = _orjson.dumps(value)
        return out
    return _dumps_numbers(value)


def compact_literal(text: bytes | str) -> bytes:
    """``text`` rewritten compactly (raw UTF-8 strings, no whitespace), every number as
    spelled: for a message over a size limit only because of its writer. ``ValueError``
    on bad text."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogatepass")
    try:
        return dumps_literal(loads_literal(text))
    except TypeError:
        # orjson refuses a lone surrogate: the standard-library writer escapes it.
        literal = NumberLiteral
        return _dumps_numbers(
            json.loads(text, parse_float=literal, parse_int=literal, parse_constant=literal)
        )


def _dumps_numbers(value: Any) -> bytes:
    parts: list[str] = []
    _write_literal(value, parts)
    return "".join(parts).encode("utf-8", "backslashreplace_json")


_encode_str = json.encoder.encode_basestring


def _write_literal(value: Any, parts: list[str]) -> None:
    # The standard-library-only writer of dumps_literal (no orjson: PyPy, say).
    if isinstance(value, str):
        parts.append(_encode_str(value))
    elif isinstance(value, NumberLiteral):
        parts.append(value.text)
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, dict):
        parts.append("{")
        for index, (key, child) in enumerate(value.items()):
            if not isinstance(key, str):
                raise TypeError("JSON object keys must be strings")
            if index:
                parts.append(",")
            parts += (_encode_str(key), ":")
            _write_literal(child, parts)
        parts.append("}")
    elif isinstance(value, (list, tuple)):
        parts.append("[")
        for index, child in enumerate(value):
            if index:
                parts.append(",")
            _write_literal(child, parts)
        parts.append("]")
    elif isinstance(value, (int, float)):
        parts.append(json.dumps(value, allow_nan=True))
    else:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")


# orjson reserves working memory per character it writes: long strings go through it in
# slices of this many characters.
STR_CHUNK = 1 << 16


def dumps_str_bytes(s: str) -> bytes | None:
    """orjson's serialization of one string, or None when orjson is missing or refuses it."""
    if _orjson is None:
        return None
    try:
        if len(s) <= STR_CHUNK:
            out: bytes = _orjson.dumps(s)
            return out
        dumps = _orjson.dumps
        inner = (
            memoryview(dumps(s[i : i + STR_CHUNK]))[1:-1] for i in range(0, len(s), STR_CHUNK)
        )
        return b"".join((b'"', *inner, b'"'))
    except TypeError:
        return None


def _backslashreplace_json(err: UnicodeError) -> tuple[str, int]:
    # Only surrogates can fail to encode as UTF-8; write them as JSON \uXXXX escapes.
    assert isinstance(err, UnicodeEncodeError)
    chunk = err.object[err.start : err.end]
    return "".join(f"\\u{ord(c):04x}" for c in chunk), err.end


codecs.register_error("backslashreplace_json", _backslashreplace_json)
