"""Salient lines: the lines of a long output that a model most needs (errors, failures, panics).

One ``re`` pattern, the default patterns and the user's combined (``SalientPattern.regex``),
decides: a line is salient when it matches that line **alone**, from the newline before it
to its end, so ``$`` is the end of the line. Matching it at every line start costs too
much, so the scan checks only candidate lines: those holding a word every default match
contains (``_ANCHORS``), and those where the user's patterns match. The text is read in
newline-aligned pieces, giving the GIL away between them; the scan never depends on time
(its cap, ``SCAN_LIMIT``, is a size). Patterns that may cost without bound are refused
where they are configured (``check_patterns``).
"""

from __future__ import annotations

import bisect
import functools
import re
import sys
import warnings
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import compress, repeat

from budgetware.core.gil import give_way
from budgetware.core.regexcost import regex_problem

__all__ = [
    "DEFAULT_SALIENT_PATTERNS",
    "MAX_SPANS",
    "PIECE_CHARS",
    "SCAN_LIMIT",
    "SalientPattern",
    "Scanned",
    "check_patterns",
    "compile_salient",
    "salient_spans",
    "scan",
]

# Possessive quantifiers (Python 3.11+) never give back what they took: a run of
# non-spaces is matched once per line, not once per length. Python 3.10 has none; a
# negative lookahead after the run pins it the same way (backing off a character fails).
_POSSESSIVE = sys.version_info >= (3, 11)
_RUN = r"\S++" if _POSSESSIVE else r"\S+(?!\S)"
_INDENT = r"\n[ \t]*+" if _POSSESSIVE else r"\n[ \t]*(?![ \t])"

# Each entry is matched at the start of a line (after spaces and tabs), against the line
# alone. Grouped by the tool that prints them; literal prefixes first, because the engine
# rejects those fastest. ``\r?$``: a CRLF log's line ends in a carriage return.
DEFAULT_SALIENT_PATTERNS: tuple[str, ...] = (
    # Python: tracebacks, the exception line ("ValueError: ...", "pkg.Error: ..."), chains.
    r"Traceback \(most recent call last\)",
    r"During handling of the above exception",
    r"The above exception was the direct cause",
    # pytest: assertion detail lines, the short summary, verbose results, session footer.
    r"E {2,}\S",
    r"(?:FAILED|ERROR) \S",
    r"=+ (?:FAILURES|ERRORS) =+",
    r"=+ .*\b\d+ (?:failed|errors?)\b",
    # Logs and generic tools: an upper-case level first ("ERROR: ...", "FATAL ...").
    r"(?:ERROR|FATAL|FAIL|PANIC|CRITICAL|SEVERE|EMERG|ALERT)\b",
    r"\[(?:ERROR|FATAL|FAIL|PANIC|CRITICAL|SEVERE|error|fatal)\]",
    # Compilers and linters without a location (rustc, git, gcc driver, ld).
    r"(?:error|fatal error|fatal|panic)(?:\[\w+\])?:",
    r"collect2: error",
    r"undefined reference to",
    # Go: test failures, panics and their goroutine dumps.
    r"--- FAIL",
    r"goroutine \d+ \[running\]",
    # Rust: panics and failed tests.
    r"thread '[^'\n]*' panicked",
    r"test \S+ \.\.\. FAILED",
    r"test result: FAILED",
    r"failures:\r?$",
    # Node and JavaScript test runners.
    r"(?:Uncaught|Unhandled)\w*",
    r"npm (?:ERR!|error)",
    r"[●✕✗×] ",
    r"AssertionError",
    # Java and the JVM.
    r"Exception in thread",
    r"Caused by: ",
    # Shells and the system: crashes, signals, missing commands, make.
    r"Segmentation fault",
    r"Killed\r?$",
    r"Aborted",
    r"Bus error",
    r"make(?:\[\d+\])?: \*\*\*",
    # A first word that names the problem: "ValueError: x", "main.c:3:5: error: x",
    # "tests/a.py:12: AssertionError", "bash: x: command not found", "2024-01-01 ERROR x".
    # The level after a first word ends in a lookahead: the next line stays matchable.
    _RUN + r"(?:(?<=rror:)|(?<=tion:)|(?<=Error)\r?$|(?<=Exception)\r?$"
    r"|(?<=\d:) (?:fatal )?(?:error|[\w.]*Error|[\w.]*Exception)\b"
    r"|(?<=sh:) \S.*(?:not found|No such file|Permission denied)"
    r"| (?:\S+ )?(?:\[?(?:ERROR|FATAL|CRITICAL|PANIC|SEVERE)\]?|FAILED|error:|fatal:)(?=\s|$))",
)

