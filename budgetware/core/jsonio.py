"""The JSON codec budgetware uses: orjson when it can, the standard library otherwise."""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
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
    "dumps_bytes",
    "dumps_faithful",
    "dumps_str_bytes",
    "loads",
    "str_token_sizes",
]


def loads(data: bytes | str) -> Any:
    """Parse JSON exactly as the standard library would, fast when orjson agrees.

    orjson refuses lone surrogate escapes and turns integers beyond 64 bits into errors;
    the standard library keeps both, so it is the fallback that never changes a value.
    """
    if _orjson is not None:
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(data)


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
    orjson writes non-finite floats as ``null``, a changed value. orjson is used when its
    output holds no ``null`` at all (then no float was turned into one); otherwise the
    standard library writes it. Lone surrogates are escaped, never emitted raw.
    """
    if _orjson is not None:
        try:
            out: bytes = _orjson.dumps(value)
        except TypeError:
            pass
        else:
            if b"null" not in out:
                return out
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    return text.encode("utf-8", "backslashreplace_json")


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
