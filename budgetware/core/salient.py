"""Salient lines: the lines of a long output that a model most needs (errors, failures, panics).

One pattern is the single source of truth: the default patterns and the user's, combined
into one ``re`` pattern anchored at line starts (``SalientPattern.regex``). A line is
salient when that pattern matches it **alone**: ``regex.match(text, start - 1, end)``, from
the newline before the line to the line's end, so ``$`` and ``\\Z`` are the end of the line
and nothing after it is seen. Each pattern is matched like ``re.match`` against a line after
its indentation; start one with ``.*?`` to find a word anywhere in a line (it costs more).

Finding the lines (``salient_spans``, ``scan``) is one of three ways that give the same
spans, in newline-aligned pieces of 256 KiB (between them the scanning thread gives the GIL
away, so a worker scanning a large output lets an event loop run):

- **anchor words, pure Python** (the default patterns, always there): words that every
  default match contains (``_ANCHORS``: a test holds them complete) are found by a plan
  made from how dense their characters are in a piece (``_Words``): a word with a sparse
  character is followed by it (``str.find`` of one character is a memchr; one memchr per
  character rules out or finds all the words that hold it), the others by ``re`` searches
  keyed on a character they share (one pass finds ``rror``, ``tion:``, ``goroutine`` ...
  from their ``o``), or at line starts only (``E  ``, ``panic:``: one search of the
  newlines); each search call covers at most ``_FIND_CHARS`` characters; only the lines
  that hold a word are checked alone as above;
- **an accelerator** (``budgetware[fast]``, hyperscan, imported lazily): the same words,
  all at once in C;
- **the combined ``re`` pattern searched** at every line start, for user patterns (they
  are not read for words): with the defaults, their candidates are added to the words'.

All check every candidate with the same combined pattern, so replicas with and without
the accelerator make byte-identical previews (tests compare the ways on varied corpora).
A scan never depends on time: no timeout, no sampling; its size cap (``SCAN_LIMIT``) is a
number of characters. User patterns that may cost without bound are refused where they
are configured (``check_patterns``, with ``core/regexcost.regex_problem``).
"""

from __future__ import annotations

import bisect
import functools
import re
import sys
import threading
import warnings
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import compress, islice, repeat
from typing import Any

from budgetware.core.gil import give_way
from budgetware.core.regexcost import regex_problem