# Every line a default pattern matches holds one of these words (case as written), and
# the scan checks only the lines that hold one; a test matches each default pattern against
# generated lines and holds the lists complete. The words are grouped by a character each
# of them holds, rare in logs where it can be (``_follow``); those of the newline are
# found only at a line start, after its indentation (``E  `` of ``E {2,}\S``, ``panic:``),
# those of ``o`` (characters common in any text) by a search of each piece.
_ANCHORS: dict[str, tuple[str, ...]] = {
    "\n": (
        "E  ",
        "panic",
        "goroutine ",
        "Traceback (most recent call last)",
        "Uncaught",
        "Unhandled",
        "Caused by: ",
        "Segmentation fault",
        "Killed",
        "Aborted",
        "undefined reference to",
        "failures:",
    ),
    # error, Error, AssertionError, collect2: error, Bus error, npm error, rror:; Exception,
    # exception (During handling, The above exception); words of common characters.
    "o": ("rror", "xception", "tion:", "not found", "No such file", "Permission denied"),
    "R": ("ERROR", "ERR!", "CRITICAL", "SEVERE", "EMERG", "ALERT"),  # ERRORS, npm ERR!
    "L": ("FAIL", "FATAL"),  # FAILED, FAILURES, --- FAIL, test result: FAILED
    "C": ("PANIC",),
    "f": ("fatal", "failed"),
    "'": ("' panicked",),  # thread 'main' panicked
    "*": (": ***",),  # make: ***, make[2]: ***
    "●": ("● ",),  # jest
    "✕": ("✕ ",),
    "✗": ("✗ ",),
    "×": ("× ",),
}

# The scan reads lines in pieces of about this many characters, each ending at a newline.
PIECE_CHARS = 1 << 18
# The most characters of one output scanned: half from its start, half from its end. A
# number, never a time: the same output always gives the same lines.
SCAN_LIMIT = 64 * 1024 * 1024

_LEADING_FLAGS = re.compile(r"(?:\(\?[aiLmsux]+\))+")
_NUMBERED_REFERENCE = re.compile(r"(?<!\\)(?:\\\\)*\\(?:[1-9]|g<\d)|\(\?\(\d")


def _scoped(pattern: str) -> str:
    """``pattern`` with its leading global flags (``(?i)``) made a scoped group (``(?i:...)``).

    Inline global flags are allowed only at the start of a whole expression, and the
    patterns are combined into one: each keeps its flags to itself this way. The verbose
    flag's comments run to the end of a line, so the group closes on a line of its own.
    """
    found = _LEADING_FLAGS.match(pattern)
    if found is None:
        return f"(?:{pattern})"
    flags = "".join(dict.fromkeys(found.group().replace("(?", "").replace(")", "")))
    close = "\n)" if "x" in flags else ")"
    return f"(?{flags}:{pattern[found.end() :]}{close}"


def check_patterns(patterns: Sequence[str]) -> None:
    """Raise ``ValueError`` (saying which pattern and why) unless ``patterns`` can be used.

    Each must compile alone, must not cost without bound (``regex_problem``: a repeat
    inside a repeat, counted repeats that multiply out, a very long pattern), and all must
    combine with the defaults into one pattern.
    """
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise ValueError("patterns must be strings")
        try:
            with warnings.catch_warnings():
                # Python 3.10 only warns for what 3.11 refuses (flags not at the start).
                warnings.simplefilter("error", DeprecationWarning)
                re.compile(pattern)
            problem = regex_problem(pattern)
        except (re.error, DeprecationWarning) as exc:
            raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
        if problem is not None:
            raise ValueError(f"{pattern!r} may take unbounded time: {problem}")
    try:
        _combine(tuple(patterns), True)
    except re.error as exc:
        raise ValueError(f"the patterns cannot be combined into one: {exc}") from None


