"""The JSON codec budgetware uses: orjson when it can, the standard library otherwise."""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

_orjson: Any
try:  # pragma: no cover - depends on the platform
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None

HAS_ORJSON = _orjson is not None

__all__ = [
    "HAS_ORJSON",
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
    "loads_spelled",
    "str_token_sizes",
]


def loads(data: bytes | str) -> Any:
    """Parse JSON fast: orjson when it accepts the text, the standard library otherwise.

    For finding values (the strings a request carries), not for writing them back: orjson
    reads an integer beyond 64 bits as a float (rounded, without an error), so such an
    integer may come back changed. Text orjson refuses (lone surrogate escapes, ``NaN``,
    ``Infinity``, ``1e400``) is read by the standard library. Callers that may write a
    decoded value back use ``loads_exact``; previews that must keep every number's
    spelling use ``loads_literal``.
    """
    if _orjson is not None:
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(data)


# Every integer orjson reads as a float has at least 19 digits: it reads -2**63 to
# 2**64 - 1 exactly. Digits become b"0", every other byte a space, then one search.
_DIGIT_RUN = b"0" * 19
_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))


def loads_exact(data: bytes | str) -> Any:
    """Parse JSON to exactly the values the standard library reads, fast when orjson can.

    For decoded values that may be written back (the MCP and ACP rewrites): integers of
    any size stay integers. When the text holds a run of 19 or more digits anywhere (an
    integer orjson would round, or just digits inside a string), the standard library
    parses it; the check costs about a millisecond a megabyte.
    """
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
    # ensure_ascii=False keeps non-ASCII text as UTF-8, but would write a lone surrogate
    # raw; those are escaped first so that the output is always valid UTF-8.
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    return text.encode("utf-8", "backslashreplace_json")


