"""Writing new string values into the original JSON bytes, leaving every other byte alone."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from budgetware.core.jsonio import STR_CHUNK, dumps_faithful, dumps_str_bytes
from budgetware.wire.formats.base import JsonPath

__all__ = [
    "SpliceError",
    "encode_string",
    "patch_json",
    "replace_values",
    "value_spans",
    "with_values",
]

# The structural bytes; scalars and whitespace are skipped by the search itself.
_NEXT = re.compile(rb'[{}\[\],:"]')
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)

_QUOTE, _LBRACE, _RBRACE, _LBRACKET, _RBRACKET, _COLON, _COMMA, _BACKSLASH = b'"{}[]:,\\'


class SpliceError(ValueError):
    """The body's bytes do not follow the structure its decoded value says they have."""


def encode_string(value: str, *, ascii_only: bool) -> bytes:
    """``value`` as a JSON string token: ``\\uXXXX`` escapes or raw UTF-8; lone surrogates
    always escaped."""
    if ascii_only:
        return json.dumps(value).encode("ascii")
    fast = dumps_str_bytes(value)
    if fast is not None:
        return fast
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "backslashreplace_json")


def _child(container: object, key: str | int | None) -> object:
    # The decoded value the bytes are about to describe; None once out of step (a duplicate key).
    if isinstance(container, dict):
        return container.get(key) if isinstance(key, str) else None
    if isinstance(container, list) and isinstance(key, int) and key < len(container):
        return container[key]
    return None


def _string_end(body: bytes, start: int, value: object) -> int:
    """One past the closing quote of the string token opening at ``start``: walked quote to
    quote while that costs less than encoding the known ``value`` (one escaped quote per KiB
    characters), then compared with its two likely encodings; scanned when unknown."""
    if isinstance(value, str):
        end = _after_quotes(body, start, len(value) // 1024)
        if end is not None:
            return end
        for ascii_only in (False, True):
            position = start + 1  # the encoding compared a piece at a time: no copy of it all
            for i in range(0, len(value), STR_CHUNK):
                inner = encode_string(value[i : i + STR_CHUNK], ascii_only=ascii_only)[1:-1]
                if not body.startswith(inner, position):
                    break
                position += len(inner)
            else:
                if body.startswith(b'"', position):
                    return position + 1
    scanned = _STRING.match(body, start)
    if scanned is None:
        raise SpliceError("unterminated string")
    return scanned.end()


# Backslashes counted before a quote at most, before _string_end compares instead.
_BACKSLASH_RUN = 64


def _after_quotes(body: bytes, start: int, escaped: int) -> int | None:
    """One past the first quote after ``start`` that no backslash escapes (an odd run of
    backslashes before a quote escapes it), or None past ``escaped`` escaped ones."""
    position = start + 1
    for _ in range(escaped + 1):
        quote = body.find(b'"', position)
        if quote < 0:
            return None
        run = quote - 1
        while body[run] == _BACKSLASH:
            run -= 1
            if quote - run > _BACKSLASH_RUN:
                return None
        if (quote - 1 - run) % 2 == 0:
            return quote + 1
        position = quote + 1
    return None


def replace_values(
    body: bytes, root: object, changes: Mapping[JsonPath, tuple[str, str]]
) -> bytes | None:
    """``body`` with the string at each path (old, new) replaced, every other byte as it was,
    each new token escaped as the old one was; None when a path has no token."""
    spans = value_spans(body, root, set(changes), set())[0]
    if len(spans) != len(changes):
        return None
    body_ascii = body.isascii()
    return _spliced(
        body,
        [
            (start, end, _encode_value(body, start, end, changes[path][1], body_ascii))
            for path, (start, end) in spans.items()
        ],
    )


def with_values(doc: dict[str, Any], values: Mapping[JsonPath, Any]) -> dict[str, Any]:
    """A copy of ``doc`` with ``values`` at their paths, copying only the containers on them."""
    root = dict(doc)
    copies: dict[JsonPath, Any] = {(): root}
    for path, value in values.items():
        container: Any = root
        for depth in range(1, len(path)):
            prefix = path[:depth]
            copied = copies.get(prefix)
            if copied is None:
                original = container[path[depth - 1]]
                copied = dict(original) if isinstance(original, dict) else list(original)
                container[path[depth - 1]] = copies[prefix] = copied
            container = copied
        container[path[-1]] = value
    return root


# --- patching any value: for rewriters that build a new message from a decoded one --------

_WS = re.compile(rb"[ \t\r\n]*")
_SCALAR = re.compile(rb"[^,:\]}\s]+")


def patch_json(body: bytes, old: object, new: object) -> bytes | None:
    """``body`` (the JSON text of ``old``) turned into the JSON of ``new``, writing only what
    differs: every other byte, number spellings included, stays. None when the bytes do not
    follow the structure of ``old``.
    """
    replace: dict[JsonPath, object] = {}
    insert: dict[JsonPath, list[tuple[str, object]]] = {}
    _diff((), old, new, replace, insert)
    if not replace and not insert:
        return body
    try:
        spans, ends = value_spans(body, old, set(replace), set(insert))
    except (SpliceError, IndexError, UnicodeDecodeError, ValueError):
        return None
    if len(spans) != len(replace) or len(ends) != len(insert):
        return None
    body_ascii = body.isascii()
    edits = [
        (start, end, _encode_value(body, start, end, value, body_ascii))
        for path, value in replace.items()
        for start, end in (spans[path],)
    ]
    for path, members in insert.items():
        close, empty = ends[path]
        pieces = [
            encode_string(key, ascii_only=body_ascii)
            + b":"
            + _encode_value(body, close, close, value, body_ascii)
            for key, value in members
        ]
        edits.append((close, close, (b"" if empty else b",") + b",".join(pieces)))
    return _spliced(body, edits)


def _spliced(body: bytes, edits: list[tuple[int, int, bytes]]) -> bytes | None:
    """``body`` with each ``(start, end, data)`` edit made; None when two overlap."""
    out: list[bytes] = []
    previous = 0
    for start, end, data in sorted(edits, key=lambda edit: edit[0]):
        if start < previous:
            return None
        out += (body[previous:start], data)
        previous = end
    out.append(body[previous:])
    return b"".join(out)


def _diff(
    path: JsonPath,
    old: object,
    new: object,
    replace: dict[JsonPath, object],
    insert: dict[JsonPath, list[tuple[str, object]]],
) -> None:
    if new is old:
        return
    if type(old) is dict and type(new) is dict:
        if any(key not in new for key in old):
            replace[path] = new  # a key went away: the object is written whole
            return
        for key, value in old.items():
            _diff((*path, key), value, new[key], replace, insert)
        added = [(key, value) for key, value in new.items() if key not in old]
        if added:
            insert[path] = added
        return
    if type(old) is list and type(new) is list and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new)):
            _diff((*path, index), a, b, replace, insert)
        return
    if type(old) is type(new) and not isinstance(old, (dict, list, float)) and old == new:
        return
    replace[path] = new


