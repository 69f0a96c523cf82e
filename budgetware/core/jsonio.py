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
# A number token, and the bytes one is made of (none of them starts or ends a neighbour).
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_BYTES = frozenset(b"0123456789+-.eE")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_ESCAPED_QUOTE = re.compile(rb'(?<!\\)(?:\\\\)*\\"')
# Differences between a document and orjson's writing of it (numbers spelled otherwise,
# strings escaped otherwise) looked at one by one; a document with more is read by
# loads_literal.
_MAX_DIFFERENCES = 4096


def loads_spelled(text: str) -> tuple[Any, int] | None:
    """orjson's parse of ``text``, every number of it written back as ``text`` spells it,
    and the size of its compact serialization (``dumps_literal``); or None.

    For previews that must keep each number's spelling (``loads_literal``), at the cost of
    one orjson parse, one serialization and a comparison when the document spells its
    numbers as orjson writes them, as most writers do; no number is looked at on its own.
    The proof is the comparison: ``text`` and the serialization, each without its JSON
    whitespace, are the same bytes (after writing non-ASCII as ``\\uXXXX`` escapes the way
    ``json.dumps`` does, when ``text`` is ASCII). JSON never needs whitespace between two
    tokens, so equal bytes mean the same tokens in the same order: the same tree (no key
    dropped as a duplicate), every number written as spelled.

    Where the bytes differ only by numbers spelled otherwise (``1.10``, ``1E5``, ``-0``,
    ``1e-05``, an integer beyond 64 bits) and strings escaped otherwise (``\\/``), each such
    number becomes an ``orjson.Fragment`` of its spelling, found by the sizes of its
    ancestors' children: the cost grows with the numbers spelled otherwise, not with the
    document. None for more than 4,096 differences, for any other difference, for
    text orjson refuses (``NaN``, ``1e400``, lone surrogates) or cannot write back (nesting
    deeper than it writes), and without orjson: the caller reads those with
    ``loads_literal``.
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
    stripped = raw.translate(None, _JSON_SPACE)
    written = out.translate(None, b" ") if b" " in out else out  # orjson writes no other
    measure = _stripped_size
    if raw.isascii() and not written.isascii():
        # Non-ASCII bytes occur only inside strings: escape them there, as ensure_ascii.
        escape = json.encoder.encode_basestring_ascii  # json.dumps's own, in C
        written = _NON_ASCII.sub(
            lambda m: escape(m.group())[1:-1], written.decode("utf-8")
        ).encode("ascii")
        measure = _stripped_ascii_size
    if stripped == written:
        return value, len(out)
    if not isinstance(value, (dict, list)):
        return None
    try:
        spelled = _respelled(stripped, written)
        if spelled is None or not _respell(value, spelled, written, measure):
            return None
    except RecursionError:  # nesting deep enough to exhaust the stack on the way
        return None
    return value, len(out) + sum(len(mine) - len(theirs) for _, mine, theirs in spelled)


def _stripped_size(written: bytes) -> int:
    """The size of orjson's ``written`` without spaces (the only whitespace it writes)."""
    return len(written) - written.count(b" ")


# UTF-8 lead bytes of two-, three- and four-byte characters become a, b and c: written as
# \uXXXX escapes (a surrogate pair for four bytes) they take 4, 3 and 8 bytes more.
_LEADS = bytes(
    0x61 if 0xC0 <= n < 0xE0 else 0x62 if 0xE0 <= n < 0xF0 else 0x63 if n >= 0xF0 else 0x20
    for n in range(256)
)


def _stripped_ascii_size(written: bytes) -> int:
    """The size of orjson's ``written`` without spaces, non-ASCII written as escapes."""
    size = _stripped_size(written)
    if written.isascii():
        return size
    leads = written.translate(_LEADS)
    return size + 4 * leads.count(b"a") + 3 * leads.count(b"b") + 8 * leads.count(b"c")


def _respelled(text: bytes, written: bytes) -> list[tuple[int, bytes, bytes]] | None:
    """Where ``text`` and ``written`` (the same document without whitespace, as spelled
    and as orjson wrote it) differ: ``(position in written, spelling, orjson's)`` of each
    number spelled otherwise; None when they differ in anything but numbers and string
    escapes, or in too many places."""
    found: list[tuple[int, bytes, bytes]] = []
    differences = 0
    i = j = 0  # positions in text and written between two tokens, the bytes before equal
    while True:
        k = _first_difference(text, i, written, j)
        if k < 0:
            return found
        differences += 1
        if differences > _MAX_DIFFERENCES:
            return None
        at = j + k
        quotes = written.count(b'"', j, at) if written.find(b'"', j, at) >= 0 else 0
        if quotes and written.find(b"\\", j, at) >= 0:
            quotes -= len(_ESCAPED_QUOTE.findall(written, j, at))
        if quotes % 2:
            # Inside a string written with other escapes: both strings end the same.
            start = _opening_quote(written, j, at)
            mine = _STRING.match(text, i + start - j)
            theirs = _STRING.match(written, start)
            if mine is None or theirs is None:  # pragma: no cover - both texts are JSON
                return None
            i, j = mine.end(), theirs.end()
            continue
        start = at
        while start > j and written[start - 1] in _NUMBER_BYTES:
            start -= 1
        mine = _NUMBER.match(text, i + start - j)
        theirs = _NUMBER.match(written, start)
        if (
            mine is None
            or theirs is None
            or max(mine.end() - i, theirs.end() - j) <= k  # both end before the difference
            or text[mine.end() : mine.end() + 1] in (b"e", b"E", b".")
            or written[theirs.end() : theirs.end() + 1] in (b"e", b"E", b".")
        ):
            return None
        found.append((start, mine.group(), theirs.group()))
        i, j = mine.end(), theirs.end()


