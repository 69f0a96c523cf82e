"""Large JSON messages parsed a piece at a time, so a worker thread bounding an MCP response
never holds the GIL long enough to stall the event loop: long string tokens are decoded in
pieces, the GIL given away between them. The value (or error) is ``loads_exact``'s.
"""

from __future__ import annotations

import os
import re
from typing import Any

from budgetware.core.gil import give_way
from budgetware.core.jsonio import loads, loads_exact

__all__ = ["LONG_STRING_BYTES", "PIECE_BYTES", "loads_in_pieces", "loads_outline"]

LONG_STRING_BYTES = 64 * 1024
"""String tokens at least this long are decoded apart from the rest of the message."""
PIECE_BYTES = 256 * 1024
"""Bytes of a long string decoded per call."""
# String tokens walked to find the long ones before giving up (many small strings).
_MAX_TOKENS = 10_000
# How far back from a piece's end a safe place to cut is looked for.
_CUT_WINDOW = 4096

_QUOTE, _BACKSLASH = 0x22, 0x5C
# The inside of a string token up to its closing quote (or the end of the window).
_INSIDE = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.S)
_WS = re.compile(rb"[ \t\r\n]*")


def loads_in_pieces(body: bytes) -> Any:
    """``loads_exact(body)``, with every long string decoded a piece at a time."""
    return _loads(body, decode=True)


def loads_outline(body: bytes) -> Any:
    """The JSON value of ``body`` with every long string left empty except a message's id,
    method and tool name: those read without decoding a large argument."""
    return _loads(body, decode=False)


def _outline_fields(message: Any) -> list[Any]:
    """The values of a message's id, method and ``params.name`` (those present)."""
    if not isinstance(message, dict):
        return []
    fields = [message[key] for key in ("id", "method") if key in message]
    params = message.get("params")
    if isinstance(params, dict) and "name" in params:
        fields.append(params["name"])
    return fields


def _loads(body: bytes, *, decode: bool) -> Any:
    if len(body) < 2 * LONG_STRING_BYTES:
        return loads_exact(body)
    try:
        spans = _long_strings(body)
        if not spans:
            return loads_exact(body)
        # A placeholder no string of this body can equal: a fresh random nonce per call.
        nonce = os.urandom(8).hex()
        parts: list[bytes] = []
        previous = 0
        for index, (start, end) in enumerate(spans):
            parts += (body[previous:start], b'"\\u0000%s:%d"' % (nonce.encode(), index))
            previous = end
        parts.append(body[previous:])
        outline = loads_exact(b"".join(parts))
        give_way()
        prefix = f"\x00{nonce}:"
        if decode:
            values = [_decode(body, start, end) for start, end in spans]
        else:
            # A 64 KiB id is still the id: read as empty, the response would not match it.
            values = [""] * len(spans)
            for field in _outline_fields(outline):
                if isinstance(field, str) and field.startswith(prefix):
                    index = int(field[len(prefix) :])
                    values[index] = _decode(body, *spans[index])
        return _fill(outline, prefix, values)
    except (ValueError, TypeError, LookupError, _CannotSplit):
        return loads_exact(body)  # the plain way: the same value, or the same error


class _CannotSplit(Exception):
    pass


def _long_strings(body: bytes) -> list[tuple[int, int]]:
    """(start, end) of every string value (not key) of at least ``LONG_STRING_BYTES``."""
    spans: list[tuple[int, int]] = []
    find = body.find
    pos = 0
    for _ in range(_MAX_TOKENS):
        start = find(b'"', pos)
        if start < 0:
            return spans
        quote = find(b'"', start + 1)
        if quote < 0:
            raise _CannotSplit  # unterminated: the plain parse says so
        # A quote no backslash precedes closes the token; else it is read exactly.
        end = quote + 1 if body[quote - 1] != _BACKSLASH else _token_end(body, start)
        if end - start >= LONG_STRING_BYTES:
            after = _WS.match(body, end)
            if after is None or body[after.end() : after.end() + 1] != b":":
                spans.append((start, end))
        pos = end
        give_way()
    raise _CannotSplit  # many small strings: nothing worth splitting off


def _token_end(body: bytes, start: int) -> int:
    """One past the closing quote of the string token opening at ``start``."""
    size = len(body)
    pos = start + 1
    while True:
        window = min(pos + PIECE_BYTES, size)
        match = _INSIDE.match(body, pos, window)
        assert match is not None  # the pattern matches the empty string
        end = match.end()
        if end < window and body[end] == _QUOTE:
            return end + 1
        if window == size or end == pos:
            raise _CannotSplit  # unterminated, or a byte no string may hold here
        # The window ended inside the token (perhaps just before an escape): go on there.
        pos = end
        give_way()


def _decode(body: bytes, start: int, end: int) -> str:
    """The string token ``body[start:end]`` decoded, a piece at a time."""
    inner_end = end - 1
    pos = start + 1
    pieces: list[str] = []
    while pos < inner_end:
        cut = inner_end if inner_end - pos <= PIECE_BYTES else _safe_cut(body, pos + PIECE_BYTES)
        value = loads(b'"' + body[pos:cut] + b'"')
        if not isinstance(value, str):
            raise _CannotSplit
        pieces.append(value)
        pos = cut
        give_way()
    return "".join(pieces)


def _safe_cut(body: bytes, at: int) -> int:
    """A place at or before ``at`` where the token can be cut: no backslash among the six
    bytes before (``\\uXXXX``) and the byte before ends a character."""
    rfind = body.rfind
    for cut in range(at, at - _CUT_WINDOW, -1):
        if body[cut - 1] < 0x80 and rfind(b"\\", cut - 6, cut) < 0:
            return cut
    raise _CannotSplit  # escapes everywhere: decoded whole, the plain way


def _fill(outline: Any, prefix: str, values: list[str]) -> Any:
    """``outline`` with each placeholder (``prefix`` + its index) replaced by its value;
    every placeholder must be found exactly once."""
    if isinstance(outline, str):
        if len(values) == 1 and outline == prefix + "0":
            return values[0]
        raise _CannotSplit
    left = set(range(len(values)))
    stack = [outline]
    while stack and left:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            if isinstance(child, str):
                if child.startswith(prefix):
                    index = int(child[len(prefix) :])
                    left.remove(index)  # KeyError (a LookupError) when seen twice
                    node[key] = values[index]
            elif isinstance(child, (dict, list)):
                stack.append(child)
    if left:
        raise _CannotSplit
    return outline
