"""The character index of an artifact, so that a window of characters costs the window,
not its offset: the byte offset of every ``BLOCK``-th character (none for ASCII).
"""

from __future__ import annotations

import codecs
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["BLOCK", "CharIndex", "NotText", "build_index"]

# Characters between two checkpoints: a window reads at most twice this more than asked.
BLOCK = 4096
_ERRORS = "surrogatepass"


class NotText(ValueError):
    """The artifact's bytes are not UTF-8 text."""


@dataclass(frozen=True)
class CharIndex:
    """An artifact's size in bytes and characters, and where every ``BLOCK``-th character
    starts (empty for ASCII)."""

    size: int
    chars: int
    offsets: array[int]

    @property
    def ascii(self) -> bool:
        return self.size == self.chars

    def span(self, start: int, stop: int) -> tuple[int, int, int, int]:
        """``(first_byte, end_byte, first_char, end_char)``: the bytes to read for the
        characters ``start`` to ``stop`` (0 <= start <= stop <= chars) and the characters
        those bytes hold."""
        if self.ascii:
            return start, stop, start, stop
        first = start // BLOCK
        last = -(-stop // BLOCK)
        if last < len(self.offsets):
            end_byte, end_char = self.offsets[last], last * BLOCK
        else:
            end_byte, end_char = self.size, self.chars
        return self.offsets[first], end_byte, first * BLOCK, end_char


def build_index(chunks: Iterable[bytes]) -> CharIndex:
    """The index of the artifact whose bytes ``chunks`` yields in order (one pass, memory
    for one chunk); NotText if they are not UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")(_ERRORS)
    offsets = array("Q")
    fed = chars = 0  # bytes given to the decoder, characters it returned
    for chunk in chunks:
        size = fed - len(decoder.getstate()[0])  # the bytes before this chunk's text
        try:
            text = decoder.decode(chunk)
        except UnicodeDecodeError:
            raise NotText("the artifact is not UTF-8 text") from None
        fed += len(chunk)
        first = -chars % BLOCK  # the first checkpoint in this text
        if text.isascii():
            offsets.extend(range(size + first, size + len(text), BLOCK))
        else:
            at = 0
            for mark in range(first, len(text), BLOCK):
                size += len(text[at:mark].encode("utf-8", _ERRORS))
                offsets.append(size)
                at = mark
        chars += len(text)
    if decoder.getstate()[0]:
        raise NotText("the artifact ends inside a UTF-8 character")
    return CharIndex(fed, chars, offsets if fed != chars else array("Q"))
