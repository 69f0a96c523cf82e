"""Searching an artifact: the lines matching a pattern, read in pieces so an artifact larger
than memory can be searched. A plain string is found as it is; a regular expression goes
to the ``regex`` package, whose matching takes a time limit.
"""

from __future__ import annotations

import codecs
import math
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, replace

from budgetware.core.artifacts import ArtifactNotFound
from budgetware.core.config import BudgetConfig
from budgetware.retrieval.artifact import Artifact, reader_for
from budgetware.retrieval.errors import InvalidReadArgument, SearchTimeout
from budgetware.retrieval.pattern import Pattern, compile_pattern
from budgetware.retrieval.read import count, read_ref
from budgetware.store.base import MIB, ContentStore

__all__ = [
    "DEFAULT_TIMEOUT",
    "GrepLine",
    "GrepMatch",
    "GrepResult",
    "compile_pattern",
    "grep_artifact",
    "search",
]

# Bytes read per piece: the memory a search needs, whatever the artifact's size.
CHUNK = 4 * MIB
# A line longer than this (characters) is searched in pieces (a match across two is not
# found).
LONG_LINE = 4 * CHUNK
DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_LINE_CHARS = 2_000


@dataclass(frozen=True)
class GrepLine:
    """A line of the output: its 1-based number, its text (a long line shortened around the
    match), and the character offset of that text in the full output."""

    line_number: int
    line: str
    offset: int


@dataclass(frozen=True)
class GrepMatch(GrepLine):
    """A matching line, with up to ``context`` lines before and after it."""

    before: tuple[GrepLine, ...] = ()
    after: tuple[GrepLine, ...] = ()


@dataclass(frozen=True)
class GrepResult:
    """The matches found (at most ``max_matches``), and whether there are more."""

    matches: list[GrepMatch]
    more: bool


