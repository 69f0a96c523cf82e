"""Salient lines: the lines of a long output that a model most needs (errors, failures, panics).

One compiled pattern, anchored at line starts: the regular-expression engine jumps from
newline to newline in C and tries the alternatives only there, so a scan costs about one
pass over the text. Each pattern is matched like ``re.match`` against a line after its
indentation; start a pattern with ``.*?`` to find a word anywhere in a line (it costs more).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

__all__ = ["DEFAULT_SALIENT_PATTERNS", "compile_salient", "salient_spans"]

# Each entry is matched at the start of a line (after spaces and tabs). Grouped by the tool
# that prints them; literal prefixes first, because the engine rejects those fastest.
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
    r"failures:$",
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
    r"Killed$",
    r"Aborted",
    r"Bus error",
    r"make(?:\[\d+\])?: \*\*\*",
    # A first word that names the problem: "ValueError: x", "main.c:3:5: error: x",
    # "tests/a.py:12: AssertionError", "bash: x: command not found", "2024-01-01 ERROR x".
    r"\S+(?!\S)(?:(?<=rror:)|(?<=tion:)|(?<=Error)$|(?<=Exception)$"
    r"|(?<=\d:) (?:fatal )?(?:error|[\w.]*Error|[\w.]*Exception)\b"
    r"|(?<=sh:) \S.*(?:not found|No such file|Permission denied)"
    r"| (?:\S+ )?(?:\[?(?:ERROR|FATAL|CRITICAL|PANIC|SEVERE)\]?|FAILED|error:|fatal:)(?:\s|$))",
)


@functools.lru_cache(maxsize=32)
def compile_salient(extra: tuple[str, ...] = (), defaults: bool = True) -> re.Pattern[str] | None:
    """One pattern for the default salient lines plus ``extra`` ones, or None if there are none.

    Raises ``re.error`` for a pattern that does not compile (configuration checks it).
    """
    patterns: Sequence[str] = (DEFAULT_SALIENT_PATTERNS if defaults else ()) + tuple(extra)
    if not patterns:
        return None
    for pattern in extra:
        re.compile(pattern)  # fail on the user's pattern, with its own error
    # No possessive quantifiers (*+, ++): Python 3.10's re has none. A negative lookahead
    # pins each run as a possessive would: backing off a character fails at once.
    return re.compile(
        r"\n[ \t]*(?![ \t])(?:" + "|".join(f"(?:{p})" for p in patterns) + ")", re.MULTILINE
    )


def salient_spans(
    text: str, start: int, end: int, pattern: re.Pattern[str]
) -> list[tuple[int, int]]:
    """The ``(start, end)`` of every whole line inside ``text[start:end]`` that ``pattern`` finds.

    ``end`` excludes the newline. Lines are in order; a line cut by either bound is skipped.
    """
    spans: list[tuple[int, int]] = []
    # The pattern needs the newline before a line: search from the one before ``start``.
    begin = start - 1 if start > 0 else 0
    if start == 0:
        first_end = text.find("\n", 0, end)
        if first_end != -1 and pattern.match("\n" + text[:first_end]):
            spans.append((0, first_end))
    for match in pattern.finditer(text, begin, end):
        line_start = match.start() + 1
        if line_start < start:
            continue
        line_end = text.find("\n", line_start, end)
        if line_end == -1:
            break  # the last line runs past ``end``: not wholly inside
        if spans and spans[-1][0] == line_start:
            continue
        spans.append((line_start, line_end))
    return spans