def dumps_faithful(value: Any) -> bytes:
    """Serialize compactly as UTF-8, writing every value as the standard library's ``json``
    would: integers beyond 64 bits exactly, and ``nan`` / ``inf`` as ``NaN`` / ``Infinity``.

    For output that replaces what an agent's own writer (``json.dumps``) would have written:
    orjson writes non-finite floats as ``null``, a changed value, and refuses integers
    beyond 64 bits. orjson writes the value unless it holds one of those; then the standard
    library writes it, with every other type orjson knows (datetimes, UUIDs, dataclasses,
    enums) written as orjson writes it. Lone surrogates are escaped, never emitted raw.
    """
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
    """A number (or ``NaN``, ``Infinity``, ``-Infinity``) as its text in the document.

    What ``loads_literal`` reads numbers as when orjson is missing; with orjson they are
    ``orjson.Fragment`` objects, which orjson writes verbatim.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"NumberLiteral({self.text!r})"


def _literal_type() -> Callable[[str], Any]:
    return _orjson.Fragment if _orjson is not None else NumberLiteral


def loads_literal(text: str) -> Any:
    """Parse JSON text, every number (and ``NaN`` / ``Infinity``) kept as its own spelling.

    Numbers become opaque literals that ``dumps_literal`` writes back byte for byte
    (``1e400``, ``1.10``, ``1E5``, ``-0``, integers of any size). Strings, booleans and
    ``null`` are plain values. Raises ``ValueError`` (or ``RecursionError``) on bad text.
    """
    literal = _literal_type()
    return json.loads(text, parse_float=literal, parse_int=literal, parse_constant=literal)


# JSON's whitespace: what a parser skips between tokens (inside strings only spaces can be
# raw; tabs and line breaks there are escaped).
_JSON_SPACE = b" \t\n\r"


def loads_spelled(text: str) -> tuple[Any, int] | None:
    """orjson's parse of ``text`` and the size of its compact serialization, when every
    number of ``text`` is spelled as orjson writes it; else None (``loads_literal`` then
    reads it, each number kept as its own spelling).

    The proof is one comparison: ``text`` and orjson's writing of it, each without its JSON
    whitespace, are the same bytes (after writing non-ASCII as ``\\uXXXX`` escapes the way
    ``json.dumps`` does, when ``text`` is ASCII). JSON needs no whitespace between tokens,
    so equal bytes mean the same tokens in the same order: the same tree (no key dropped as
    a duplicate), every number as spelled. None for any difference (``1.10``, ``1e-05``, an
    integer beyond 64 bits, ``\\/``), for text orjson refuses (``NaN``, lone surrogates)
    or cannot write back (nesting deeper than it writes), and without orjson.
    """
    if _orjson is None:
        return None
    try:
        value = _orjson.loads(text)
        out: bytes = _orjson.dumps(value)
        raw = text.encode("utf-8")
    except (_orjson.JSONDecodeError, TypeError, UnicodeEncodeError):
        return None
    if raw == out:
        return value, len(out)
    written = out.translate(None, b" ") if b" " in out else out  # orjson writes no other
    if raw.isascii() and not written.isascii():
        # Non-ASCII bytes occur only inside strings: escape them there, as ensure_ascii.
        escape = json.encoder.encode_basestring_ascii  # json.dumps's own, in C
        written = _NON_ASCII.sub(
            lambda m: escape(m.group())[1:-1], written.decode("utf-8")
        ).encode("ascii")
    if raw.translate(None, _JSON_SPACE) != written:
        return None
    return value, len(out)


def dumps_literal(value: Any, *, ascii_only: bool = False) -> bytes:
    """Compact UTF-8 JSON of a value from ``loads_literal`` (or any plain JSON value), each
    number literal written as it was read; with ``ascii_only`` non-ASCII text is written
    as ``\\uXXXX`` escapes. Raises ``TypeError`` for a value it cannot write (with orjson:
    a lone surrogate, nesting deeper than orjson allows)."""
    if _orjson is not None:
        out: bytes = _orjson.dumps(value)
    else:
        parts: list[str] = []
        _write_literal(value, parts)
        out = "".join(parts).encode("utf-8", "backslashreplace_json")
    if ascii_only and not out.isascii():
        # Non-ASCII bytes occur only inside strings: escape them there, as ensure_ascii.
        text = out.decode("utf-8", "surrogatepass")
        return _NON_ASCII.sub(lambda m: json.dumps(m.group())[1:-1], text).encode("ascii")
    return out


_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def compact_literal(text: bytes | str) -> bytes:
    """The JSON text ``text`` written compactly: no whitespace between tokens, strings as
    raw UTF-8 with only the escapes JSON requires, every number exactly as it was spelled.

    The same message as ``text``, in the fewest bytes its numbers allow (for a message over
    a size limit only because of how its writer spelled it). Raises ``ValueError`` (or
    ``RecursionError``) on bad text.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogatepass")
    try:
        return dumps_literal(loads_literal(text))
    except TypeError:
        # orjson refuses a lone surrogate: the standard-library writer escapes it.
        parts: list[str] = []
        _write_literal(
            json.loads(
                text,
                parse_float=NumberLiteral,
                parse_int=NumberLiteral,
                parse_constant=NumberLiteral,
            ),
            parts,
        )
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
        first = True
        for key, child in value.items():
            if not isinstance(key, str):
                raise TypeError("JSON object keys must be strings")
            if not first:
                parts.append(",")
            first = False
            parts.append(_encode_str(key))
            parts.append(":")
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


# orjson reserves about 13 bytes of working memory per character of a string it
# serializes; long strings go through it in slices of this many characters, which keeps
# the transient memory small and costs nothing measurable. Slicing a str never splits a
# character a JSON escape covers (a surrogate pair held as two code points is refused by
# orjson either way).
STR_CHUNK = 1 << 16


def str_token_sizes(s: str) -> Iterator[int] | None:
    """The JSON token sizes of consecutive slices of ``s`` (quotes included in each), or
    None when orjson is missing; raises TypeError when orjson refuses the string."""
    if _orjson is None:
        return None
    dumps = _orjson.dumps
    return (len(dumps(s[i : i + STR_CHUNK])) for i in range(0, max(len(s), 1), STR_CHUNK))


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