class _Block:
    """One piece of the artifact ending at a line break, decoded."""

    def __init__(self, text: str, line: int, char: int, width: int) -> None:
        self.text = text
        self.length = len(text)
        self.first_line = line
        self.first_char = char
        self.width = width
        self._line_at = (0, line)  # (position, line number there): counted forward

    def line_number(self, pos: int) -> int:
        """The line at ``pos``, counted from the position asked last (only the distance
        between matches is counted, never the block again)."""
        at, number = self._line_at
        if pos >= at:
            number += self.text.count("\n", at, pos)
        else:
            number -= self.text.count("\n", pos, at)
        self._line_at = (pos, number)
        return number

    def end_lines(self) -> int:
        return self.line_number(self.length) - self.first_line

    def line_bounds(self, pos: int) -> tuple[int, int]:
        start = self.text.rfind("\n", 0, pos) + 1
        end = self.text.find("\n", pos)
        return start, self.length if end < 0 else end

    def line(self, start: int, end: int, number: int, at: int | None = None) -> GrepLine:
        """The line ``[start, end)``, shortened around ``at`` (else its head) when long."""
        if end - start > self.width:
            focus = start if at is None else at
            start = max(start, min(focus - self.width // 4, end - self.width))
            end = start + self.width
        return GrepLine(number, self.text[start:end].removesuffix("\r"), self.first_char + start)

    def lines_before(self, start: int, number: int, wanted: int) -> list[GrepLine]:
        found: list[GrepLine] = []
        end = start - 1  # the break ending the line before
        while len(found) < wanted and end >= 0:
            begin = self.text.rfind("\n", 0, end) + 1
            number -= 1
            found.append(self.line(begin, end, number))
            end = begin - 1
        found.reverse()
        return found

    def lines_after(self, end: int, number: int, wanted: int) -> list[GrepLine]:
        """Up to ``wanted`` lines after the break at ``end``."""
        found: list[GrepLine] = []
        start = end + 1
        while len(found) < wanted and start < self.length:
            stop = self.text.find("\n", start)
            stop = self.length if stop < 0 else stop
            number += 1
            found.append(self.line(start, stop, number))
            start = stop + 1
        return found

    def last_lines(self, wanted: int) -> list[GrepLine]:
        if wanted <= 0 or self.length == 0:
            return []
        end = self.length - 1 if self.text.endswith("\n") else self.length
        number = self.first_line + self.end_lines() - (1 if end < self.length else 0)
        start = self.text.rfind("\n", 0, end) + 1
        return [*self.lines_before(start, number, wanted - 1), self.line(start, end, number)]


def _pieces(artifact: Artifact) -> Iterator[str]:
    """The artifact's text in pieces that end at a line break (or within a line longer than
    LONG_LINE characters)."""
    decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
    carry = ""
    for chunk in artifact.pieces(CHUNK):
        text = carry + decoder.decode(chunk)
        cut = text.rfind("\n") + 1
        if cut == 0 and len(text) < LONG_LINE:
            carry = text
            continue
        cut = cut or len(text)
        carry = text[cut:]
        yield text[:cut]
    if carry:
        yield carry


def search(
    artifact: Artifact,
    pattern: Pattern,
    context: int,
    max_matches: int,
    max_line_chars: int,
    timeout: float,
) -> GrepResult:
    """The lines of ``artifact`` matching ``pattern`` (see ``grep_artifact``)."""
    deadline = time.monotonic() + timeout
    matches: list[GrepMatch] = []
    next_line: int | None = None  # the line of the first match not taken (max_matches)
    pending: list[int] = []  # the matches whose lines after are in the next piece
    previous: deque[GrepLine] = deque(maxlen=max(context, 1))
    line, char = 1, 0
    more = False
    for text in _pieces(artifact):
        if time.monotonic() > deadline:
            raise SearchTimeout(f"the search took longer than {timeout:g} s")
        block = _Block(text, line, char, max_line_chars)
        for index in pending:  # the lines after matches of earlier pieces come first
            waiting = matches[index]
            got = block.lines_after(-1, line - 1, context - len(waiting.after))
            matches[index] = replace(waiting, after=waiting.after + tuple(got))
        pending = [index for index in pending if len(matches[index].after) < context]
        pos = 0
        while pos <= block.length and not more:
            found = _find(block, pattern, pos, deadline, timeout)
            if found < 0 or (found == block.length and block.text.endswith("\n")):
                break
            if len(matches) == max_matches:
                more = True
                next_line = block.line_number(block.line_bounds(found)[0])
                break
            start, end = block.line_bounds(found)
            number = block.line_number(start)
            before: list[GrepLine] = []
            after: list[GrepLine] = []
            if context:
                before = block.lines_before(start, number, context)
                if len(before) < context:  # the rest are the last lines of earlier pieces
                    first = number - len(before)
                    earlier = [p for p in previous if p.line_number < first]
                    before = earlier[len(earlier) - (context - len(before)) :] + before
                after = block.lines_after(end, number, context)
            shown = block.line(start, end, number, found)
            if len(after) < context:
                pending.append(len(matches))
            matches.append(
                GrepMatch(number, shown.line, shown.offset, tuple(before), tuple(after))
            )
            pos = end + 1
        if context:
            previous.extend(block.last_lines(context))
        line += block.end_lines()
        char += block.length
        if more and not pending:
            break
    return GrepResult(_context_before(matches, next_line), more)


def _context_before(matches: list[GrepMatch], next_line: int | None) -> list[GrepMatch]:
    """``matches`` with their lines after stopping before ``next_line``, the first match
    not taken, so no match left out shows as a context line."""
    if next_line is None:
        return matches
    return [
        replace(m, after=tuple(a for a in m.after if a.line_number < next_line)) for m in matches
    ]


def _find(
    block: _Block,
    pattern: Pattern,
    pos: int,
    deadline: float,
    timeout: float,
) -> int:
    """Where the next match at or after ``pos`` starts in the block, or -1."""
    if pattern.compiled is None:
        return block.text.find(pattern.text, pos)
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise SearchTimeout(f"the search took longer than {timeout:g} s")
    try:
        found = pattern.compiled.search(block.text, pos, timeout=remaining, concurrent=True)
    except TimeoutError:
        raise SearchTimeout(
            f"the search took longer than {timeout:g} s (a pattern that backtracks too much?)"
        ) from None
    return -1 if found is None else int(found.start())


def grep_artifact(
    ref: str,
    pattern: str,
    *,
    context: int = 0,
    max_matches: int = 100,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
    timeout: float = DEFAULT_TIMEOUT,
    store: ContentStore | None = None,
    config: BudgetConfig | None = None,
) -> list[GrepMatch]:
    """The lines of a full output that match ``pattern``, first to last, at most
    ``max_matches``: each a GrepMatch with ``line_number`` (1-based), ``line``, ``offset``
    (the character offset of ``line`` in the output) and ``context`` lines ``before`` and
    ``after`` it (never a match left out by ``max_matches``).

    ``pattern`` is a regular expression (``^``/``$`` match at line ends, ``\\r\\n``
    included); one without special characters is a plain string. A line longer than
    ``max_line_chars`` is shortened around the match; the search gives up with
    SearchTimeout after ``timeout`` seconds.

    Raises ArtifactNotFound (see ``read_artifact``), InvalidPattern for a pattern that is
    invalid or too costly to compile, InvalidReadArgument for a count out of range or a
    ``timeout`` that is not a positive, finite number.
    """
    result = grep_result(
        ref,
        pattern,
        context=context,
        max_matches=max_matches,
        max_line_chars=max_line_chars,
        timeout=timeout,
        store=store,
        config=config,
    )
    return result.matches


def grep_result(
    ref: object,
    pattern: object,
    *,
    context: int = 0,
    max_matches: int = 100,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
    timeout: float = DEFAULT_TIMEOUT,
    store: ContentStore | None = None,
    config: BudgetConfig | None = None,
) -> GrepResult:
    """``grep_artifact``, with whether more matches follow."""
    context = count("context", context)
    max_matches = count("max_matches", max_matches, minimum=1)
    max_line_chars = count("max_line_chars", max_line_chars, minimum=16)
    # nan would never be past; inf neither: a search always has a time limit.
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not 0 < timeout < math.inf
    ):
        raise InvalidReadArgument("timeout must be a positive, finite number of seconds")
    compiled = compile_pattern(pattern)

    def grep(artifact: Artifact) -> GrepResult:
        try:
            return search(artifact, compiled, context, max_matches, max_line_chars, timeout)
        except ArtifactNotFound:
            reader_for(artifact.store).forget(artifact.key)  # hashed again at its next read
            raise

    return read_ref(ref, grep, store=store, config=config)
