"""The scan of the default patterns (anchor words) against every line matched alone.

The default patterns' candidate lines are those that hold an anchor word: some followed by
a character (memchr), the others found by keyed ``re`` searches, some at line starts only.
The reference is the combined pattern matched against every line alone: both must give the
same spans, byte for byte, on every input, whether a key character stays followed or is left
to a search.
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
    """The salient lines by their definition: each line wholly inside, matched alone."""
    spans = []
    line = 0
    while (stop := text.find("\n", line, end)) != -1:
        if line >= start and pattern.regex.match("\n" + text[line:stop]):
            spans.append((line, stop))
        line = stop + 1
    return spans


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
    "  E   indented assertion",
    "\tpanic: tabbed",
    " " * 70 + "E   deep",
    "\t" * 3 + "goroutine 9 [running]:",
    "x panic: not first",
    "xE   not first",
    "thread 'w' panicked at here",
    "a thread 'w' panicked",
    "    Traceback (most recent call last):",
    "see Traceback (most recent call last)",
    "Killed",
    "  Caused by: x",
    "𝔘nicode 😀 ERROR wide",
    "😀 Segmentation fault",
]


# Knobs that change how words are found, never the spans: every key character left to a
# search at its first miss, or never; candidate lines checked one a call.
PLANS = {
    "default": {},
    "searched": {"_TRIES": -1, "_SPARSE": 1 << 40},
    "followed": {"_TRIES": 1 << 40},
    "small batches": {"_BATCH": 1},
}


def _knobs(monkeypatch: pytest.MonkeyPatch, plan: str, piece: int) -> None:
    monkeypatch.setattr(salient, "PIECE_CHARS", piece)
    for name, value in PLANS[plan].items():
        monkeypatch.setattr(salient, name, value)


def test_every_anchor_holds_its_character() -> None:
    for key, words in salient._ANCHORS.items():
        assert key == "\n" or all(key in word for word in words), key
    anchors = [word for words in salient._ANCHORS.values() for word in words]
    assert len(set(anchors)) == len(anchors)


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("piece", [7, 64, 1 << 18])
@pytest.mark.parametrize("extra", [(), ("(?i)warn", "note:"), (".*?lone",)])
def test_the_word_scan_gives_the_same_spans_as_every_line_matched_alone(
    piece: int, extra: tuple[str, ...], plan: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _knobs(monkeypatch, plan, piece)
    pattern = compile_salient(extra)
    assert pattern is not None
    rng = random.Random(17)
    for _ in range(50):  # 36 cases: 1,800 texts a run
        lines = [rng.choice(LINES) for _ in range(rng.randrange(1, 40))]
        sep = "\r\n" if rng.random() < 0.2 else "\n"
        text = sep.join(lines) + (sep if rng.random() < 0.7 else "")
        start = rng.randrange(0, len(text) + 1) if rng.random() < 0.5 else 0
        end = rng.randrange(start, len(text) + 1) if rng.random() < 0.5 else len(text)
        words = salient.salient_spans(text, start, end, pattern)
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
        "goroutine ",
        "' panicked",
        "\t",
        "    ",
        "😀",
        "Killed",
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
    expected = _reference(text, start, end, pattern)
    for plan in sorted(PLANS):
        for piece in (5, 1 << 18):
            with pytest.MonkeyPatch.context() as monkeypatch:
                _knobs(monkeypatch, plan, piece)
                assert salient.salient_spans(text, start, end, pattern) == expected, plan


def _adversarial(kind: str, rng: random.Random) -> str:
    """Texts where key characters are dense: the anchors' characters everywhere, words on
    slice and piece edges, wide characters, CRLF, huge lines and indentation."""
    anchors = [word for words in salient._ANCHORS.values() for word in words]
    letters = "".join(sorted({c for word in anchors for c in word})) + "\t"
    if kind == "dense":
        lines = []
        for _ in range(400):
            line = "".join(rng.choice(letters) for _ in range(rng.randrange(0, 80)))
            if rng.random() < 0.2:
                at = rng.randrange(len(line) + 1)
                line = line[:at] + rng.choice(anchors) + line[at:]
            lines.append(line)
        return "\n".join(lines) + "\n"
    if kind == "edges":
        # Lines of every length around small piece and slice sizes, a word at each end.
        lines = []
        for n in range(300):
            word = rng.choice(anchors)
            pad = "y" * (n % 70)
            lines.append(word + pad if n % 3 else pad + word)
        return "\n".join(lines)  # no final newline: the last line runs to the end
    if kind == "wide":
        wide = ["Ω", "日本語", "😀", "𝔘", "●", "é", "\ud800"]
        lines = []
        for _ in range(300):
            parts = [rng.choice(wide + anchors + ["x", " ", "E  "]) for _ in range(6)]
            lines.append(("  " if rng.random() < 0.3 else "") + "".join(parts))
        return "\n".join(lines) + "\n"
    if kind == "crlf":
        return "\r\n".join(rng.choice(LINES) for _ in range(400)) + "\r\n"
    assert kind == "long"
    lines = []
    for _ in range(12):
        body = ["z" * rng.randrange(1_000, 20_000)]
        for _ in range(rng.randrange(0, 4)):
            at = rng.randrange(len(body[0]) + 1)
            body[0] = body[0][:at] + rng.choice(anchors) + body[0][at:]
        indent = rng.choice(["", " " * 200, "\t" * 90, " \t" * 40])
        lines.append(indent + rng.choice(["", "E   ", "panic: ", "goroutine 1 "]) + body[0])
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("kind", ["dense", "edges", "wide", "crlf", "long"])
def test_the_word_scan_agrees_on_adversarial_corpora(
    kind: str, plan: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(kind)
    text = _adversarial(kind, rng)
    pattern = compile_salient()
    assert pattern is not None
    ranges = [(0, len(text))] + [
        tuple(sorted((rng.randrange(len(text) + 1), rng.randrange(len(text) + 1))))
        for _ in range(3)
    ]
    expected = [_reference(text, start, end, pattern) for start, end in ranges]
    assert expected[0], kind  # the corpus has salient lines to find
    for piece in (37, 256, 4_099, 1 << 18):
        _knobs(monkeypatch, plan, piece)
        for (start, end), spans in zip(ranges, expected):
            assert salient.salient_spans(text, start, end, pattern) == spans, (piece, start, end)


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
    words = salient.salient_spans(text, 0, len(text), pattern)
    assert words == _reference(text, 0, len(text), pattern)
    assert len(words) >= 3
    middle = len(text) // 3
    assert salient.salient_spans(text, middle, 2 * middle, pattern) == _reference(
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
    spans = salient.salient_spans(text, 0, len(text), spy)
    assert [text[s:e] for s, e in spans] == [lines[5_000], lines[15_000]]
    assert counting.searches == 0
    assert counting.matches <= 3  # the first line, and the two that hold a word