def _encode_value(body: bytes, start: int, end: int, value: object, body_ascii: bool) -> bytes:
    """``value`` as JSON in place of ``body[start:end]``: a string escaped as the old token
    was (raw UTF-8 when it held any, ``\\uXXXX`` when it escaped non-ASCII text), else as the
    body is written."""
    if isinstance(value, str):
        ascii_only = _is_ascii(body, start, end) and (
            body_ascii or _NON_ASCII_ESCAPE.search(body, start, end) is not None
        )
        return encode_string(value, ascii_only=ascii_only)
    if body_ascii:
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=True)
        return text.encode("ascii")
    return dumps_faithful(value)


# \u0080 and above: the writer escaped its non-ASCII text.
_NON_ASCII_ESCAPE = re.compile(rb"\\u(?:00[89a-fA-F]|0[1-9a-fA-F]|[1-9a-fA-F])")
# A long token is checked a window at a time: no copy of all of it.
_WINDOW = 256 * 1024


def _is_ascii(body: bytes, start: int, end: int) -> bool:
    return all(body[pos : min(pos + _WINDOW, end)].isascii() for pos in range(start, end, _WINDOW))


def value_spans(
    body: bytes, root: object, wanted: set[JsonPath], object_ends: set[JsonPath]
) -> tuple[dict[JsonPath, tuple[int, int]], dict[JsonPath, tuple[int, bool]]]:
    """The byte span of the value at each wanted path, and for each object in
    ``object_ends`` the offset of its closing brace and whether it is empty (``root``: the
    value ``body`` decodes to)."""
    prefixes = {path[:i] for path in wanted | object_ends for i in range(len(path) + 1)}
    spans: dict[JsonPath, tuple[int, int]] = {}
    ends: dict[JsonPath, tuple[int, bool]] = {}
    # Frames of open containers: [is_object, path, start, index, decoded container].
    stack: list[list[Any]] = []
    pos = _WS.match(body, 0).end()  # type: ignore[union-attr]
    current: JsonPath = ()
    while True:
        # A value starts at pos, at path ``current``.
        char = body[pos]
        if char in (_LBRACE, _LBRACKET):
            if current not in prefixes:  # nor wanted: wanted paths are prefixes
                pos = _skip_container(body, pos)
            else:
                is_object = char == _LBRACE
                container = _child(stack[-1][4], current[-1]) if stack else root
                stack.append([is_object, current, pos, 0, container])
                pos = _WS.match(body, pos + 1).end()  # type: ignore[union-attr]
                if body[pos] not in (_RBRACE, _RBRACKET):
                    if is_object:
                        current, pos = _member_key(body, pos, current)
                    else:
                        current = (*current, 0)
                    continue
        elif char == _QUOTE:
            quote = body.find(b'"', pos + 1)
            if quote > 0 and body[quote - 1] != _BACKSLASH:
                end = quote + 1
            else:
                value = _child(stack[-1][4], current[-1]) if stack else root
                end = _string_end(body, pos, value)
            if current in wanted:
                spans[current] = (pos, end)
            pos = end
        else:
            scalar = _SCALAR.match(body, pos)
            if scalar is None:
                raise SpliceError("no value")
            if current in wanted:
                spans[current] = (pos, scalar.end())
            pos = scalar.end()
        # After a value: commas and closing brackets until the next value starts.
        while True:
            pos = _WS.match(body, pos).end()  # type: ignore[union-attr]
            if not stack:
                return spans, ends
            frame = stack[-1]
            char = body[pos]
            if char == _COMMA:
                pos = _WS.match(body, pos + 1).end()  # type: ignore[union-attr]
                if frame[0]:
                    current, pos = _member_key(body, pos, frame[1])
                else:
                    frame[3] += 1
                    current = (*frame[1], frame[3])
                break
            if char not in (_RBRACE, _RBRACKET):
                raise SpliceError("expected a comma or a closing bracket")
            stack.pop()
            path = frame[1]
            if path in wanted:
                spans[path] = (frame[2], pos + 1)
            if path in object_ends and frame[0]:
                opened = _WS.match(body, frame[2] + 1).end()  # type: ignore[union-attr]
                ends[path] = (pos, opened == pos)
            pos += 1


