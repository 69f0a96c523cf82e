"""The character index of an artifact, so that a window of characters costs the window,
not its offset: the byte offset of every ``BLOCK``-th character (none for ASCII), and
every ``LINE_STEP`` bytes the line breaks and characters before, for a search.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["BLOCK", "LINE_STEP", "CharIndex", "NotText", "build_index"]

# Characters between two checkpoints: a window reads at most twice this more than asked.
BLOCK = 4096
# Bytes between two entries of the line table.
LINE_STEP = 1024 * 1024
_ENCODING = ("utf-8", "surrogatepass")


class NotText(ValueError):
    """The artifact's bytes are not UTF-8 text."""


@dataclass(frozen=True)
class CharIndex:
    """An artifact's size in bytes and characters, where every ``block``-th character starts
    (empty for ASCII), and ``lines[j]``, ``chars_at[j]``: the line breaks and characters
    before byte ``j * line_step``."""

    size: int
    chars: int
    block: int
    offsets: array[int]
    line_step: int
    lines: array[int]
    chars_at: array[int]

    @property
    def ascii(self) -> bool:
        return self.size == self.chars

    def span(self, start: int, stop: int) -> tuple[int, int, int, int]:
        """``(first_byte, end_byte, first_char, end_char)``: the bytes to read for the
        characters ``start`` to ``stop`` (0 <= start <= stop <= chars) and the characters
        those bytes hold."""
        if self.ascii:
            return start, stop, start, stop
        first = start // self.block
        last = -(-stop // self.block)
        if last < len(self.offsets):
            end_byte, end_char = self.offsets[last], last * self.block
        else:
            end_byte, end_char = self.size, self.chars
        return self.offsets[first], end_byte, first * self.block, end_char

    def line_entry(self, position: int) -> tuple[int, int, int]:
        """The line-table entry at or before byte ``position``: ``(byte, line breaks
        before it, characters before it)``."""
        row = min(position // self.line_step, len(self.lines) - 1)
        return row * self.line_step, self.lines[row], self.chars_at[row]


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


class _LineTable:
    """Line breaks and characters before every ``step``-th byte, from raw chunks."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.lines = array("Q", [0])
        self.chars_at = array("Q", [0])
        self.position = 0  # bytes seen
        self.breaks = 0
        self.chars = 0

    def feed(self, chunk: bytes) -> None:
        at = 0
        while at < len(chunk):
            boundary = (self.position // self.step + 1) * self.step
            take = min(len(chunk) - at, boundary - self.position)
            segment = chunk[at : at + take] if take < len(chunk) else chunk
            self.breaks += segment.count(b"\n")
            self.chars += len(segment) if segment.isascii() else _chars(segment)
            self.position += take
            at += take
            if self.position == boundary:
                self.lines.append(self.breaks)
                self.chars_at.append(self.chars)


def _chars(data: bytes) -> int:
    """Code points in UTF-8 bytes: every byte but the continuation bytes."""
    return len(data.translate(None, _CONTINUATION))


_CONTINUATION = bytes(range(0x80, 0xC0))


def build_index(chunks: Iterable[bytes]) -> CharIndex:
    """The index of the artifact whose bytes ``chunks`` yields in order (one pass, memory
    for one chunk); NotText if they are not UTF-8."""
    block = BLOCK
    table = _LineTable(LINE_STEP)
    offsets = array("Q")
    chars = 0  # characters before `pending`
    base = 0  # bytes before `pending`
    mark = 0  # the next checkpoint, a character number
    pending = b""
    for chunk in chunks:
        table.feed(chunk)
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
    return CharIndex(base, chars, block, offsets, table.step, table.lines, table.chars_at)
