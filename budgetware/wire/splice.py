"""Writing new string values into the original JSON bytes, leaving every other byte alone."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from budgetware.core.jsonio import dumps_str_bytes
from budgetware.wire.formats.base import JsonPath

__all__ = ["SpliceError", "encode_string", "locate", "replace_values"]

# The bytes that matter to the structure; scalars (numbers, true, false, null) and
# whitespace between them are skipped by the search itself.
_NEXT = re.compile(rb'[{}\[\],:"]')
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NON_ASCII = re.compile(rb"[\x80-\xff]")
# Below this length a regex match is as cheap as predicting the token's bytes.
_PREDICT_MIN = 256

_QUOTE, _LBRACE, _RBRACE, _LBRACKET, _RBRACKET, _COLON, _COMMA, _BACKSLASH = b'"{}[]:,\\'


class SpliceError(ValueError):
    """The body's bytes do not follow the structure its decoded value says they have."""


def encode_string(value: str, *, ascii_only: bool) -> bytes:
    """``value`` as a JSON string token: ``\\uXXXX`` escapes or raw UTF-8, compact.

    Lone surrogates are always escaped, so the result is valid UTF-8 either way.
    """
    if ascii_only:
        return json.dumps(value).encode("ascii")
    fast = dumps_str_bytes(value)
    if fast is not None:
        return fast
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "backslashreplace_json")


def _child(container: object, key: str | int | None) -> object:
    # The decoded value the bytes are about to describe; None once out of step (only a
    # duplicate key can do that: the decoded object keeps the last of them).
    if isinstance(container, dict):
        return container.get(key) if isinstance(key, str) else None
    if isinstance(container, list) and isinstance(key, int) and key < len(container):
        return container[key]
    return None


def _string_end(body: bytes, start: int, value: object) -> int:
    """Where the string token that opens at ``start`` ends (one past its closing quote).

    A long string whose decoded ``value`` is known is compared with its likely encodings
    (raw UTF-8, then ``\\uXXXX`` escapes) at C speed instead of being scanned; a miss
    (another escaping style, or a duplicate key whose kept value is another one) falls
    back to scanning the token.
    """
    if isinstance(value, str) and len(value) >= _PREDICT_MIN:
        raw = encode_string(value, ascii_only=False)
        if body.startswith(raw, start):
            return start + len(raw)
        if not value.isascii():
            escaped = encode_string(value, ascii_only=True)
            if body.startswith(escaped, start):
                return start + len(escaped)
    token = _STRING.match(body, start)
    if token is None:
        raise SpliceError("unterminated string")
    return token.end()


def locate(
    body: bytes, root: object, targets: Mapping[JsonPath, object]
) -> dict[JsonPath, tuple[int, int]]:
    """The byte span (start, end) of the string token at each target path.

    Walks the structural bytes once, in step with the decoded ``root`` so that long
    strings are skipped by comparing them with their predicted bytes instead of scanned.
    With duplicate keys the last occurrence wins, as it does for every decoder.
    """
    spans: dict[JsonPath, tuple[int, int]] = {}
    path: list[Any] = []
    values: list[object] = []
    in_object: list[bool] = []
    after_colon = False
    pos = 0
    search = _NEXT.search
    find = body.find
    match_string = _STRING.match
    while True:
        found = search(body, pos)
        if found is None:
            break
        start = found.start()
        char = body[start]
        if char == _QUOTE:
            if in_object and in_object[-1] and not after_colon:
                token = match_string(body, start)
                if token is None:
                    raise SpliceError("unterminated string")
                pos = token.end()
                raw_key = body[start + 1 : pos - 1]
                path[-1] = json.loads(body[start:pos]) if b"\\" in raw_key else raw_key.decode()
                continue
            after_colon = False
            # The first quote that no backslash precedes closes the token (memchr speed);
            # escaped quotes inside take the slower, exact way.
            quote = find(b'"', start + 1)
            if quote > 0 and body[quote - 1] != _BACKSLASH:
                end = quote + 1
            else:
                end = _string_end(body, start, _child(values[-1], path[-1]) if values else root)
            if path:
                key = tuple(path)
                if key in targets:
                    spans[key] = (start, end)
            pos = end
            continue
        pos = start + 1
        if char in (_LBRACE, _LBRACKET):
            value = _child(values[-1], path[-1]) if values else root
            values.append(value)
            in_object.append(char == _LBRACE)
            path.append(None if char == _LBRACE else 0)
            after_colon = False
        elif char in (_RBRACE, _RBRACKET):
            if not in_object:
                raise SpliceError("unbalanced brackets")
            values.pop()
            in_object.pop()
            path.pop()
        elif char == _COLON:
            after_colon = True
        else:  # a comma
            after_colon = False
            if in_object and not in_object[-1]:
                path[-1] += 1
    return spans


def replace_values(
    body: bytes, root: object, changes: Mapping[JsonPath, tuple[str, str]]
) -> bytes | None:
    """``body`` with the string at each path replaced, every other byte as it was.

    ``changes`` maps a path to (old value, new value). Each new token keeps the style of
    the one it replaces: ``\\uXXXX`` escapes if the old token escaped its non-ASCII text
    (or the whole body is ASCII), raw UTF-8 otherwise. None when a path has no token.
    """
    spans = locate(body, root, changes)
    if len(spans) != len(changes):
        return None
    body_ascii: bool | None = None
    pieces: list[bytes] = []
    previous = 0
    for path, (start, end) in sorted(spans.items(), key=lambda item: item[1][0]):
        old, new = changes[path]
        if not old.isascii():
            # Non-ASCII text written without a single raw non-ASCII byte: escaped style.
            ascii_only = _NON_ASCII.search(body, start, end) is None
        else:
            if body_ascii is None:
                body_ascii = body.isascii()
            ascii_only = body_ascii
        pieces.append(body[previous:start])
        pieces.append(encode_string(new, ascii_only=ascii_only))
        previous = end
    pieces.append(body[previous:])
    return b"".join(pieces)
