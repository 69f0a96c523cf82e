"""Salient lines: what the default patterns find, and how previews keep them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budgetware import BudgetConfig, ConfigError
from budgetware.core.fit import PreviewOptions
from budgetware.core.salient import (
    DEFAULT_SALIENT_PATTERNS,
    compile_salient,
    salient_spans,
)
from budgetware.finalizer import ToolResult, finalize_batch, finalize_body, fit_text

# Measuring, fitting and parsing touch no file: one file API is enough (fs_watch.py).
TOUCHES_NO_FILES = True

# One line each, as the tools print them.
SALIENT = [
    "Traceback (most recent call last):",
    "ValueError: invalid literal for int() with base 10: 'x'",
    "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='x')",
    "E       assert 3 == 4",
    "FAILED tests/test_math.py::test_add - assert 3 == 4",
    "tests/test_math.py::test_add FAILED                                      [ 50%]",
    "=================================== FAILURES ===================================",
    "========================= 2 failed, 10 passed in 0.12s =========================",
    "tests/test_math.py:12: AssertionError",
    "main.c:3:5: error: expected ';' before 'return'",
    "main.c:7:1: fatal error: missing.h: No such file or directory",
    "collect2: error: ld returned 1 exit status",
    "error[E0425]: cannot find value `x` in this scope",
    'error: could not compile `demo` (bin "demo") due to 1 previous error',
    "thread 'main' panicked at src/main.rs:2:5:",
    "test tests::it_works ... FAILED",
    "test result: FAILED. 1 passed; 1 failed; 0 ignored",
    "--- FAIL: TestAdd (0.00s)",
    "panic: runtime error: index out of range [5] with length 3",
    "goroutine 1 [running]:",
    "fatal: not a git repository (or any of the parent directories): .git",
    "TypeError: Cannot read properties of undefined (reading 'map')",
    "npm ERR! code ELIFECYCLE",
    "  ● Math › adds numbers",
    'Exception in thread "main" java.lang.NullPointerException',
    "Caused by: java.io.IOException: Broken pipe",
    "bash: frobnicate: command not found",
    "Segmentation fault (core dumped)",
    "make: *** [Makefile:2: all] Error 1",
    "ERROR: Could not find a version that satisfies the requirement nope",
    "2024-05-01T12:00:00Z ERROR worker crashed",
    "2024-05-01 12:00:00,123 ERROR [main] db connection refused",
    "[ERROR] Failed to execute goal on project demo",
    "Killed",
]

BORING = [
    "2024-05-01 12:00:00,123 INFO [main] request handled in 12 ms",
    "tests/test_math.py::test_sub PASSED                                      [100%]",
    '  File "/srv/app/main.py", line 12, in <module>',
    "commit 3f2a9c1 Merge branch 'feature/errors-page'",
    "src/errors.py:12:def handle_error(request):",
    "./docs/error-codes.md",
    "id,name,error_count",
    "warning: unused variable `y`",
    "test tests::other ... ok",
    "Compiling demo v0.1.0 (/srv/demo)",
]


@pytest.mark.parametrize("line", SALIENT)
def test_default_patterns_find_failures_and_errors(line: str) -> None:
    text = f"before\n{line}\nafter\n"
    pattern = compile_salient()
    assert pattern is not None
    assert [text[s:e] for s, e in salient_spans(text, 0, len(text), pattern)] == [line]


@pytest.mark.parametrize("line", BORING)
def test_default_patterns_leave_ordinary_lines_alone(line: str) -> None:
    text = f"before\n{line}\nafter\n"
    pattern = compile_salient()
    assert pattern is not None
    assert salient_spans(text, 0, len(text), pattern) == []


def test_only_whole_lines_inside_the_range_are_found() -> None:
    text = "ERROR a\nERROR b\nERROR c\n"
    pattern = compile_salient()
    assert pattern is not None
    assert salient_spans(text, 0, len(text), pattern) == [(0, 7), (8, 15), (16, 23)]
    assert salient_spans(text, 3, 20, pattern) == [(8, 15)]


def _log(lines: int, salient: dict[int, str]) -> str:
    out = []
    for n in range(1, lines + 1):
        out.append(salient.get(n, f"2024-05-01 12:00:00 INFO step {n} completed normally"))
    return "\n".join(out) + "\n"


def test_salient_lines_of_the_omitted_middle_are_shown_with_line_numbers_in_order() -> None:
    text = _log(5_000, {1_500: "Traceback (most recent call last):", 1_503: "KeyError: 'id'"})
    preview = fit_text(text, 5_000)
    assert len(preview) <= 5_000
    assert "\n1500: Traceback (most recent call last):\n1503: KeyError: 'id'\n[...]\n" in preview
    assert "2 matching lines" in preview
    head, _, tail = preview.partition("\n\n")[2].partition("\n[... ")
    assert text.startswith(head)
    assert text.endswith(tail.partition("[...]\n")[2])


def test_the_notice_counts_salient_lines_as_kept() -> None:
    text = _log(5_000, {2_000: "ERROR: disk full"})
    preview = fit_text(text, 5_000)
    omitted = int(re.search(r"([\d,]+) omitted\.", preview).group(1).replace(",", ""))  # type: ignore[union-attr]
    body = preview.split("\n\n", 1)[1]
    head, rest = body.split("\n[... ", 1)
    tail = rest.split("[...]\n", 1)[1]
    assert omitted == len(text) - len(head) - len(tail) - len("ERROR: disk full")


def test_many_salient_lines_keep_both_ends_within_their_share() -> None:
    salient = {n: f"ERROR: failure number {n}" for n in range(1_000, 4_000, 10)}
    text = _log(5_000, salient)
    preview = fit_text(text, 5_000)
    shown = re.findall(r"^(\d+): ERROR", preview, re.MULTILINE)
    assert shown[0] == "1000"
    assert shown[-1] == "3990"
    assert [int(n) for n in shown] == sorted(int(n) for n in shown)
    block = preview[preview.index("matching lines") : preview.index("\n[...]\n")]
    assert len(block) <= 5_000 * 25 // 100 + 80


def test_identical_salient_lines_are_shown_once() -> None:
    text = _log(5_000, dict.fromkeys(range(1_000, 4_000, 100), "ERROR: connection refused"))
    preview = fit_text(text, 5_000)
    assert preview.count("ERROR: connection refused") == 1
    assert "\n1000: ERROR: connection refused\n" in preview


def test_a_long_salient_line_is_cut_to_its_share() -> None:
    text = _log(5_000, {2_000: "ERROR: " + "z" * 10_000})
    preview = fit_text(text, 5_000)
    line = next(x for x in preview.splitlines() if x.startswith("2000: "))
    assert line.endswith(" [...]")
    assert len(line) < 400


def test_the_scan_of_a_huge_middle_covers_both_ends_of_it_and_its_center() -> None:
    # The whole omitted middle is scanned (up to SCAN_LIMIT characters), not a window next
    # to the head and the tail: a failure deep in a long run is what the model needs.
    text = _log(100_000, {100: "ERROR: early", 50_000: "ERROR: center", 99_900: "ERROR: late"})
    preview = fit_text(text, 5_000)
    assert "\n100: ERROR: early\n50000: ERROR: center\n99900: ERROR: late\n" in preview


def _pytest_verbose(tests: int, failing: int) -> str:
    """A `pytest -v` run as pytest prints it: one line per test, one failure, the report."""
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0 -- /usr/bin/python3",
        "rootdir: /home/me/proj",
        f"collecting ... collected {tests} items",
        "",
    ]
    for n in range(tests):
        status = "FAILED" if n == failing else "PASSED"
        name = f"test_big.py::test_many[{n}] {status}"
        lines.append(f"{name:<73}[{n * 100 // tests:3d}%]")  # as pytest pads it to 80 columns
    lines += [
        "",
        "=================================== FAILURES ===================================",
        f"_______________________________ test_many[{failing}] ________________________________",
        "",
        f"n = {failing}",
        "",
        "    def test_many(n):",
        f">       assert n != {failing}, 'n is the bad one'",
        "E       AssertionError: n is the bad one",
        "",
        "test_big.py:4: AssertionError",
        "=========================== short test summary info ============================",
        f"FAILED test_big.py::test_many[{failing}] - AssertionError: n is the bad one",
        f"======================= 1 failed, {tests - 1} passed in 9.12s =======================",
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("room", [2_000, 5_000])
def test_a_failure_deep_in_a_long_pytest_run_is_kept(room: int) -> None:
    # 12,000 tests (about 960 KB), one failure in the middle: before, the scan covered only
    # 64 times the room next to the head and the tail, and the line was lost.
    text = _pytest_verbose(12_000, 3_001)
    assert len(text) > 900_000
    preview = fit_text(text, room)
    assert len(preview) <= room
    assert "test_big.py::test_many[3001] FAILED" in preview


def test_a_level_after_a_first_word_leaves_the_next_line_matchable() -> None:
    # The catch-all ended in (?:\s|$), which took the newline: the next line never matched.
    text = (
        "ok\nbuild step FAILED\n--- FAIL: TestAdd (0.00s)\nok\n"
        "2024-05-01 ERROR x\nmain.go:3: error\n"
    )
    pattern = compile_salient()
    assert pattern is not None
    found = [text[s:e] for s, e in salient_spans(text, 0, len(text), pattern)]
    assert found == [
        "build step FAILED",
        "--- FAIL: TestAdd (0.00s)",
        "2024-05-01 ERROR x",
        "main.go:3: error",
    ]


@pytest.mark.parametrize("line", SALIENT)
def test_crlf_lines_are_found_as_lf_ones(line: str) -> None:
    text = f"before\r\n{line}\r\nafter\r\n"
    pattern = compile_salient()
    assert pattern is not None
    assert [text[s:e] for s, e in salient_spans(text, 0, len(text), pattern)] == [line + "\r"]


def test_a_crlf_preview_shows_the_line_without_its_carriage_return() -> None:
    text = _log(5_000, {2_000: "Killed", 2_500: "failures:"}).replace("\n", "\r\n")
    preview = fit_text(text, 5_000)
    assert "\n2000: Killed\n2500: failures:\n" in preview


def test_salient_lines_can_be_turned_off_and_extended() -> None:
    text = _log(5_000, {2_000: "ERROR: disk full", 3_000: "WARN: almost full"})
    off = fit_text(text, 5_000, options=PreviewOptions(salient_percent=0, salient=None))
    assert "disk full" not in off
    config = BudgetConfig(batch_budget=5_000, preview_salient_patterns=["WARN:"], persist=False)
    (entry,) = finalize_batch([ToolResult("c", "shell", (text,))], config=config)
    assert "\n2000: ERROR: disk full\n3000: WARN: almost full\n" in entry.slots[0]


def test_a_bad_salient_pattern_is_a_config_error_naming_the_setting() -> None:
    with pytest.raises(ConfigError, match="preview_salient_patterns"):
        BudgetConfig.from_env({"BUDGETWARE_PREVIEW_SALIENT_PATTERNS": '["(unclosed"]'})
    config = BudgetConfig.from_env({"BUDGETWARE_PREVIEW_SALIENT_PATTERNS": '["^WARN", "x+"]'})
    assert config.preview_salient_patterns == ("^WARN", "x+")


def _noisy(line: str) -> str:
    return "\n".join(["INFO ok"] * 3_000 + [line] + ["INFO ok"] * 3_000) + "\n"


@pytest.mark.parametrize(
    ("pattern", "line"),
    [
        ("(?i)warning", "WARNING: something odd happened here"),
        ("(?i)(?s)warn.ng", "Warn!ng: x"),
        ("(?x) warn  ing  # a verbose pattern with a comment", "warning: x"),
        ("(?m)^warn", "warn: x"),
    ],
)
def test_a_pattern_with_inline_flags_combines_and_bounds(pattern: str, line: str) -> None:
    # The flags were global inside the combined pattern: re.error at the first preview,
    # and finalize_body sent 54,247 bytes against a budget of 2,000.
    config = BudgetConfig(batch_budget=2_000, persist=False, preview_salient_patterns=[pattern])
    text = _noisy(line)
    (entry,) = finalize_batch([ToolResult("c", "shell", (text,))], config=config)
    assert len(entry.slots[0]) <= 2_000
    assert f"\n3001: {line}\n" in entry.slots[0]
    body = orjson.dumps(
        {
            "model": "gpt-4o",
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "sh", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": text},
            ],
        }
    )
    out = finalize_body("https://api.openai.com/v1/chat/completions", body, config=config)
    sent = orjson.loads(out)["messages"][2]["content"]
    assert len(sent) <= 2_000
    assert line in sent


def test_flags_stay_with_their_own_pattern() -> None:
    pattern = compile_salient(("(?i)warning", "note"))
    assert pattern is not None
    text = "WARNING: a\nNOTE: b\nnote: c\n"
    assert [text[s:e] for s, e in salient_spans(text, 0, len(text), pattern)] == [
        "WARNING: a",
        "note: c",
    ]


@pytest.mark.parametrize(
    ("patterns", "why"),
    [
        (["(a+)+$"], "unbounded time: a repeat inside a repeat"),
        (["(?:\\w+\\s?)*done"], "unbounded time: a repeat inside a repeat"),
        (["((a{1000}){1000}){1000}"], "counted repeats multiply"),
        (["x" * 1_001], "longer than 1,000 characters"),
        (["(?P<n>a)", "(?P<n>b)"], "cannot be combined.*redefinition of group name"),
        (["(a)", "(b)\\1"], "refers to a group by number"),
        (["a(?i)b"], "not a regular expression"),
    ],
)
def test_patterns_that_cannot_be_used_are_config_errors_at_setup(
    patterns: list[str], why: str
) -> None:
    with pytest.raises(ConfigError, match="BUDGETWARE_PREVIEW_SALIENT_PATTERNS.*" + why):
        BudgetConfig.from_env({"BUDGETWARE_PREVIEW_SALIENT_PATTERNS": json.dumps(patterns)})
    with pytest.raises(ValueError, match="preview_salient_patterns"):
        BudgetConfig(preview_salient_patterns=patterns)


def test_a_numbered_reference_in_the_first_pattern_with_groups_is_fine() -> None:
    pattern = compile_salient(("(ab)\\1",))
    assert pattern is not None
    text = "x\nabab\n"
    assert salient_spans(text, 0, len(text), pattern) == [(2, 6)]


def test_a_catastrophic_pattern_never_runs() -> None:
    # (a+)+$ took 3 s per preview on a line of 26 a's: it is refused where it is set.
    with pytest.raises(ValueError, match="unbounded time"):
        compile_salient(("(a+)+$",))


# -- the two ways to find lines give the same spans -----------------------------------------


def test_a_line_is_matched_alone() -> None:
    # $ is the end of the line; a pattern never sees the next line, not even its newline.
    pattern = compile_salient(("done$", "start\\nnext", "end\\s", "tab\\s"))
    assert pattern is not None
    text = "x\ndone\nstart\nnext\nend\ntab\t\ny\n"
    assert [text[s:e] for s, e in salient_spans(text, 0, len(text), pattern)] == ["done", "tab\t"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_default_match_holds_an_anchor(data: st.DataObject) -> None:

    index = data.draw(st.integers(0, len(DEFAULT_SALIENT_PATTERNS) - 1))
    head = data.draw(st.from_regex(re.compile(DEFAULT_SALIENT_PATTERNS[index]), fullmatch=True))
    tail = data.draw(st.text(max_size=20))
    indent = data.draw(st.sampled_from(["", "  ", "\t"]))
    line = (indent + head + tail).split("\n", 1)[0]
    pattern = compile_salient()
    assert pattern is not None
    if pattern.regex.match("\n" + line):
        assert _found_by_the_scan(line), line


def _found_by_the_scan(line: str) -> bool:
    """Whether the scan takes ``line`` for a candidate: it holds a word looked for anywhere,
    or starts (after its indentation) with one looked for at line starts only."""
    from budgetware.core.salient import _ANCHORS

    anywhere = [word for key, words in _ANCHORS.items() if key != "\n" for word in words]
    return any(anchor in line for anchor in anywhere) or line.lstrip(" \t").startswith(
        _ANCHORS["\n"]
    )


@pytest.mark.parametrize("line", SALIENT)
def test_every_listed_salient_line_holds_an_anchor(line: str) -> None:
    assert _found_by_the_scan(line)


def test_a_scan_keeps_the_first_and_last_lines_past_its_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A log whose every line is an error keeps memory bounded: both ends are kept.
    from budgetware.core import salient

    monkeypatch.setattr(salient, "MAX_SPANS", 10)
    monkeypatch.setattr(salient, "PIECE_CHARS", 50)
    text = "".join(f"ERROR: number {n}\n" for n in range(100))
    pattern = compile_salient()
    assert pattern is not None
    spans = salient.salient_spans(text, 0, len(text), pattern)
    shown = [text[s:e] for s, e in spans]
    assert shown == [f"ERROR: number {n}" for n in (*range(5), *range(95, 100))]


def _distinct_reference(
    text: str, spans: list[tuple[int, int]], limit: int
) -> list[tuple[int, int]]:
    """Scanned.distinct by its definition, one line at a time."""

    def line(span: tuple[int, int]) -> str:
        return text[span[0] : span[1]].rstrip()

    head: list[tuple[int, int]] = []
    seen: set[str] = set()
    for span in spans:
        if line(span) not in seen:
            seen.add(line(span))
            head.append(span)
    if len(head) <= limit:
        return head
    head = head[:limit]
    shown = {line(span) for span in head}
    tail: list[tuple[int, int]] = []
    for span in reversed(spans):
        if span <= head[-1] or len(tail) == limit:
            break
        if line(span) not in shown:
            shown.add(line(span))
            tail.append(span)
    return head + tail[::-1]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from(["ERROR: a", "ERROR: b ", "ERROR: c", "error: d", "ok"]), max_size=60
    ),
    st.integers(1, 5),
    st.data(),
)
def test_distinct_lines_are_the_first_and_the_last_ones(
    words: list[str], limit: int, data: st.DataObject
) -> None:
    # Repeated and trailing-space lines, ranges that start and end anywhere: the same spans
    # as the definition.
    from budgetware.core import salient

    text = "".join(
        f"{word}{n % 3 if data.draw(st.booleans()) else ''}\n" for n, word in enumerate(words)
    )
    pattern = compile_salient()
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    scanned = salient.scan(text, pattern)
    got = scanned.distinct(text, start, end, limit)
    reference = salient.salient_spans(text, start, end, pattern)
    assert got == _distinct_reference(text, reference, limit)


def test_a_unique_error_in_a_flood_of_one_repeated_error_is_found() -> None:
    from budgetware.core import salient

    text = "ERROR: disk full\n" * 20_000 + "FATAL: index corrupt\n" + "ERROR: disk full\n" * 20_000
    pattern = compile_salient()
    assert pattern is not None
    scanned = salient.scan(text, pattern)
    shown = [text[s:e] for s, e in scanned.distinct(text, 0, len(text), 64)]
    assert shown == ["ERROR: disk full", "FATAL: index corrupt"]


class _CountedSlices(str):
    """A text that counts the slices read from it."""

    slices = 0

    def __getitem__(self, key: Any) -> str:
        _CountedSlices.slices += isinstance(key, slice)
        return str(super().__getitem__(key))


def test_a_log_of_distinct_errors_is_chosen_from_without_reading_every_line() -> None:
    # 200,000 distinct errors: the walks read the lines at both ends only.
    from budgetware.core import salient

    text = "".join(f"error: request {n} failed\n" for n in range(200_000))
    pattern = compile_salient()
    scanned = salient.scan(text, pattern)
    counted = _CountedSlices(text)
    shown = [text[s:e] for s, e in scanned.distinct(counted, 0, len(text), 64)]
    assert shown[:2] == ["error: request 0 failed", "error: request 1 failed"]
    assert shown[-1] == "error: request 199999 failed"
    assert len(shown) == 128
    assert _CountedSlices.slices == 128


def test_the_scan_of_an_all_error_log_keeps_no_object_per_line() -> None:
    # 16 bytes a line in two arrays (a list of tuples held about 120): a 10 MB log of
    # errors no longer costs a hundred MB, nor a long collection of its tuples.
    import tracemalloc

    from budgetware.core import salient

    lines = 50_000
    text = "".join(f"error: request {n} failed\n" for n in range(lines))
    pattern = compile_salient()
    assert pattern is not None
    tracemalloc.start()
    try:
        scanned = salient.scan(text, pattern)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(scanned.starts) == len(scanned.ends) == lines
    assert peak < 48 * lines


# -- the frame that raised goes with the exception (issue 30, item 14) ------------------

OUTPUTS = Path(__file__).parent / "outputs"
_CARETS = re.compile(r"[ \t]*[~^]+[ \t]*")


def _shown(preview: str) -> dict[int, str]:
    """The salient lines a preview lists, by line number."""
    if "matching line" not in preview:
        return {}
    block = preview.split(" with line numbers ...]\n", 1)[1].split("\n[...]\n", 1)[0]
    return {int(n): line for n, line in re.findall(r"^(\d+): (.*)$", block, re.MULTILINE)}


def _frame_of(lines: list[str], number: int) -> list[int]:
    """The line numbers of the frame that raised the exception on line ``number``: Python's
    ``File ...`` line and its source line, or pytest's ``>`` line; [] if none ends there."""
    if lines[number - 1].startswith((" ", ">")):
        return []  # a frame's own line
    at = number - 2  # the index of the line before
    if at >= 0 and _CARETS.fullmatch(lines[at]):
        at -= 1
    if at >= 0 and lines[at].startswith(">"):
        return [at + 1]
    if at >= 1 and lines[at].startswith("    ") and lines[at - 1].startswith('  File "'):
        return [at, at + 1]
    return []


@pytest.mark.parametrize(
    "name", ["service_py310.log", "service_py311.log", "pytest_native.txt", "pytest_long.txt"]
)
def test_an_exception_from_the_middle_keeps_the_frame_that_raised(name: str) -> None:
    text = (OUTPUTS / name).read_text()
    lines = text.splitlines()
    exceptions = 0
    for room in range(600, 4_001, 200):
        preview = fit_text(text, room)
        assert len(preview) <= room
        shown = _shown(preview)
        for number in shown:
            frame = _frame_of(lines, number)
            exceptions += bool(frame)
            for line in frame:
                assert shown.get(line) == lines[line - 1].rstrip(), (room, number, line)
    assert exceptions > 0  # the outputs hold exceptions that the previews show
