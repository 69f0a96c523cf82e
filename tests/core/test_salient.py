"""Salient lines: what the default patterns find, and how previews keep them."""

from __future__ import annotations

import re

import pytest

from budgetware import BudgetConfig, ConfigError, ToolResult, finalize_batch, fit_text
from budgetware.core.fit import PreviewOptions
from budgetware.core.salient import compile_salient, salient_spans

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


def test_the_scan_of_a_huge_middle_covers_both_ends_of_it() -> None:
    # 64 times the room, half next to the head and half next to the tail: the cost of a
    # preview stays bounded by what it can show.
    text = _log(100_000, {100: "ERROR: early", 50_000: "ERROR: center", 99_900: "ERROR: late"})
    preview = fit_text(text, 5_000)
    assert "ERROR: early" in preview
    assert "ERROR: late" in preview
    assert "ERROR: center" not in preview


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