def _combine(patterns: tuple[str, ...], check_references: bool) -> re.Pattern[str]:
    groups = 0
    parts = []
    for pattern in patterns:
        compiled = re.compile(pattern)
        if check_references and groups and _NUMBERED_REFERENCE.search(pattern):
            # Combined, a pattern's groups are numbered after those of the ones before it.
            raise re.error(
                f"{pattern!r} refers to a group by number; use a named group "
                "((?P<name>...) and (?P=name))"
            )
        groups += compiled.groups
        parts.append(_scoped(pattern))
    return re.compile(_INDENT + "(?:" + "|".join(parts) + ")", re.MULTILINE)


@dataclass(frozen=True)
class SalientPattern:
    """The salient-line matcher of one configuration.

    ``regex`` is the truth: a line is salient when it matches that line alone. ``extra``
    matches the user's patterns alone (the scan's candidates for them), None when
    there are none.
    """

    regex: re.Pattern[str]
    extra: re.Pattern[str] | None


@functools.lru_cache(maxsize=32)
def compile_salient(extra: tuple[str, ...] = ()) -> SalientPattern:
    """The default salient-line patterns plus ``extra`` ones.

    Raises ``ValueError`` for patterns that ``check_patterns`` refuses (configuration
    checks them where it is set up).
    """
    check_patterns(extra)
    return SalientPattern(
        regex=_combine(DEFAULT_SALIENT_PATTERNS + extra, False),
        extra=_combine(extra, False) if extra else None,
    )


# -- finding the lines ----------------------------------------------------------------------


# The most spans one scan keeps: the first half and the last half of them (a log whose
# every line is an error keeps memory bounded; a preview shows both ends anyway).
MAX_SPANS = 1 << 20


def salient_spans(
    text: str, start: int, end: int, pattern: SalientPattern
) -> list[tuple[int, int]]:
    """The ``(start, end)`` of every whole line inside ``text[start:end]`` that is salient.

    ``end`` excludes the newline. Lines are in order; a line cut by either bound is skipped;
    past ``MAX_SPANS`` lines, the first and the last halves of them.
    """
    return list(zip(*_span_arrays(text, start, end, pattern)))


def _span_arrays(
    text: str, start: int, end: int, pattern: SalientPattern
) -> tuple[array[int], array[int]]:
    """The spans of ``salient_spans`` as two arrays, their starts and their ends: no object
    per line (a log whose every line is an error has a million of them)."""
    start = max(start, 0)
    end = min(end, len(text))
    starts: array[int] = array("q")
    ends: array[int] = array("q")
    if start >= end or text.find("\n", start, end) == -1:
        return starts, ends  # no line ends inside: none is wholly inside
    regex = pattern.regex
    if start == 0:
        first = text.find("\n", 0, end)
        if regex.match("\n" + text[:first]):
            starts.append(0)
            ends.append(first)
    for piece_start, piece_end in _pieces(text, start, end):
        breaks = _candidates(text, piece_start, piece_end)
        if pattern.extra is not None:
            breaks.update(_search(text, piece_start, piece_end, start, pattern.extra))
        _check(text, sorted(breaks), start, end, regex, starts, ends)
        if len(starts) > 2 * MAX_SPANS:
            _trim(starts, ends)  # at twice the bound: a trim is paid once a bound
    _trim(starts, ends)
    return starts, ends


