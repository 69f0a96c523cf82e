"""The character index of an artifact, so that a window of characters costs the window,
not its offset: the byte offset of every ``BLOCK``-th character (none for ASCII).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["BLOCK", "CharIndex", "NotText", "build_index"]

# Characters between two checkpoints: a window reads at most twice this more than asked.
BLOCK = 4096
_ENCODING = ("utf-8", "surrogatepass")


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


def _complete(chunk: bytes) -> int:
    """How many leading bytes of ``chunk`` are whole UTF-8 sequences."""
    end = len(chunk)
    lead = end - 1
    while lead >= 0 and end - lead <= 4 and chunk[lead] & 0xC0 == 0x80:
        lead -= 1
    if lead < 0:
        return end
    first = chunk[lead]
    need = 1 if first < 0x80 else 2 if first < 0xE0 else 3 if first < 0xF0 else 4
    return lead if lead + need > end else end


def build_index(chunks: Iterable[bytes]) -> CharIndex:
    """The index of the artifact whose bytes ``chunks`` yields in order (one pass, memory
    for one chunk); NotText if they are not UTF-8."""
    block = BLOCK
    offsets = array("Q")
    chars = 0  # characters before `pending`
    base = 0  # bytes before `pending`
    mark = 0  # the next checkpoint, a character number
    pending = b""
    for chunk in chunks:
        data = pending + chunk if pending else chunk
        whole = _complete(data)
        part, pending = data[:whole], data[whole:]
        if not part:
            continue
        if part.isascii():
            count = len(part)
            if mark < chars + count:
                offsets.extend(range(base + mark - chars, base + count, block))
                mark += -(-(chars + count - mark) // block) * block
        else:
            try:
                text = part.decode(*_ENCODING)
            except UnicodeDecodeError:
                raise NotText("the artifact is not UTF-8 text") from None
            count = len(text)
            at_char, at_byte = 0, base
            while mark < chars + count:
                upto = mark - chars
                at_byte += len(text[at_char:upto].encode(*_ENCODING))
                at_char = upto
                offsets.append(at_byte)
                mark += block
        chars += count
        base += len(part)
    if pending:
        raise NotText("the artifact ends inside a UTF-8 character")
    if base == chars:
        offsets = array("Q")
    return CharIndex(base, chars, offsets)
