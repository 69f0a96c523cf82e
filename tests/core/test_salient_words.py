"""The pure-Python scan of the default patterns (anchor words, issue 17) against the re search.

Without the accelerator, the default patterns' candidate lines come from ``_Words``: each
anchor found by its rarest character (memchr) or, where that is dense, by a literal ``re``
search. The reference is the search of the combined pattern at every line start (the scan
before): both must give the same spans, byte for byte, on every input.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import random
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budgetware.core import salient
from budgetware.core.salient import SalientPattern, compile_salient

TOUCHES_NO_FILES = True

ROOT = Path(__file__).resolve().parents[2]


def _reference(text: str, start: int, end: int, pattern: SalientPattern) -> list[tuple[int, int]]:
    """The spans of the combined pattern searched at every line start (no prefilter)."""
    plain = SalientPattern(regex=pattern.regex, extra=None, defaults=False)
    return salient._spans(text, start, end, plain, None)


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_preview_corpus", ROOT / "benchmarks" / "bench_preview.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


LINES = [
    "Traceback (most recent call last):",
    '  File "/srv/app.py", line 3, in <module>',
    "ValueError: bad",
    "ERROR: x",
    "E       assert 1 == 2",
    "E  ",
    "PASSED E  x",
    "INFO fine",
    "    warn: indented user line",
    "Ünïcödé ERROR here",
    "日本語のログ 行 error: 失敗",
    "\ud800 lone surrogate FAILED",
    "make[2]: *** [all] Error 1",
    "● suite › test",
    "× broken",
    "x" * 300 + " FATAL",
    "",
    "   ",
    "failures:\r",
    "Killed",
    "Killed by signal",
    "2024-05-01 12:00:00 CRITICAL down",
    "2024-05-01 12:00:00,123 INFO [worker-3] request 7 handled in 3 ms",
    "main.c:3:5: error: x",
    "bash: x: command not found",
    "zsh: permission: Permission denied",
    "Mirror:",
    "Description: a thing",
    "Exception",
    "pkg.Error",
    "npm ERR! code 1",
    "goroutine 7 [running]:",
    "thread 'main' panicked at x",
    "panic: oops",
    "test it ... FAILED",
    "===== 3 failed, 2 passed =====",
    "tests/unit/test_module_1.py::TestThing::test_case_5[param-5] PASSED [ 12%]",
    "warning: odd",
    "NOTE: uses (?i)",
    "rrorrorrror tion:tion: panicpanic",
]


@pytest.mark.parametrize("piece", [7, 64, 1 << 18])
@pytest.mark.parametrize("extra", [(), ("(?i)warn", "note:"), (".*?lone",)])
def test_the_word_scan_gives_the_same_spans_as_the_re_search(
    piece: int, extra: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small pieces, slices and density thresholds: lines, anchors and probe characters
    # fall on every edge, and every anchor switches between memchr and the word search.
    monkeypatch.setattr(salient, "PIECE_CHARS", piece)
    monkeypatch.setattr(salient, "_FIND_CHARS", max(piece // 3, 1))
    monkeypatch.setattr(salient, "_DENSE_AFTER", 2)
    monkeypatch.setattr(salient, "_DENSE_PIECES", 2)
    pattern = compile_salient(extra)
    assert pattern is not None
    rng = random.Random(17)
    for _ in range(300):
        lines = [rng.choice(LINES) for _ in range(rng.randrange(1, 40))]
        sep = "\r\n" if rng.random() < 0.2 else "\n"
        text = sep.join(lines) + (sep if rng.random() < 0.7 else "")
        start = rng.randrange(0, len(text) + 1) if rng.random() < 0.5 else 0
        end = rng.randrange(start, len(text) + 1) if rng.random() < 0.5 else len(text)
        words = salient._spans(text, start, end, pattern, None)
        assert words == _reference(text, start, end, pattern), (text, start, end)


_FRAGMENTS = st.sampled_from(
    [
        "\n",
        " ",
        "\t",
        "\r",
        "E",
        "E  ",
        "rror",
        "error",
        "Error",
        "ERROR",
        "FAIL",
        "FAILED",
        ":",
        "tion:",
        "panic",
        "' panicked",
        "xception",
        "sh:",
        "not found",
        "=",
        "== 2 failed",
        "[",
        "]",
        "1",
        ": ***",
        "●",
        "×",
        "é",
        "a",
        "word",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_FRAGMENTS, max_size=60), st.data())
def test_the_word_scan_agrees_on_generated_texts(parts: list[str], data: st.DataObject) -> None:
    text = "".join(parts)
    pattern = compile_salient()
    assert pattern is not None
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    for piece, dense_after in ((1 << 18, 32), (5, 1)):
        saved = salient.PIECE_CHARS, salient._FIND_CHARS, salient._DENSE_AFTER
        salient.PIECE_CHARS, salient._FIND_CHARS, salient._DENSE_AFTER = (
            piece,
            piece,
            dense_after,
        )
        try:
            words = salient._spans(text, start, end, pattern, None)
            assert words == _reference(text, start, end, pattern)
        finally:
            salient.PIECE_CHARS, salient._FIND_CHARS, salient._DENSE_AFTER = saved


@pytest.mark.parametrize("corpus", ["pytest", "service"])
@pytest.mark.parametrize("piece", [1 << 12, 1 << 18])
def test_the_word_scan_agrees_on_the_benchmark_corpora(
    corpus: str, piece: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = _bench()
    text = bench._pytest_log(1 << 20) if corpus == "pytest" else bench._log(1 << 20)
    monkeypatch.setattr(salient, "PIECE_CHARS", piece)
    pattern = compile_salient()
    assert pattern is not None
    words = salient._spans(text, 0, len(text), pattern, None)
    assert words == _reference(text, 0, len(text), pattern)
    assert len(words) >= 3
    middle = len(text) // 3
    assert salient._spans(text, middle, 2 * middle, pattern, None) == _reference(
        text, middle, 2 * middle, pattern
    )


class _Counting:
    """A pattern that counts what the scan asks of it."""

    def __init__(self, regex: re.Pattern[str]) -> None:
        self.regex = regex
        self.searches = 0
        self.matches = 0

    def search(self, *args: Any) -> re.Match[str] | None:
        self.searches += 1
        return self.regex.search(*args)

    def match(self, *args: Any) -> re.Match[str] | None:
        self.matches += 1
        return self.regex.match(*args)


def test_the_default_scan_checks_only_lines_that_hold_an_anchor() -> None:
    # Before, the combined pattern was searched at each of the 20,000 line starts: the
    # engine tried about 35 alternatives at every line. Now only lines holding a word.
    lines = [
        f"2024-05-01 12:00:00,123 INFO [worker-{n % 8}] request {n} ok" for n in range(20_000)
    ]
    lines[5_000] = "2024-05-01 12:00:00,123 ERROR [worker-0] request 5000 failed: timeout"
    lines[15_000] = "Traceback (most recent call last):"
    text = "\n".join(lines) + "\n"
    pattern = compile_salient()
    assert pattern is not None
    counting = _Counting(pattern.regex)
    spy = dataclasses.replace(pattern, regex=counting)  # type: ignore[arg-type]
    spans = salient._spans(text, 0, len(text), spy, None)
    assert [text[s:e] for s, e in spans] == [lines[5_000], lines[15_000]]
    assert counting.searches == 0
    assert counting.matches <= 3  # the first line, and the two that hold a word


def test_no_word_search_covers_more_than_a_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    # One line of 3 MB (no newline to cut pieces at) whose characters are those of every
    # anchor: each literal search still covers at most _FIND_CHARS (issue 12: the GIL).
    spans: list[int] = []
    words = []
    for word, probes, search in salient._WORDS:

        def spy(text: str, pos: int, endpos: int, search: Any = search) -> Any:
            spans.append(endpos - pos)
            return search(text, pos, endpos)

        words.append((word, probes, spy))
    monkeypatch.setattr(salient, "_WORDS", tuple(words))
    noise = "".join(sorted({c for word in salient._ANCHORS for c in word if c != "\n"}))
    text = "ok\n" + (noise.replace(" ", "_") * (3_000_000 // len(noise))) + " ERROR x\nok\n"
    pattern = compile_salient()
    assert pattern is not None
    found = salient._spans(text, 0, len(text), pattern, None)
    assert found == _reference(text, 0, len(text), pattern)
    assert len(found) == 1
    assert spans
    longest = max(len(word) for word in salient._ANCHORS)
    assert max(spans) <= salient._FIND_CHARS + longest
