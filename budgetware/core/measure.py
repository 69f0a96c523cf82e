"""Measuring and cutting text in a budget unit, and exact JSON UTF-8 byte sizes, with
C-level string operations only (no Python loop over a large input's characters)."""

from __future__ import annotations

from typing import Literal

Unit = Literal["chars", "utf8_bytes", "tokens", "tokens:o200k_base", "tokens:cl100k_base"]
"""``tokens`` is an estimate (UTF-8 bytes / 4, rounded up); ``tokens:<encoding>`` counts
exactly with tiktoken (``budgetware[tokens]``)."""

BYTES_PER_TOKEN = 4

__all__ = [
    "BYTES_PER_TOKEN",
    "Unit",
    "cut_prefix",
    "cut_suffix",
    "json_string_bytes",
    "measure",
]

# Bytes of the UTF-8 encoding that are not JSON-escaped and take their own size: every
# byte except the controls U+0000-U+001F, the quote and the backslash.
_PLAIN = bytes(b for b in range(256) if b >= 0x20 and b not in (0x22, 0x5C))
# Escaped with two bytes (\" \\ \b \t \n \f \r); the other controls take six (\u00XX).
_SHORT_ESCAPES = b'"\\\b\t\n\f\r'


# Long strings are measured in pieces of this many characters: a few MB at a time at most,
# and other threads get the GIL between pieces.
_PIECE_CHARS = 256 * 1024


def json_string_bytes(s: str, limit: int | None = None) -> int:
    """Exact UTF-8 byte length of ``s`` as a compact JSON string, quotes included.

    Non-ASCII counts as UTF-8, controls as their escapes, a lone surrogate as ``\\udXXX``.
    With ``limit``, may return early any value above ``limit`` once ``s`` exceeds it.
    """
    if limit is not None and len(s) + 2 > limit:
        # Every character costs at least one byte: a lower bound already over the limit.
        return len(s) + 2
    total = 2
    for start in range(0, len(s), _PIECE_CHARS):
        total += _json_bytes(s[start : start + _PIECE_CHARS])
        if limit is not None and total > limit:
            return total
    return total


def _json_bytes(s: str) -> int:
    """The JSON-escaped UTF-8 size of ``s``, without quotes: C-level encoding and tables."""
    try:
        encoded = s.encode("utf-8")
        surrogate_bytes = 0
    except UnicodeEncodeError:  # fails at the first lone surrogate, so this costs little
        encoded = s.encode("utf-8", "surrogatepass")
        # A lone surrogate: 3 bytes under surrogatepass, 6 as a JSON escape.
        surrogate_bytes = len(encoded) - len(s.encode("utf-8", "ignore"))
    specials = encoded.translate(None, _PLAIN)
    long_escapes = len(specials.translate(None, _SHORT_ESCAPES))
    return len(encoded) + surrogate_bytes + len(specials) + 4 * long_escapes


def measure(s: str, unit: Unit = "chars") -> int:
    """Length of ``s`` in the budget unit: code points, UTF-8 bytes, or estimated tokens."""
    if unit == "chars":
        return len(s)
    if unit[6:7] == ":":  # "tokens:<encoding>": exact, cached by content
        from budgetware.core import tokens

        return tokens.count(s, unit[7:])
    # A lone surrogate counts as the 3 bytes of the U+FFFD a replacing encoder sends.
    size = len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))
    if unit == "tokens":
        return -(-size // BYTES_PER_TOKEN)
    return size


def cut_prefix(s: str, size: int, unit: Unit = "chars") -> str:
    """The longest prefix of ``s`` of at most ``size`` in ``unit``, never splitting a
    surrogate pair; work proportional to ``size``."""
    if size <= 0:
        return ""
    if unit[6:7] == ":":
        from budgetware.core import tokens

        return _keep_pairs_head(s, tokens.cut(s, size, unit[7:], from_end=False))
    if unit == "tokens":  # at most 4 * size bytes is at most size estimated tokens
        unit, size = "utf8_bytes", size * BYTES_PER_TOKEN
    head = s[:size]
    if unit == "utf8_bytes" and not head.isascii():
        raw = head.encode("utf-8", "surrogatepass")
        if len(raw) > size:
            cut = size
            while cut > 0 and (raw[cut] & 0xC0) == 0x80:
                cut -= 1  # back to the first byte of the character that straddles
            head = raw[:cut].decode("utf-8", "surrogatepass")
    return _keep_pairs_head(s, head)


def cut_suffix(s: str, size: int, unit: Unit = "chars") -> str:
    """The longest suffix of ``s`` whose length in ``unit`` is at most ``size``."""
    if size <= 0:
        return ""
    if unit[6:7] == ":":
        from budgetware.core import tokens

        return _keep_pairs_tail(s, tokens.cut(s, size, unit[7:], from_end=True))
    if unit == "tokens":
        unit, size = "utf8_bytes", size * BYTES_PER_TOKEN
    tail = s[-size:]
    if unit == "utf8_bytes" and not tail.isascii():
        raw = tail.encode("utf-8", "surrogatepass")
        if len(raw) > size:
            cut = len(raw) - size
            while cut < len(raw) and (raw[cut] & 0xC0) == 0x80:
                cut += 1  # forward to the start of the next whole character
            tail = raw[cut:].decode("utf-8", "surrogatepass")
    return _keep_pairs_tail(s, tail)


# A surrogate pair: a high half (U+D800-U+DBFF), then a low half (U+DC00-U+DFFF).
_HIGH, _LOW, _LAST = "\ud800", "\udc00", "\udfff"


def _keep_pairs_head(s: str, head: str) -> str:
    """``head`` without a last high surrogate whose low half follows it in ``s``."""
    if head and len(head) < len(s) and _HIGH <= head[-1] < _LOW <= s[len(head)] <= _LAST:
        return head[:-1]
    return head


def _keep_pairs_tail(s: str, tail: str) -> str:
    start = len(s) - len(tail)
    if tail and start > 0 and _HIGH <= s[start - 1] < _LOW <= tail[0] <= _LAST:
        return tail[1:]
    return tail
