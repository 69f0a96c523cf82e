"""Fitting one slot of text into its allocation: the preview a model reads instead of it.

A preview never exceeds its allocation, is the same for the same input, and fitting it
again changes nothing. Its forms, tried in order until one leaves at least half of the
room to the output's own text (``MIN_CONTENT_PERCENT``), each with the references first
and then without (a reference is named whole or not at all):

1. JSON, for a JSON document: the notice line, then valid JSON of the same shape;
2. full: the notice line, the head, a marker (with the salient lines of the omitted
   middle), the tail;
3. compact, for small rooms: a short notice line, the head, ``[...]``, the tail;
4. minimal: ``[...`` and the tail.

A preview that names no reference carries a short digest of the output instead, so that
distinct outputs never read the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from budgetware.core.artifacts import text_key
from budgetware.core.jsonpreview import Document, parse_document, render_within
from budgetware.core.measure import Unit, cut_prefix, cut_suffix, measure
from budgetware.core.notice import DEFAULT_WORDING, Wording
from budgetware.core.salient import SalientPattern, Scanned, compile_salient, scan

__all__ = [
    "DEFAULT_PREVIEW",
    "HEAD_SHARE_PERCENT",
    "MIN_CONTENT_PERCENT",
    "Fitted",
    "PreviewOptions",
    "SlotPreview",
    "fit_text",
]

# The tail gets four fifths of the room: errors, exit codes and summaries come last.
HEAD_SHARE_PERCENT = 20
# A form is used only if the output's own text fills at least this share of the room.
MIN_CONTENT_PERCENT = 50
# Hex digits of the output's SHA-256 that a preview naming no reference shows.
_DIGEST_CHARS = 8
# Salient lines are looked for only when their reserve can hold a short line.
_MIN_SALIENT_RESERVE = 40
# How many salient lines are considered at most from each end of the omitted middle.
_SALIENT_CANDIDATES = 64


@dataclass(frozen=True)
class PreviewOptions:
    """How previews are made: the wording, and salient lines (``salient_percent``: the
    most of the room they may take, 0: none; ``salient``: the pattern that finds them)."""

    wording: Wording = field(default=DEFAULT_WORDING)
    salient_percent: int = 25
    salient: SalientPattern | None = field(default_factory=lambda: compile_salient())


DEFAULT_PREVIEW = PreviewOptions()


class Fitted(NamedTuple):
    """A fitted slot: its text, and whether that text names the references it was given."""

    text: str
    named: bool


class _Piece(NamedTuple):
    text: str
    content: int


def fit_text(
    text: str,
    allocation: int,
    *,
    refs: Sequence[str] = (),
    unit: Unit = "chars",
    options: PreviewOptions | None = None,
) -> str:
    """``text`` itself when it fits ``allocation``, else a preview that never exceeds it.

    The preview names ``refs`` (where the full output is) when they fit whole, and is the
    same for the same input. See the module docstring for its forms.
    """
    return SlotPreview(text, unit, options).fit(allocation, refs).text


class SlotPreview:
    """One slot's text, measured and scanned once, fitted at one or more rooms.

    ``key`` (the text's content address, when the caller has it) names the text in a
    preview that names no reference, without hashing it again.
    """

    def __init__(
        self,
        text: str,
        unit: Unit = "chars",
        options: PreviewOptions | None = None,
        *,
        total: int | None = None,
    ) -> None:
        self.text = text
        self.unit = unit
        self.options = options or DEFAULT_PREVIEW
        self.total = measure(text, unit) if total is None else total
        self.key: str | None = None  # set by the finalizer, which hashed the text already
        self._not_json = False
        self._salient: dict[int, tuple[list[tuple[int, int, int]], int]] = {}
        self._scanned: Scanned | None = None

    def fit(self, allocation: int, refs: Sequence[str] = ()) -> Fitted:
        """The preview at ``allocation``, naming ``refs`` if they fit (never over it)."""
        if allocation < 0:
            raise ValueError("allocation must not be negative")
        if self.total <= allocation:
            return Fitted(self.text, False)
        choices: tuple[tuple[str, ...], ...] = (tuple(refs), ()) if refs else ((),)
        if not self._not_json:
            fitted = self._fit_json(allocation, choices)
            if fitted is not None:
                return fitted
        for names in choices:
            for compact in (False, True):
                piece = self._text_form(allocation, names, compact=compact)
                if piece is not None and _enough(piece, allocation):
                    return Fitted(piece.text, bool(names))
        return Fitted(self._minimal(allocation), False)

    # -- the forms --------------------------------------------------------------------

    def _text_form(self, allocation: int, refs: Sequence[str], *, compact: bool) -> _Piece | None:
        text, unit, total, words = self.text, self.unit, self.total, self.options.wording
        # The notice and marker print the omitted amount, which depends on how much room
        # they leave: iterate from a lower bound until the printed numbers are exact.
        omitted = max(total - allocation, 0)
        slack = 0
        for _ in range(32):
            if compact:
                prefix = words.compact_notice(total, omitted, unit, refs) + self._unnamed(refs)
                prefix += "\n"
                marker = words.compact_marker()
            else:
                prefix = words.notice(total, omitted, unit, refs) + self._unnamed(refs) + "\n\n"
                marker = words.marker(omitted, unit)
            room = allocation - measure(prefix, unit) - measure(marker, unit) - slack
            if room < 0:
                return None
            salient_kept = 0
            if not compact:
                block = self._salient_block(allocation, room, omitted)
                if block is not None:
                    middle, salient_kept, block_size = block
                    room -= block_size - measure(marker, unit)
                    marker = middle
            head_room = room * HEAD_SHARE_PERCENT // 100
            head = cut_prefix(text, head_room, unit)
            tail = cut_suffix(text, room - head_room, unit)
            kept = measure(head, unit) + measure(tail, unit) + salient_kept
            actual = max(total - kept, 0)
            if actual != omitted:
                omitted = actual
                continue
            preview = prefix + head + marker + tail
            size = measure(preview, unit)
            if size > allocation:  # units that do not add up (tokens): give the excess back
                slack += size - allocation
                continue
            return _Piece(preview, kept)
        return None

    def _salient_block(
        self, allocation: int, room: int, omitted: int
    ) -> tuple[str, int, int] | None:
        """The marker with salient lines from the omitted middle: (text, kept, size), or None."""
        options = self.options
        if options.salient is None or options.salient_percent <= 0:
            return None
        reserve = room * options.salient_percent // 100
        if reserve < _MIN_SALIENT_RESERVE:
            return None
        candidates, floor = self._salient_lines(allocation)
        if not candidates:
            return None
        unit, words, text = self.unit, options.wording, self.text
        cap = max(reserve // 4, 80)
        budget = measure(words.marker(omitted, unit), unit) + reserve
        fixed = measure(words.salient_end(), unit)

        def line_at(number: int, start: int, end: int) -> tuple[int, str, int, int]:
            # (line number, shown text, kept, cost): a line longer than the cap is cut.
            line = text[start:end].rstrip()
            size = measure(line, unit)
            if size > cap:
                cut = words.line_cut()
                shown = cut_prefix(line, cap - measure(cut, unit), unit)
                kept = measure(shown, unit)
                shown += cut
            else:
                shown, kept = line, size
            return number, shown, kept, measure(words.salient_line(number, shown), unit)

        chosen: dict[int, tuple[str, int]] = {}  # line number: (shown text, kept)
        used = 0
        # Both ends of the middle first (first, last, second, second to last, ...); the
        # lines that only open a traceback or chain one to the next last (its exception and
        # the frame that raised it say more); a line that does not fit leaves its room to
        # the next ones.
        last = len(candidates) - 1
        order = sorted(range(len(candidates)), key=lambda i: (min(i, last - i), i > last - i))
        ordered = [candidates[i] for i in order]
        ordered.sort(key=lambda c: _OPENING.match(text, c[1], c[2]) is not None)
        for number, start, end in ordered:
            if number in chosen:
                continue
            line = line_at(number, start, end)
            frame = [
                line_at(number - text.count("\n", at, start), at, stop)
                for at, stop in _frame_before(text, start, floor)
            ]
            new = [g for g in (*frame, line) if g[0] not in chosen]
            cost = sum(g[3] for g in new)
            head = measure(words.salient_marker(omitted, unit, len(chosen) + len(new)), unit)
            if head + fixed + used + cost > budget:
                continue
            chosen.update((n, (shown, kept)) for n, shown, kept, _ in new)
            used += cost
        if not chosen:
            return None
        block = (
            words.salient_marker(omitted, unit, len(chosen))
            + "".join(words.salient_line(n, chosen[n][0]) for n in sorted(chosen))
            + words.salient_end()
        )
        return block, sum(kept for _, kept in chosen.values()), measure(block, unit)

    def _salient_lines(self, allocation: int) -> tuple[list[tuple[int, int, int]], int]:
        """Distinct salient lines of the middle that every layout at ``allocation`` omits,
        as (line number, start, end), and where that middle starts.

        The head and tail of any layout are no longer than those of the whole allocation,
        so the middle between those is omitted by all of them. The whole text is scanned
        once (``salient.scan``, up to its size cap) and each room takes its middle from that.
        """
        found = self._salient.get(allocation)
        if found is not None:
            return found
        pattern = self.options.salient
        assert pattern is not None
        text, unit = self.text, self.unit
        head_room = allocation * HEAD_SHARE_PERCENT // 100
        start = len(cut_prefix(text, head_room, unit))
        end = len(text) - len(cut_suffix(text, allocation - head_room, unit))
        if self._scanned is None:
            self._scanned = scan(text, pattern)
        distinct = (
            self._scanned.distinct(text, start, end, _SALIENT_CANDIDATES) if start < end else []
        )
        numbered: list[tuple[int, int, int]] = []
        line_number, position = 1, 0
        for line_start, line_end in distinct:
            line_number += text.count("\n", position, line_start)
            position = line_start
            numbered.append((line_number, line_start, line_end))
        self._salient[allocation] = numbered, start
        return numbered, start

    def _fit_json(self, allocation: int, choices: tuple[tuple[str, ...], ...]) -> Fitted | None:
        """The JSON form at ``allocation``, or None (not a JSON document, or no room)."""
        value = parse_document(self.text)
        if value is None:
            self._not_json = True
            return None
        try:
            for names in choices:
                for compact in (False, True):
                    piece = self._json_form(value, allocation, names, compact=compact)
                    if piece is not None and _enough(piece, allocation):
                        return Fitted(piece.text, bool(names))
        except (TypeError, RecursionError):  # deeper than orjson writes; a lone surrogate
            self._not_json = True
        return None

    def _json_form(
        self, value: Document, allocation: int, refs: Sequence[str], *, compact: bool
    ) -> _Piece | None:
        unit, words = self.unit, self.options.wording
        if compact:
            prefix = words.compact_json_notice(self.total, unit, refs) + self._unnamed(refs) + "\n"
        else:
            prefix = words.json_notice(self.total, unit, refs) + self._unnamed(refs) + "\n\n"
        room = allocation - measure(prefix, unit)
        if room <= 0:
            return None
        options = self.options
        rendered = render_within(
            value,
            room,
            unit,
            self.text,
            self.total,
            words,
            options.salient,
            options.salient_percent,
        )
        if rendered is None:
            return None
        body, content = rendered
        return _Piece(prefix + body, content)

    def _unnamed(self, refs: Sequence[str]) -> str:
        """What tells this output apart in a preview that names no reference: its digest."""
        return "" if refs else self.options.wording.digest(self._digest)

    @cached_property
    def _digest(self) -> str:
        return (self.key or text_key(self.text))[:_DIGEST_CHARS]

    def _minimal(self, allocation: int) -> str:
        words, unit = self.options.wording, self.unit
        mark = words.minimal_digest(self._digest)
        if measure(mark, unit) * 100 > allocation * MIN_CONTENT_PERCENT:
            mark = words.minimal()  # too small a room for the digest and as much content
        room = allocation - measure(mark, unit)
        if room <= 0:
            return cut_prefix(mark, allocation, unit)
        for _ in range(8):
            preview = mark + cut_suffix(self.text, room, unit)
            size = measure(preview, unit)
            if size <= allocation:
                return preview
            room -= size - allocation
            if room <= 0:
                break
        return cut_prefix(mark, allocation, unit)


def _enough(piece: _Piece, allocation: int) -> bool:
    return piece.content * 100 >= allocation * MIN_CONTENT_PERCENT


# The frame that raised, shown with its exception: Python's ``File "...", line N, in f``
# and its source line (a line of carets after it is skipped), or pytest's ``>`` line.
_OPENING = re.compile(
    r"[ \t]*(?:Traceback \(most recent call last\)|During handling of the above exception"
    r"|The above exception was the direct cause)"
)
_FRAME = re.compile(r'[ \t]*File "[^"\n]*", line \d+, in ')
_CARETS = re.compile(r"[ \t]*[~^]+[ \t]*\r?")


def _frame_before(text: str, start: int, floor: int) -> list[tuple[int, int]]:
    """The spans of the frame just before the line at ``start`` (none before ``floor``):
    the frame that raised when that line is an exception's; [] when no frame ends there."""
    lines: list[tuple[int, int]] = []  # the lines before, nearest first
    end = start - 1
    while end >= floor and len(lines) < 3:
        begin = text.rfind("\n", 0, end) + 1
        if begin < floor:
            break
        lines.append((begin, end))
        end = begin - 1
    if lines and _CARETS.fullmatch(text, *lines[0]):
        del lines[0]
    if not lines:
        return []
    source = lines[0]
    if text.startswith(">", source[0]):
        return [source]
    if len(lines) > 1 and text.startswith(" ", source[0]) and _FRAME.match(text, *lines[1]):
        return [lines[1], source]
    return []