def _first_difference(a: bytes, i: int, b: bytes, j: int) -> int:
    """The least k with ``a[i + k] != b[j + k]`` (or where one of them ends), -1 if
    ``a[i:] == b[j:]``; equal runs are compared in growing blocks, a differing block
    halved, so that the bytes copied stay a few times the distance to the difference."""
    k, step = 0, 1024
    while True:
        mine, theirs = a[i + k : i + k + step], b[j + k : j + k + step]
        if mine == theirs:
            if len(mine) < step:
                return -1
            k += step
            step = min(step * 2, 1 << 16)
            continue
        lo, hi = 0, min(len(mine), len(theirs))
        if mine[:hi] == theirs[:hi]:
            return k + hi  # one of them ends here
        while hi - lo > 1:  # mine[:lo] == theirs[:lo], mine[:hi] != theirs[:hi]
            mid = (lo + hi) // 2
            if mine[lo:mid] == theirs[lo:mid]:
                lo = mid
            else:
                hi = mid
        return k + lo


def _opening_quote(written: bytes, start: int, end: int) -> int:
    """The last quote before ``end`` (from ``start`` on) that no backslash escapes."""
    at = end
    while True:
        at = written.rfind(b'"', start, at)
        slashes = 0
        while written[at - 1 - slashes] == 0x5C:
            slashes += 1
        if slashes % 2 == 0:
            return at


def _respell(
    root: dict[str, Any] | list[Any],
    spelled: list[tuple[int, bytes, bytes]],
    written: bytes,
    measure: Callable[[bytes], int],
) -> bool:
    """Replace each number of ``root`` at a position of ``spelled`` (in ``written``,
    orjson's writing of ``root`` without whitespace, sized by ``measure``) by its spelling;
    False when a position holds no number written as expected (then ``root`` is not to be
    used).

    In a list, a run of numbers and literals up to the next position is counted by its
    commas. Other children are measured in chunks of a few KB; a chunk holding a position
    is halved down to a few children, measured one by one: the work is about one
    serialization of the containers on the way and a few small ones per position."""
    dumps, fragment = _orjson.dumps, _orjson.Fragment
    pending = iter(spelled)
    target: tuple[int, bytes, bytes] | None = next(pending, None)

    def visit(node: Any, start: int, close: int) -> bool:
        # ``node`` is written from ``start`` (its bracket) to ``close`` (the other one).
        nonlocal target
        keys: list[Any] | None = None if isinstance(node, list) else list(node)
        at, index, count, chunk = start + 1, 0, len(node), 64
        while index < count and target is not None:
            position = target[0]
            if keys is None and _flat(written, at, position):
                index += written.count(b",", at, position)
                child = node[index] if index < count else None
                if not (
                    (position == at or written[position - 1] == 0x2C)  # a child starts there
                    and _is_number(child)
                    and dumps(child) == target[2]
                ):
                    return False
                node[index] = fragment(target[1])
                at, index = position + len(target[2]) + 1, index + 1
                target = next(pending, None)
                continue
            last = min(index + chunk, count)
            if last == count:
                end = close
            else:
                end = at + measure(dumps(_part(node, keys, index, last))) - 2
            if position < end and not walk(node, keys, index, last, at, end):
                return False
            # Chunks of about 8 KB whatever the children's sizes.
            chunk = max(4, min(4096, 8192 * (last - index) // max(end - at, 1)))
            at, index = end + 1, last
        return True

    def walk(node: Any, keys: list[Any] | None, first: int, last: int, at: int, end: int) -> bool:
        # Children first..last-1 of ``node``, written from ``at`` to ``end``, hold the target.
        nonlocal target
        while last - first > 4:
            if target is None or target[0] >= end:
                return True
            half = (first + last) // 2
            middle = at + measure(dumps(_part(node, keys, first, half))) - 2
            if target[0] < middle and not walk(node, keys, first, half, at, middle):
                return False
            first, at = half, middle + 1
        for index in range(first, last):
            key = index if keys is None else keys[index]
            child = node[key]
            if keys is not None:
                at += measure(dumps(key)) + 1
            # The last child ends where the range does: a large one is not written again.
            size = end - at if index == last - 1 else measure(dumps(child))
            if target is not None and target[0] < at + size:
                if isinstance(child, (dict, list)):
                    if not visit(child, at, at + size - 1):
                        return False
                elif target[0] == at and _is_number(child) and dumps(child) == target[2]:
                    node[key] = fragment(target[1])
                    target = next(pending, None)
                else:
                    return False
                if target is not None and target[0] < at + size:
                    return False  # not at a number of the child
            at += size + 1
        return True

    return target is None or (visit(root, 0, len(written) - 1) and target is None)


def _flat(written: bytes, start: int, end: int) -> bool:
    """Whether ``written[start:end]`` holds only numbers, literals and commas."""
    return start <= end and all(written.find(c, start, end) < 0 for c in _NOT_FLAT)


_NOT_FLAT = (b"[", b"{", b'"', b"]", b"}")


def _part(node: Any, keys: list[Any] | None, first: int, last: int) -> Any:
    """Children first..last-1 of a list (``keys`` None) or an object, as one value."""
    if keys is None:
        return node[first:last]
    return {key: node[key] for key in keys[first:last]}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