def _member_key(body: bytes, pos: int, parent: JsonPath) -> tuple[JsonPath, int]:
    """The path of the member whose key starts at ``pos``, and where its value starts."""
    token = _STRING.match(body, pos)
    if token is None:
        raise SpliceError("expected a key")
    raw = body[pos + 1 : token.end() - 1]
    key = (
        json.loads(body[pos : token.end()])
        if b"\\" in raw
        else raw.decode("utf-8", "surrogatepass")
    )
    colon = _WS.match(body, token.end()).end()  # type: ignore[union-attr]
    if body[colon] != _COLON:
        raise SpliceError("expected a colon")
    return (*parent, key), _WS.match(body, colon + 1).end()  # type: ignore[union-attr]


def _skip_container(body: bytes, pos: int) -> int:
    """One past the bracket that closes the container opening at ``pos``."""
    depth = 0
    search = _NEXT.search
    while True:
        found = search(body, pos)
        if found is None:
            raise SpliceError("unbalanced brackets")
        start = found.start()
        char = body[start]
        if char == _QUOTE:
            quote = body.find(b'"', start + 1)
            if quote > 0 and body[quote - 1] != _BACKSLASH:
                pos = quote + 1
                continue
            token = _STRING.match(body, start)
            if token is None:
                raise SpliceError("unterminated string")
            pos = token.end()
            continue
        pos = start + 1
        if char in (_LBRACE, _LBRACKET):
            depth += 1
        elif char in (_RBRACE, _RBRACKET):
            depth -= 1
            if depth == 0:
                return pos