def _trim(starts: array[int], ends: array[int]) -> None:
    """Past ``MAX_SPANS`` spans, the first and the last half of them: the middle goes."""
    half = max(MAX_SPANS // 2, 1)
    over = len(starts) - 2 * half
    if over > 0:
        del starts[half : half + over]
        del ends[half : half + over]


def _pieces(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """``[start, end)`` in pieces of about ``PIECE_CHARS``, each ending after a newline.

    No line crosses a piece: each piece holds whole lines (the last one may run past
    ``end``). Each search covers one piece, and between pieces the scanning thread gives
    the GIL away (``gil.give_way``): an event loop waiting for it runs at once.
    """
    position = start
    find = text.find
    while position < end:
        stop = find("\n", min(position + PIECE_CHARS, end - 1), end)
        stop = end if stop == -1 else stop + 1
        yield position, stop
        position = stop
        if position < end:
            give_way()


def _search(
    text: str, piece_start: int, piece_end: int, start: int, regex: re.Pattern[str]
) -> list[int]:
    """The newlines before the lines of one piece where ``regex`` (the user's patterns)
    matches.

    ``endpos`` is the piece's last newline, where ``$`` matches as at the end of the line.
    After a match the search goes on at the end of its line, so every line start is tried.
    """
    found: list[int] = []
    search = regex.search
    find = text.find
    stop = piece_end - 1 if text[piece_end - 1] == "\n" else piece_end
    position = piece_start - 1 if piece_start > 0 else 0
    while True:
        hit = search(text, position, stop)
        if hit is None:
            return found
        before = hit.start()
        if before >= start - 1:
            found.append(before)
        position = find("\n", before + 1, stop)
        if position == -1:
            return found


# A key character is left to a search for the rest of its piece after this many
# occurrences, plus one per this many characters of the piece.
_TRIES = 64
_SPARSE = 2048


def _candidates(text: str, piece_start: int, piece_end: int) -> set[int]:
    """The newlines before the lines of ``[piece_start, piece_end)`` that hold an anchor
    word (-1 before the first line; no word holds a newline, so one that starts in the
    piece ends in it)."""
    found: set[int] = set()
    ascii_only = text.isascii()  # a flag of the string: no scan
    for key, words in _ANCHORS.items():
        if key in "\no":  # characters of any text: a search of the whole piece
            _search_words(text, key, words, piece_start, piece_end, found)
        elif key.isascii() or not ascii_only:
            _follow(text, key, words, piece_start, piece_end, found)
    return found


def _follow(
    text: str, key: str, words: tuple[str, ...], piece_start: int, piece_end: int, found: set[int]
) -> None:
    """Add the lines that hold one of ``words`` by their ``key``, a character rare in logs:
    ``str.find`` of one character is a memchr, so a piece without it costs next to nothing;
    each occurrence is tried in Python until they prove denser than in logs, and then the
    rest of the piece is left to a search."""
    offsets = [(word.index(key), word) for word in words]
    left = _TRIES + (piece_end - piece_start) // _SPARSE
    find, rfind, startswith = text.find, text.rfind, text.startswith
    at = find(key, piece_start, piece_end)
    while at >= 0:
        left -= 1
        if left < 0:
            _search_words(text, key, words, at, piece_end, found)
            return
        for offset, word in offsets:
            begin = at - offset
            if begin >= piece_start and startswith(word, begin):
                found.add(rfind("\n", 0, begin))
                at = find("\n", at, piece_end)  # the rest of the line: found
                break
        if at >= 0:
            at = find(key, at + 1, piece_end)


def _search_words(
    text: str, key: str, words: tuple[str, ...], position: int, piece_end: int, found: set[int]
) -> None:
    """Add the newlines before the lines of ``[position, piece_end)`` that hold one of
    ``words`` (each holds ``key``; the newline's: at a line start, after its indentation).
    C-level maps: no Python step per line."""
    matches = _keyed(key, words).finditer
    if key == "\n":  # from the newline before the piece's first line (line 0 has none)
        found.update(map(_START, matches(text, max(position - 1, 0), piece_end)))
        return
    at = map(_START, matches(text, position, piece_end))
    found.update(map(text.rfind, repeat("\n"), repeat(0), at))


_START = re.Match.start


@functools.lru_cache(maxsize=32)
def _keyed(key: str, words: tuple[str, ...]) -> re.Pattern[str]:
    """A search for any of ``words`` that starts at ``key``, a character each of them holds
    (the part of a word before it is a lookbehind), and takes the rest of the line: every
    branch starts with the key, so the engine looks for it in its tight loop. The newline's
    search finds the words after a line start and its indentation."""
    if key == "\n":
        return re.compile(_INDENT + "(?:" + "|".join(map(re.escape, words)) + ")[^\n]*")
    branches = []
    for word in words:
        at = word.index(key)
        behind = f"(?<={re.escape(word)})" if at else ""
        branches.append(re.escape(word[at + 1 :]) + behind)
    return re.compile(re.escape(key) + "(?:" + "|".join(branches) + ")[^\n]*")


# Candidate lines checked per call (C-level maps: no Python step, no switch of threads).
_BATCH = 256


def _check(
    text: str,
    breaks: Sequence[int],
    start: int,
    end: int,
    regex: re.Pattern[str],
    starts: array[int],
    ends: array[int],
) -> None:
    """Add the candidates (the newlines before them, in order) whose lines are wholly inside
    and salient: each line matched alone, from the newline before it to its end. C-level
    maps and ``compress`` take no Python step per line, ``_BATCH`` lines a call, and make
    no object per line kept (its start and end go to the arrays)."""
    first = bisect.bisect_left(breaks, max(start - 1, 0))  # the first line is checked already
    match = regex.match
    find = text.find
    for at in range(first, len(breaks), _BATCH):
        batch = breaks[at : at + _BATCH]
        stops = list(map(find, repeat("\n"), map(_AFTER, batch), repeat(end)))
        whole = stops[-1] >= 0
        if not whole:  # the last lines run past ``end``: not wholly inside
            cut = stops.index(-1)
            batch, stops = batch[:cut], stops[:cut]
        matched = list(map(match, repeat(text), batch, stops))
        starts.extend(map(_AFTER, compress(batch, matched)))
        ends.extend(compress(stops, matched))
        if not whole:
            return


_AFTER = (1).__add__


# -- the whole output ----------------------------------------------------------------------


class Scanned:
    """The salient lines of one output (its spans as two arrays), as ``scan`` returns them:
    ``distinct`` gives a bounded selection of them without a list of every span."""

    __slots__ = ("ends", "starts")

    def __init__(self, starts: array[int], ends: array[int]) -> None:
        self.starts = starts
        self.ends = ends

    def distinct(self, text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
        """Spans inside ``[start, end)`` of distinct lines (their text without trailing
        whitespace), in order: the first ``limit`` distinct lines from the start, each at
        its first occurrence, then up to ``limit`` more from the end, each at its last
        occurrence; every distinct line when there are no more than ``2 * limit``.

        The walk from the start stops once it has ``limit`` lines, the walk from the end
        where that one stopped, so a log of a million distinct errors is not read whole.
        """
        starts, ends = self.starts, self.ends
        first = bisect.bisect_left(starts, start)
        last = max(first, bisect.bisect_left(ends, end))  # ends ascend: lines do not overlap
        seen: dict[str, int] = {}  # each line kept: its index
        at = first
        while at < last and len(seen) < limit:
            seen.setdefault(text[starts[at] : ends[at]].rstrip(), at)
            at += 1
        kept = list(seen.values())
        # Every line before the last one kept is one of those kept: the walk from the end
        # stops there.
        floor = kept[-1] + 1 if len(kept) == limit else last
        tail: list[int] = []
        at = last
        while at > floor and len(tail) < limit:
            at -= 1
            line = text[starts[at] : ends[at]].rstrip()
            if line not in seen:
                seen[line] = at
                tail.append(at)
        kept += reversed(tail)
        return [(starts[i], ends[i]) for i in kept]


def scan(text: str, pattern: SalientPattern) -> Scanned:
    """The salient lines of all of ``text`` (up to ``SCAN_LIMIT``: half from each end), as a
    ``Scanned``: a bounded choice of distinct ones in any range."""
    if len(text) <= SCAN_LIMIT:
        return Scanned(*_span_arrays(text, 0, len(text), pattern))
    half = SCAN_LIMIT // 2
    starts, ends = _span_arrays(text, 0, half, pattern)
    more_starts, more_ends = _span_arrays(text, len(text) - half, len(text), pattern)
    return Scanned(starts + more_starts, ends + more_ends)
