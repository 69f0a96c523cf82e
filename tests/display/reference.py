"""A slow, obviously-correct JSON string serializer used as the ruler's reference."""

from __future__ import annotations

_SHORT = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def reference_json(s: str) -> bytes:
    """Compact JSON of ``s`` as UTF-8, escaping controls and lone surrogates as ``\\uXXXX``.

    A high surrogate followed by a low one (an astral character held as two code points)
    is written as two escapes, exactly as a serializer that escapes each lone code point.
    """
    out = ['"']
    for c in s:
        o = ord(c)
        if c in _SHORT:
            out.append(_SHORT[c])
        elif o < 0x20 or 0xD800 <= o <= 0xDFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out).encode("utf-8")


def reference_json_bytes(s: str) -> int:
    return len(reference_json(s))
