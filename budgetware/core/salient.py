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
  default match contains (``_ANCHORS``: a test holds them complete) are found one by one,
  each by its rarest character (``str.find`` of one character is a memchr) and, where that
  character is dense in the output, by a literal ``re`` search capped at ``_FIND_CHARS``
  per call; only the lines that hold a word are checked alone as above;
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
import time
import warnings
from array import array
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from budgetware.core.regexcost import regex_problem

__all__ = [
    "DEFAULT_SALIENT_PATTERNS",
    "MAX_SPANS",
    "PIECE_CHARS",
    "SCAN_LIMIT",
    "SalientPattern",
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
    start = max(start, 0)
    end = min(end, len(text))
    if start >= end or text.find("\n", start, end) == -1:
        return []  # no line ends inside: none is wholly inside
    spans = _Collected(MAX_SPANS)
    regex = pattern.regex
    if start == 0:
        first = text.find("\n", 0, end)
        if regex.match("\n" + text[:first]):
            spans.add((0, first))
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
    return spans.spans()


def _pieces(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """``[start, end)`` in pieces of about ``PIECE_CHARS``, each ending after a newline.

    No line crosses a piece: each piece holds whole lines (the last one may run past
    ``end``). Between pieces the scanning thread gives the GIL away (``time.sleep(0)``,
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
            time.sleep(0)


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


# -- the pure-Python prefilter: the anchors by memchr and find -----------------------------

# Characters from the rarest in logs to the most common (a guess, never a result: any
# order finds the same lines). An anchor is first looked for by its rarest character,
# which ``str.find`` of one character finds at memchr speed; where that character turns
# out dense, by the whole word.
_RARITY = (
    "●✕✗×*!'`\"#QZXJKVWYBGUMHFLPCDNRIOTSAEqzxjkvbpygfwmucldrhsnioate"
    "0123456789$%&+,-./;<=>?@[]^_{|}~:\t "
)
_RANK = {char: rank for rank, char in enumerate(_RARITY)}
# A probe character found more often than once in this many characters costs more (a
# Python step each) than a find of the whole word (a C loop): the word is found instead.
_DENSE = 512
_DENSE_AFTER = 32
_DENSE_PIECES = 8
# The rarest characters of an anchor checked in each piece.
_PROBE_CHARS = 4
# A find of a word in a piece of an output is capped at this many characters per call,
# so no call holds the GIL for long even in a piece that is one huge line.
_FIND_CHARS = 1 << 18


def _probes(word: str) -> tuple[tuple[str, int], ...]:
    """The distinct characters of ``word`` with their offsets in it, the rarest first."""
    offsets: dict[str, int] = {}
    for offset, char in enumerate(word):
        offsets.setdefault(char, offset)
    order = sorted(offsets.items(), key=lambda item: (_RANK.get(item[0], -1), item[1]))
    return tuple(order[:_PROBE_CHARS])


# Each anchor: the word, its rarest characters, and a literal search for the whole word.
# ``re`` finds a literal in one tight loop (about 3 times faster than ``str.find`` for a
# short word whose characters are all common).
_WORDS = tuple((word, _probes(word), re.compile(re.escape(word)).search) for word in _ANCHORS)


class _Words:
    """Candidate lines of one scan: the lines that hold an anchor, found piece by piece.

    In each piece, an anchor is skipped when one of its rarest characters is not there
    (memchr); otherwise it is looked for by the character of those first seen furthest
    into the piece (likely the rarest), until that character turns out dense, and then by
    the whole word, also for the next ``_DENSE_PIECES`` pieces. What is remembered only
    picks the way of finding: every way finds the same lines.
    """

    __slots__ = ("_dense",)

    def __init__(self) -> None:
        self._dense = [0] * len(_WORDS)

    def candidates(self, text: str, piece_start: int, piece_end: int) -> list[int]:
        """Starts of the lines of ``[piece_start, piece_end)`` holding an anchor, in order.

        No anchor holds a newline: an anchor that starts in the piece ends in it (pieces
        end after a newline, or at the end of the range, where a line is not whole).
        """
        found: set[int] = set()
        find = text.find
        rfind = text.rfind
        startswith = text.startswith
        dense = self._dense
        for index, (word, probes, search) in enumerate(_WORDS):
            probe = ""
            offset = 0
            at = furthest = -1
            for char, char_offset in probes:
                first = find(char, piece_start + char_offset, piece_end)
                if first == -1:
                    break  # memchr: a character of the word is not in the piece
                if first - char_offset > furthest:
                    furthest = first - char_offset
                    probe, offset, at = char, char_offset, first
            else:
                position = piece_start  # where a search for the whole word starts
                if dense[index]:
                    dense[index] -= 1
                else:
                    hits = 0
                    while at != -1:
                        begin = at - offset
                        if startswith(word, begin):
                            found.add(rfind("\n", 0, begin) + 1)
                            position = find("\n", begin, piece_end) + 1 or piece_end
                            at = find(probe, position + offset, piece_end)
                            continue
                        hits += 1
                        if hits >= _DENSE_AFTER and begin - piece_start < hits * _DENSE:
                            dense[index] = _DENSE_PIECES
                            position = begin + 1
                            break
                        at = find(probe, at + 1, piece_end)
                    else:
                        continue
                size = len(word)
                while position < piece_end:
                    stop = min(position + _FIND_CHARS, piece_end)
                    hit = search(text, position, min(stop + size - 1, piece_end))
                    if hit is None:
                        position = stop
                        continue
                    begin = hit.start()
                    found.add(rfind("\n", 0, begin) + 1)
                    position = find("\n", begin, piece_end) + 1 or piece_end
        return sorted(found)


def _check(
    text: str,
    lines: Sequence[int],
    start: int,
    end: int,
    regex: re.Pattern[str],
    spans: _Collected,
) -> None:
    """Add the candidates (line starts, in order) whose lines are wholly inside and salient:
    each line matched alone, from the newline before it to its end."""
    match = regex.match
    find = text.find
    for line in lines:
        if line < start or line == 0:
            continue  # before the range, or the first line (checked already)
        line_end = find("\n", line, end)
        if line_end == -1:
            return  # the last line runs past ``end``: not wholly inside
        if match(text, line - 1, line_end):
            spans.add((line, line_end))


class _Collected:
    """Spans in order, the first and the last ``limit // 2`` of them past ``limit``."""

    __slots__ = ("_first", "_half", "_last")

    def __init__(self, limit: int) -> None:
        self._half = max(limit // 2, 1)
        self._first: list[tuple[int, int]] = []
        self._last: deque[tuple[int, int]] = deque(maxlen=self._half)

    def add(self, span: tuple[int, int]) -> None:
        if len(self._first) < self._half:
            self._first.append(span)
        else:
            self._last.append(span)

    def spans(self) -> list[tuple[int, int]]:
        return self._first + list(self._last)


# -- the whole output, once per process -------------------------------------------------


class _Scanned:
    __slots__ = ("ends", "starts")

    def __init__(self, spans: Sequence[tuple[int, int]]) -> None:
        self.starts = array("q", (s for s, _ in spans))
        self.ends = array("q", (e for _, e in spans))

    def within(self, start: int, end: int) -> list[tuple[int, int]]:
        first = bisect.bisect_left(self.starts, start)
        last = bisect.bisect_left(self.ends, end)  # ends ascend too: lines do not overlap
        return list(zip(self.starts[first:last], self.ends[first:last]))


# Scans by content address and patterns: an output re-sent every turn is scanned once per
# process. Bounded by entries and by the spans they hold (16 bytes each).
_SCANNED: OrderedDict[tuple[object, ...], _Scanned] = OrderedDict()
_SCANNED_MAX_ENTRIES = 256
_SCANNED_MAX_SPANS = 1 << 20
_scanned_spans = 0
_SCANNED_LOCK = threading.Lock()


def scan(
    text: str, pattern: SalientPattern, key: str | None = None
) -> Callable[[int, int], list[tuple[int, int]]]:
    """The salient lines of all of ``text`` (up to ``SCAN_LIMIT``), as a function of a range.

    The returned function gives the spans wholly inside ``[start, end)``, as
    ``salient_spans`` would. With ``key`` (the text's content address), the scan is
    remembered: the same output is scanned once per process.
    """
    global _scanned_spans
    memo = (key, pattern.name) if key is not None else None
    if memo is not None:
        with _SCANNED_LOCK:
            found = _SCANNED.get(memo)
            if found is not None:
                _SCANNED.move_to_end(memo)
                return found.within
    if len(text) <= SCAN_LIMIT:
        spans = salient_spans(text, 0, len(text), pattern)
    else:
        half = SCAN_LIMIT // 2
        spans = salient_spans(text, 0, half, pattern)
        spans += salient_spans(text, len(text) - half, len(text), pattern)
    scanned = _Scanned(spans)
    if memo is not None and len(spans) <= _SCANNED_MAX_SPANS:
        with _SCANNED_LOCK:
            while _SCANNED and (
                len(_SCANNED) >= _SCANNED_MAX_ENTRIES
                or _scanned_spans + len(spans) > _SCANNED_MAX_SPANS
            ):
                _, old = _SCANNED.popitem(last=False)
                _scanned_spans -= len(old.starts)
            _SCANNED[memo] = scanned
            _scanned_spans += len(spans)
    return scanned.within


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
    rfind = data.rfind
    found = {rfind(b"\n", 0, hit) + 1 for hit in hits}
    starts = sorted(found)
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