__all__ = [
    "DEFAULT_SALIENT_PATTERNS",
    "MAX_SPANS",
    "PIECE_CHARS",
    "SCAN_LIMIT",
    "SalientPattern",
    "Scanned",
    "accelerator",
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

# Words at least one of which every line that a default pattern matches contains (case as
# written): the scan looks for these and checks only the lines that hold one. A test
# matches each default pattern against generated lines and holds this list complete.
# Longer words are found faster (a find skips ahead by about their length).
_ANCHORS: tuple[str, ...] = (
    "rror",  # error, Error, AssertionError, collect2: error, Bus error, npm error, rror:
    "ERROR",  # ERROR, ERRORS, [ERROR]
    "ERR!",  # npm ERR!
    "FAIL",  # FAIL, FAILED, FAILURES, --- FAIL, test result: FAILED
    "FATAL",
    "fatal",
    "PANIC",
    "panic",  # panic:, panicked
    "' panicked",  # thread 'main' panicked (the pure-Python scan looks for panic: at line starts)
    "CRITICAL",
    "SEVERE",
    "EMERG",
    "ALERT",
    "Traceback (most recent call last)",
    "xception",  # Exception, exception (During handling, The above exception)
    "E  ",  # pytest's assertion lines
    "failed",
    "failures:",
    "undefined reference to",
    "goroutine ",
    "Uncaught",
    "Unhandled",
    "● ",  # jest
    "✕ ",
    "✗ ",
    "× ",
    "Caused by: ",
    "Segmentation fault",
    "Killed",
    "Aborted",
    ": ***",  # make: ***, make[2]: ***
    "tion:",
    "not found",
    "No such file",
    "Permission denied",
)

# Anchors that the default patterns need only at the start of a line, right after its
# indentation (``E  `` of ``E {2,}\S``, ``panic:``, ``goroutine 1 [running]``, ...; ``panic``
# elsewhere in a line is ``' panicked``): the pure-Python scan may look for these at line
# starts only, all of them in one search. A test holds every default match to this.
_AT_LINE_START = frozenset(
    {
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
    }
)

# The scan reads lines in pieces of about this many characters, each ending at a newline.
PIECE_CHARS = 1 << 18
# The most characters of one output scanned: half from its start, half from its end. A
# number, never a time: the same output always gives the same lines.
SCAN_LIMIT = 64 * 1024 * 1024

_LEADING_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")
_NUMBERED_REFERENCE = re.compile(r"(?<!\\)(?:\\\\)*\\(?:[1-9]|g<\d)|\(\?\(\d")


def _scoped(pattern: str) -> str:
    """``pattern`` with its leading global flags (``(?i)``) made a scoped group (``(?i:...)``).

    Inline global flags are allowed only at the start of a whole expression, and the
    patterns are combined into one: each keeps its flags to itself this way. The verbose
    flag's comments run to the end of a line, so the group closes on a line of its own.
    """
    flags = ""
    rest = pattern
    while True:
        found = _LEADING_FLAGS.match(rest)
        if found is None:
            break
        flags += found.group(1)
        rest = rest[found.end() :]
    if not flags:
        return f"(?:{pattern})"
    flags = "".join(dict.fromkeys(flags))
    close = "\n)" if "x" in flags else ")"
    return f"(?{flags}:{rest}{close}"


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
    matches the user's patterns alone (the accelerator's candidates for them), None when
    there are none; ``defaults`` whether the default patterns are part of ``regex``;
    ``name`` identifies the patterns (cache keys).
    """

    regex: re.Pattern[str]
    extra: re.Pattern[str] | None
    defaults: bool
    name: tuple[object, ...] = field(default=())


@functools.lru_cache(maxsize=32)
def compile_salient(extra: tuple[str, ...] = (), defaults: bool = True) -> SalientPattern | None:
    """The default salient-line patterns plus ``extra`` ones, or None if there are none.

    Raises ``ValueError`` for patterns that ``check_patterns`` refuses (configuration
    checks them where it is set up).
    """
    extra = tuple(extra)
    if not extra and not defaults:
        return None
    check_patterns(extra)
    patterns = (DEFAULT_SALIENT_PATTERNS if defaults else ()) + extra
    return SalientPattern(
        regex=_combine(patterns, False),
        extra=_combine(extra, False) if extra else None,
        defaults=defaults,
        name=(defaults, extra),
    )


# -- finding the lines ----------------------------------------------------------------------


# The most spans one scan returns: the first half and the last half of them (a log whose
# every line is an error keeps memory bounded; a preview shows both ends anyway).
MAX_SPANS = 1 << 20


def salient_spans(
    text: str, start: int, end: int, pattern: SalientPattern
) -> list[tuple[int, int]]:
    """The ``(start, end)`` of every whole line inside ``text[start:end]`` that is salient.

    ``end`` excludes the newline. Lines are in order; a line cut by either bound is skipped;
    past ``MAX_SPANS`` lines, the first and the last halves of them. Uses the accelerator
    when it is installed (the same spans either way).
    """
    return _spans(text, start, end, pattern, accelerator())


def _spans(
    text: str, start: int, end: int, pattern: SalientPattern, fast: _Accelerator | None
) -> list[tuple[int, int]]:
    starts, ends = _span_arrays(text, start, end, pattern, fast)
    return list(zip(starts, ends))


def _span_arrays(
    text: str, start: int, end: int, pattern: SalientPattern, fast: _Accelerator | None
) -> tuple[array[int], array[int]]:
    """The spans of ``_spans`` as two arrays, their starts and their ends: 16 bytes a line
    and no object per line (a log whose every line is an error has a million of them)."""
    start = max(start, 0)
    end = min(end, len(text))
    spans = _Collected(MAX_SPANS)
    if start >= end or text.find("\n", start, end) == -1:
        return spans.arrays()  # no line ends inside: none is wholly inside
    regex = pattern.regex
    if start == 0:
        first = text.find("\n", 0, end)
        if regex.match("\n" + text[:first]):
            spans.extend((0,), (first,))
    words = _Words() if fast is None and pattern.defaults else None
    for piece_start, piece_end in _pieces(text, start, end):
        if fast is not None and pattern.defaults:
            lines = fast.candidates(text, piece_start, piece_end)
        elif words is not None:
            lines = words.candidates(text, piece_start, piece_end)
        else:
            lines = _search(text, piece_start, piece_end, start, regex)
        if pattern.defaults and pattern.extra is not None:
            extra = _search(text, piece_start, piece_end, start, pattern.extra)
            lines = sorted(set(lines).union(extra))
        _check(text, lines, start, end, regex, spans)
    return spans.arrays()


def _pieces(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """``[start, end)`` in pieces of about ``PIECE_CHARS``, each ending after a newline.

    No line crosses a piece: each piece holds whole lines (the last one may run past
    ``end``). Between pieces the scanning thread gives the GIL away (``gil.give_way``,
    which reads no clock and decides nothing): a thread waiting for it, an event loop,
    runs at once instead of after the interpreter's switch interval (5 ms).
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
    """Starts of the lines of one piece where ``regex`` matches within the piece.

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
        line = hit.start() + 1
        if line >= start:
            found.append(line)
        position = find("\n", line, stop)
        if position == -1:
            return found


# -- the pure-Python prefilter: the anchors by memchr and keyed searches --------------------

# Characters from the rarest in logs to the most common (a guess, never a result: any
# order finds the same lines): it orders a word's characters, and breaks ties.
_RARITY = (
    "●✕✗×*!'`\"#()QZXJKVWYBGUMHFLPCDNRIOTSAEqzxjkvbpygfwmucldrhsnioate"
    "0123456789$%&+,-./;<=>?@[]^_{|}~:\t "
)
_RANK = {char: rank for rank, char in enumerate(_RARITY)}
# A character is followed in Python (``str.find`` from one occurrence to the next, and the
# words that hold it tried there) while it is sparser than one in this many characters of
# a piece; the words that hold only denser characters are found by searches in C.
_SPARSE = 2048
# Densities are estimated from the occurrences in this many characters of a piece, in
# windows spread over it.
_WINDOW = 8192
_WINDOWS = 4
# The rarest characters of a word that may be followed to find it.
_PROBE_CHARS = 4
# Costs, in characters passed by a search (about 0.4 ns each): per occurrence of a search's
# key (where the engine leaves its tight loop to try the words there), of a key that one
# word holds with two characters or more after it (left at once), and per line start for
# the search of words at line starts; a memchr per character; a Python step (a find and a
# startswith) per occurrence of a followed character.
_KEY_COST = 80
_LOOP_COST = 40
_LINE_COST = 112
_MEMCHR = 1 / 16
_STEP = 1500
# A followed character is given up for a search (in that piece) after this many more
# misses than twice its estimated occurrences.
_MISSES = 64
# The plan (which character finds which words) is made again after this many pieces, or
# at once where a followed character turns out denser than it looked.
_PLAN_PIECES = 16
# The search of words at line starts allows this much indentation before one (a line
# indented more is a candidate whatever it holds), so its matches are short.
_INDENT_CAP = 64
# Pieces smaller than this use one plan made once (``_small_plan``), which takes these
# characters as sparse (rare in logs) and all others as dense.
_SMALL = 1 << 16
_SMALL_SPARSE = frozenset("●✕✗×*!'`\"#()QZXJKVWYBGUMHFLPCDNqzxjkvbpygfw")
# A search is capped at this many characters per call, and a memchr at 8 times as many, so
# no call holds the GIL for long even in a piece that is one huge line; the matches of a
# search and the checks of candidate lines are taken at most this many a call (C-level
# maps: no Python step, but no switch to another thread either).
_FIND_CHARS = 1 << 18
_BATCH = 256


def _chars(word: str) -> tuple[str, ...]:
    """The distinct characters of ``word``, the rarest (by ``_RARITY``) first."""
    return tuple(sorted(set(word), key=lambda char: (_RANK.get(char, -1), char)))


# Each anchor with its characters, the rarest first.
_WORDS = tuple((word, _chars(word)) for word in _ANCHORS)


def _masks(pairs: Iterable[tuple[str, int]]) -> dict[str, int]:
    masks: dict[str, int] = {}
    for char, index in pairs:
        masks[char] = masks.get(char, 0) | 1 << index
    return masks


# Sets of anchors as bits (by index in _WORDS): for each character the anchors that hold
# it; those looked for at line starts; all; those an ASCII output can hold (``str.isascii``
# tells in constant time).
_HOLDERS = _masks((char, i) for i, (_, chars) in enumerate(_WORDS) for char in chars)
_LINE_STARTS = sum(1 << i for i, (word, _) in enumerate(_WORDS) if word in _AT_LINE_START)
_ALL = (1 << len(_WORDS)) - 1
_ASCII = sum(1 << i for i, (word, _) in enumerate(_WORDS) if word.isascii())


def _bits(mask: int) -> list[int]:
    """The indexes of the bits set in ``mask``, in order."""
    return [index for index in range(mask.bit_length()) if mask >> index & 1]


def _words(mask: int) -> tuple[str, ...]:
    """The anchors whose bits are set in ``mask``, sorted."""
    return tuple(sorted(_WORDS[index][0] for index in _bits(mask)))


@functools.lru_cache(maxsize=256)
def _keyed(key: str, words: tuple[str, ...]) -> tuple[re.Pattern[str], int]:
    """A search for any of ``words`` (each holds ``key``; the newline: at line starts), and
    how long the part of a match before the rest of its line is at most.

    A match starts at the key's first place in the word and holds the rest of the word and
    of its line (the next match is on another line); the part of the word before the key
    is a lookbehind. Every branch starts with the key, so the engine looks for it in its
    tight loop (the literal prefix of the pattern); the rests of the words after it are a
    tree by their characters, tried only where the key is. The newline's search: the
    newline, the indentation (up to ``_INDENT_CAP``, or a line indented more), a word.
    """
    if key == "\n":
        cap = _INDENT_CAP
        body = _tree([(word, word, False) for word in words])
        if _POSSESSIVE:
            pattern = f"\\n[ \\t]{{0,{cap}}}+(?:{body}|[ \\t])[^\\n]*"
        else:
            pattern = f"\\n(?:[ \\t]{{0,{cap}}}(?![ \\t]){body}|[ \\t]{{{cap}}})[^\\n]*"
        return re.compile(pattern), 1 + cap + max(map(len, words))
    items = []
    longest = 1
    for word in words:
        at = word.index(key)
        items.append((word[at + 1 :], word, at > 0))
        longest = max(longest, len(word) - at)
    return re.compile(re.escape(key) + _tree(items) + "[^\\n]*"), longest


def _tree(items: list[tuple[str, str, bool]]) -> str:
    """An expression for the rests of words: (rest, word, whether it needs a lookbehind)."""
    branches = []
    by_next: dict[str, list[tuple[str, str, bool]]] = {}
    for rest, word, behind in items:
        if rest:
            by_next.setdefault(rest[0], []).append((rest[1:], word, behind))
        else:
            branches.append(f"(?<={re.escape(word)})" if behind else "")
    if "" in branches:
        return ""  # a word ends here: whatever follows, a match
    for char, group in sorted(by_next.items()):
        if len(group) == 1:
            rest, word, behind = group[0]
            branches.append(re.escape(char + rest) + (f"(?<={re.escape(word)})" if behind else ""))
        else:
            branches.append(re.escape(char) + _tree(group))
    return "(?:" + "|".join(branches) + ")"


def _floor(text: str, piece_start: int) -> int:
    """Where a piece's line starts are looked for backwards from: the newline before it
    (a line found to start at ``floor + 1`` or later), or the piece's start where a range
    starts inside a line (whose first line is not whole: found as line 0, never checked)."""
    if piece_start and text[piece_start - 1] == "\n":
        return piece_start - 1
    return piece_start


def _search_words(
    text: str,
    key: str,
    words: tuple[str, ...],
    position: int,
    piece_end: int,
    floor: int,
    found: set[int],
) -> None:
    """Add the starts of the lines of ``[position, piece_end)`` that hold one of ``words``;
    ``floor`` is the newline before the line of ``position`` (see ``_floor``).

    The matches of a slice of at most ``_FIND_CHARS`` characters (and of a match's start
    past it) come ``_BATCH`` at a time, their line starts from C-level maps (one ``rfind``
    back to the line's newline each, never past the last newline of the slice before): no
    Python step per match. Slices overlap by less than a match's start, so every match of
    a line starts in one of them.
    """
    pattern, longest = _keyed(key, words)
    finditer = pattern.finditer
    rfind = text.rfind
    if key == "\n":
        position = floor  # the newline before the first line
    while position < piece_end:
        stop = min(position + _FIND_CHARS, piece_end)
        matches = map(_START, finditer(text, position, min(stop + longest - 1, piece_end)))
        while True:
            starts = list(islice(matches, _BATCH))
            lines = starts if key == "\n" else map(rfind, repeat("\n"), repeat(floor), starts)
            found.update(map(_NEXT, lines))
            if len(starts) < _BATCH:
                break
        last = rfind("\n", position, stop)
        if last >= 0:
            floor = last
        position = stop


_START = re.Match.start
_NEXT = (1).__add__


# A plan: the characters followed, each with the misses (occurrences that start no word)
# after which it is given up for a search, and its words grouped by the character's offset
# in them; and the searches, each a key and the words it finds.
_Follow = tuple[str, int, tuple[tuple[int, tuple[str, ...]], ...]]
_Plan = tuple[tuple[_Follow, ...], tuple[tuple[str, tuple[str, ...]], ...]]


class _Words:
    """Candidate lines of one scan: the lines that hold an anchor, found piece by piece.

    A plan covers every anchor: each is either followed by one of its characters, in
    Python (``str.find`` of one character, a memchr, from one occurrence to the next, and
    the words that hold the character tried there with ``startswith``; a character that is
    not in a piece costs one memchr, whatever number of words it rules out), or found by a
    search in C (``_search_words``), one search for all the words that share its key (or,
    for words of ``_AT_LINE_START``, the newline). The plan is made from how dense
    characters are in windows of a piece (``_plan``) and kept for ``_PLAN_PIECES`` pieces:
    it only picks the way of finding, every plan finds the same lines.
    """

    __slots__ = ("_ascii", "_pieces", "_plan")

    def __init__(self) -> None:
        self._ascii: bool | None = None
        self._plan: _Plan | None = None
        self._pieces = 0

    def candidates(self, text: str, piece_start: int, piece_end: int) -> list[int]:
        """Starts of the lines of ``[piece_start, piece_end)`` holding an anchor, in order.

        No anchor holds a newline: an anchor that starts in the piece ends in it (pieces
        end after a newline, or at the end of the range, where a line is not whole).
        """
        if self._ascii is None:
            self._ascii = text.isascii()
        if piece_end - piece_start < _SMALL:
            plan = _small_plan(self._ascii)
        else:
            if self._plan is None or self._pieces <= 0:
                self._plan = _plan(text, piece_start, piece_end, self._ascii)
                self._pieces = _PLAN_PIECES
            self._pieces -= 1
            plan = self._plan
        follows, searches = plan
        found: set[int] = set()
        find = text.find
        rfind = text.rfind
        startswith = text.startswith
        floor = _floor(text, piece_start)
        huge = piece_end - piece_start > 8 * _FIND_CHARS
        for char, limit, groups in follows:
            misses = 0
            at = (
                _find(find, char, piece_start, piece_end)
                if huge
                else find(char, piece_start, piece_end)
            )
            while at >= 0:
                for offset, words in groups:
                    begin = at - offset
                    if begin >= piece_start and startswith(words, begin):
                        found.add(rfind("\n", floor, begin) + 1)
                        at = find("\n", at, piece_end)  # the rest of the line: found
                        break
                else:
                    misses += 1
                    if misses > limit:
                        # Denser than it looked: the rest of the piece by a search, and a
                        # new plan for the next piece.
                        every = tuple(sorted({word for _, group in groups for word in group}))
                        start = max(piece_start, at - max(map(len, every)))
                        before = rfind("\n", floor, start)
                        line = before if before >= 0 else floor
                        _search_words(text, char, every, start, piece_end, line, found)
                        self._pieces = 0
                        break
                if at >= 0:
                    at = (
                        _find(find, char, at + 1, piece_end)
                        if huge
                        else find(char, at + 1, piece_end)
                    )
        for key, words in searches:
            _search_words(text, key, words, piece_start, piece_end, floor, found)
        return sorted(found)


def _find(find: Callable[..., int], char: str, position: int, end: int) -> int:
    """``find(char, position, end)`` in calls of at most 8 times ``_FIND_CHARS``."""
    while True:
        stop = min(position + 8 * _FIND_CHARS, end)
        at = find(char, position, stop)
        if at >= 0 or stop >= end:
            return at
        position = stop


def _plan(text: str, piece_start: int, piece_end: int, ascii_only: bool) -> _Plan:
    """A plan for pieces like ``[piece_start, piece_end)``, from how dense characters are
    in windows spread over it: each character's count there, to a power of two (a plan
    is made once per set of such levels)."""
    size = max(piece_end - piece_start, 1)
    step = max(size // _WINDOWS, 1)
    width = max(min(_WINDOW // _WINDOWS, step), 1)
    sample = "".join(
        [
            text[start : min(start + width, piece_end)]
            for start in range(piece_start, piece_end, step)
        ]
    )
    count = sample.count
    levels = tuple(count(char).bit_length() for char in _SAMPLED)
    return _planned(levels, size.bit_length(), len(sample).bit_length(), ascii_only)


# The characters whose densities make a plan: those of the anchors, and the newline.
_SAMPLED = (*sorted(_HOLDERS), "\n")


@functools.lru_cache(maxsize=64)
def _planned(levels: tuple[int, ...], size: int, sample: int, ascii_only: bool) -> _Plan:
    """The plan for these levels of counts in a sample (its length and the piece's to a
    power of two, as ``bit_length``): a count of level ``n`` is about ``1.5 * 2**(n-1)``,
    one of level 0 half an occurrence."""
    piece = 1 << (size - 1) if size else 1
    scale = piece / (1 << (sample - 1) if sample else 1)
    densities = {
        char: (1.5 * (1 << (level - 1)) if level else 0.5) * scale
        for char, level in zip(_SAMPLED, levels)
    }
    return _cover(densities.__getitem__, piece, ascii_only)


@functools.lru_cache(maxsize=2)
def _small_plan(ascii_only: bool) -> _Plan:
    """The plan of small pieces, made once: the characters of ``_SMALL_SPARSE`` taken as
    sparse, all others as dense (a plan made from densities costs more than it saves in
    a piece this small)."""
    size = _SMALL

    def density(char: str) -> float:
        return 0.5 if char in _SMALL_SPARSE else size / 8

    return _cover(density, size, ascii_only)


def _cover(density: Callable[[str], float], size: int, ascii_only: bool) -> _Plan:
    """How to find every anchor in a piece of ``size`` characters with these densities.

    The words that hold no sparse character are found by searches: repeatedly the key that
    finds the most of them for the least cost (a pass over the piece, plus a step per
    occurrence of the key). The others by followed characters: for each, the one of its
    rarest characters that finds or rules out the most of the words left for the least
    cost (a memchr over the piece, plus a Python step per occurrence).
    """
    eligible = _ASCII if ascii_only else _ALL
    sparse = size / _SPARSE
    dense = 0
    for index in _bits(eligible):
        if all(density(char) > sparse for char in _WORDS[index][1]):
            dense |= 1 << index
    searches = []
    left = dense
    keys = sorted(
        {char for index in _bits(dense) for char in _WORDS[index][1]},
        key=lambda char: (_RANK.get(char, -1), char),
    )
    if dense & _LINE_STARTS:
        keys.append("\n")
    while left:
        best: tuple[float, str, int] | None = None
        for key in keys:
            holders = (_LINE_STARTS if key == "\n" else _HOLDERS[key]) & left
            if not holders:
                continue
            n = holders.bit_count()
            each = _KEY_COST
            if key == "\n":
                each = _LINE_COST
            elif n == 1:
                word = _WORDS[holders.bit_length() - 1][0]
                each = _LOOP_COST if len(word) - word.index(key) >= 2 else _KEY_COST
            cost = (size + each * density(key)) / n
            if best is None or cost < best[0]:
                best = (cost, key, holders)
        assert best is not None
        _, key, holders = best
        searches.append((key, _words(holders)))
        left &= ~holders
    follows = []
    left = eligible & ~dense
    for index in _bits(left):
        if not left >> index & 1:
            continue  # followed already, by a character of another word
        choice: tuple[float, str, int] | None = None
        for char in _WORDS[index][1][:_PROBE_CHARS]:
            if density(char) > sparse:
                continue
            holders = _HOLDERS[char] & left
            cost = (_MEMCHR * size + _STEP * density(char)) / holders.bit_count()
            if choice is None or cost < choice[0]:
                choice = (cost, char, holders)
        if choice is None:  # sparse only past its rarest characters: by a search
            char = _WORDS[index][1][0]
            holders = _HOLDERS[char] & left
            searches.append((char, _words(holders)))
            left &= ~holders
            continue
        _, char, holders = choice
        by_offset: dict[int, list[str]] = {}
        for word in _words(holders):
            by_offset.setdefault(word.index(char), []).append(word)
        limit = int(2 * density(char)) + _MISSES
        groups = tuple((at, tuple(group)) for at, group in sorted(by_offset.items()))
        follows.append((char, limit, groups))
        left &= ~holders
    return tuple(follows), tuple(searches)


def _check(
    text: str,
    lines: Sequence[int],
    start: int,
    end: int,
    regex: re.Pattern[str],
    spans: _Collected,
) -> None:
    """Add the candidates (line starts, in order) whose lines are wholly inside and salient:
    each line matched alone, from the newline before it to its end. C-level maps and
    ``compress`` take no Python step per line, ``_BATCH`` lines a call, and make no object
    per line kept (its start and end go to arrays)."""
    first = bisect.bisect_left(lines, max(start, 1))  # the first line is checked already
    match = regex.match
    find = text.find
    for at in range(first, len(lines), _BATCH):
        batch = lines[at : at + _BATCH]
        ends = list(map(find, repeat("\n"), batch, repeat(end)))
        whole = ends[-1] >= 0
        if not whole:  # the last lines run past ``end``: not wholly inside
            cut = ends.index(-1)
            batch, ends = batch[:cut], ends[:cut]
        matched = list(map(match, repeat(text), map(_BEFORE, batch), ends))
        spans.extend(compress(batch, matched), compress(ends, matched))
        if not whole:
            return


_BEFORE = (-1).__add__


class _Collected:
    """Spans in order as arrays of starts and ends, the first and the last ``limit // 2``
    of them past ``limit`` (the last ones trimmed once they are twice that many)."""

    __slots__ = ("_ends", "_half", "_last_ends", "_last_starts", "_starts")

    def __init__(self, limit: int) -> None:
        self._half = max(limit // 2, 1)
        self._starts: array[int] = array("q")
        self._ends: array[int] = array("q")
        self._last_starts: array[int] = array("q")
        self._last_ends: array[int] = array("q")

    def extend(self, starts: Iterable[int], ends: Iterable[int]) -> None:
        """Add spans: ``starts`` and ``ends`` of the same length, in order."""
        starts, ends = iter(starts), iter(ends)
        room = self._half - len(self._starts)
        if room > 0:
            self._starts.extend(islice(starts, room))
            self._ends.extend(islice(ends, room))
        self._last_starts.extend(starts)
        self._last_ends.extend(ends)
        over = len(self._last_starts) - 2 * self._half
        if over > 0:
            over += self._half  # trimmed to half: the cost of a trim is paid once a half
            del self._last_starts[:over]
            del self._last_ends[:over]

    def arrays(self) -> tuple[array[int], array[int]]:
        """The starts and the ends of the spans kept, in order."""
        keep = len(self._last_starts) - min(len(self._last_starts), self._half)
        return (
            self._starts + self._last_starts[keep:],
            self._ends + self._last_ends[keep:],
        )


# -- the whole output, once per process -------------------------------------------------

# Spans walked per call while looking for distinct lines (between them the GIL is given
# away): a few milliseconds of C-level maps each.
_DISTINCT_BATCH = 4096
_rstrip = str.rstrip


class Scanned:
    """The salient lines of one output (its spans as two arrays), as ``scan`` returns them.

    Called with ``(start, end)``, the spans wholly inside that range, as ``salient_spans``
    would give them; ``distinct`` gives a bounded selection without a list of every span.
    """

    __slots__ = ("ends", "starts")

    def __init__(self, starts: array[int], ends: array[int]) -> None:
        self.starts = starts
        self.ends = ends

    def _range(self, start: int, end: int) -> tuple[int, int]:
        first = bisect.bisect_left(self.starts, start)
        last = bisect.bisect_left(self.ends, end)  # ends ascend too: lines do not overlap
        return first, max(first, last)

    def __call__(self, start: int, end: int) -> list[tuple[int, int]]:
        first, last = self._range(start, end)
        return list(zip(self.starts[first:last], self.ends[first:last]))

    def __len__(self) -> int:
        return len(self.starts)

    def distinct(self, text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
        """Spans inside ``[start, end)`` of distinct lines (their text without trailing
        whitespace), in order: the first ``limit`` distinct lines from the start, each at
        its first occurrence, then up to ``limit`` more from the end, each at its last
        occurrence; every distinct line when there are no more than ``2 * limit``.

        The walk from the start stops once it has ``limit`` lines, the walk from the end
        where that one stopped: a log of a million distinct errors reads a few batches,
        not every line. Spans are read ``_DISTINCT_BATCH`` at a time by C-level maps (a
        dict of a batch's lines, set differences with the lines seen before), with the
        GIL given away between batches, so no call holds it for long.
        """
        first, last = self._range(start, end)
        head: list[int] = []  # indexes of spans, ascending
        seen: set[str] = set()
        at = first
        while at < last and len(head) < limit:
            stop = min(at + _DISTINCT_BATCH, last)
            lines = self._lines(text, at, stop)
            # Each line at its first index in the batch (a dict keeps the last value of a
            # key: the pairs go in reversed), the lines not in earlier batches.
            firsts = dict(zip(reversed(lines), range(stop - 1, at - 1, -1)))
            fresh = sorted(map(firsts.__getitem__, firsts.keys() - seen))
            head.extend(fresh[: limit - len(head)])
            seen.update(firsts)
            at = stop
            if at < last:
                give_way()
        if len(head) < limit:
            return self._spans_at(head)  # every distinct line of the range
        # Every line before the last one kept is one of those kept (the walk took each
        # new line in order): the walk from the end stops there.
        floor = head[-1] + 1
        starts, ends = self.starts, self.ends
        seen = {text[starts[i] : ends[i]].rstrip() for i in head}  # the lines kept
        tail: list[int] = []  # descending
        stop = last
        while stop > floor and len(tail) < limit:
            at = max(stop - _DISTINCT_BATCH, floor)
            lines = self._lines(text, at, stop)
            lasts = dict(zip(lines, range(at, stop)))  # each line at its last index
            fresh = sorted(map(lasts.__getitem__, lasts.keys() - seen), reverse=True)
            tail.extend(fresh[: limit - len(tail)])
            seen.update(lasts)
            stop = at
            if stop > floor:
                give_way()
        tail.reverse()
        return self._spans_at(head + tail)

    def _lines(self, text: str, at: int, stop: int) -> list[str]:
        """The text of spans ``at`` to ``stop`` without trailing whitespace."""
        pieces = map(slice, self.starts[at:stop], self.ends[at:stop])
        return list(map(_rstrip, map(text.__getitem__, pieces)))

    def _spans_at(self, indexes: list[int]) -> list[tuple[int, int]]:
        return list(
            zip(map(self.starts.__getitem__, indexes), map(self.ends.__getitem__, indexes))
        )


# Scans by content address and patterns: an output re-sent every turn is scanned once per
# process. Bounded by entries and by the spans they hold (16 bytes each).
_SCANNED: OrderedDict[tuple[object, ...], Scanned] = OrderedDict()
_SCANNED_MAX_ENTRIES = 256
_SCANNED_MAX_SPANS = 1 << 20
_scanned_spans = 0
_SCANNED_LOCK = threading.Lock()


def scan(text: str, pattern: SalientPattern, key: str | None = None) -> Scanned:
    """The salient lines of all of ``text`` (up to ``SCAN_LIMIT``), as a function of a range.

    The returned ``Scanned`` gives the spans wholly inside ``[start, end)``, as
    ``salient_spans`` would (or a bounded choice of distinct ones). With ``key`` (the
    text's content address), the scan is remembered: the same output is scanned once per
    process.
    """
    global _scanned_spans
    memo = (key, pattern.name) if key is not None else None
    if memo is not None:
        with _SCANNED_LOCK:
            found = _SCANNED.get(memo)
            if found is not None:
                _SCANNED.move_to_end(memo)
                return found
    fast = accelerator()
    if len(text) <= SCAN_LIMIT:
        starts, ends = _span_arrays(text, 0, len(text), pattern, fast)
    else:
        half = SCAN_LIMIT // 2
        starts, ends = _span_arrays(text, 0, half, pattern, fast)
        more_starts, more_ends = _span_arrays(text, len(text) - half, len(text), pattern, fast)
        starts += more_starts
        ends += more_ends
    scanned = Scanned(starts, ends)
    count = len(scanned)
    if memo is not None and count <= _SCANNED_MAX_SPANS:
        with _SCANNED_LOCK:
            while _SCANNED and (
                len(_SCANNED) >= _SCANNED_MAX_ENTRIES
                or _scanned_spans + count > _SCANNED_MAX_SPANS
            ):
                _, old = _SCANNED.popitem(last=False)
                _scanned_spans -= len(old)
            _SCANNED[memo] = scanned
            _scanned_spans += count
    return scanned


# -- the accelerator (budgetware[fast]) ------------------------------------------------------


class _Accelerator:
    """A hyperscan database of ``_ANCHORS``: candidate lines for the default patterns."""

    def __init__(self, hyperscan: Any) -> None:
        self._hs = hyperscan
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        words = [word.encode() for word in _ANCHORS]
        database.compile(expressions=words, ids=list(range(len(words))), literal=True)
        self._database = database
        self._local = threading.local()

    def _scratch(self) -> Any:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hs.Scratch(self._database)
        return scratch

    def candidates(self, text: str, piece_start: int, piece_end: int) -> list[int]:
        """Starts of the lines of one piece that hold an anchor, in order (no anchor holds
        a newline, so none crosses a line). The database scan lets other threads run."""
        piece = text[piece_start:piece_end]
        data = piece.encode("utf-8", "surrogatepass")
        hits: list[int] = []
        self._database.scan(
            data, match_event_handler=_collect, context=hits, scratch=self._scratch()
        )
        return _line_starts(piece, data, hits, piece_start) if hits else []


def _collect(_id: int, _start: int, end: int, _flags: int, hits: list[int]) -> None:
    hits.append(end)


def _line_starts(piece: str, data: bytes, hits: list[int], offset: int) -> list[int]:
    """The distinct line starts (as text offsets plus ``offset``) of byte offsets ``hits``."""
    # C-level maps: no Python step per hit (a dense log has thousands a piece).
    starts = sorted(set(map(_NEXT, map(data.rfind, repeat(b"\n"), repeat(0), hits))))
    if len(data) == len(piece):  # ASCII: byte and character offsets agree
        return [offset + s for s in starts]
    out = []
    chars = 0
    previous = 0
    for s in starts:
        chars += len(data[previous:s].decode("utf-8", "surrogatepass"))
        previous = s
        out.append(offset + chars)
    return out


_ACCELERATOR: list[_Accelerator | None] = []
_ACCELERATOR_LOCK = threading.Lock()


def accelerator() -> _Accelerator | None:
    """The hyperscan prefilter when ``budgetware[fast]`` is installed, else None (pure re)."""
    if _ACCELERATOR:
        return _ACCELERATOR[0]
    with _ACCELERATOR_LOCK:
        if not _ACCELERATOR:
            made: _Accelerator | None = None
            try:
                import hyperscan

                made = _Accelerator(hyperscan)
            except Exception:  # absent, or no build for this machine: pure re
                made = None
            _ACCELERATOR.append(made)
    return _ACCELERATOR[0]
