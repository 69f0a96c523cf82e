"""Search patterns: a pattern that would exhaust memory when the regex package compiles it is
refused by reading it, before anything is compiled; every reasonable pattern still runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from budgetware import InvalidPattern, grep_artifact
from budgetware.finalizer import LocalArtifactStore
from budgetware.retrieval.pattern import (
    MAX_EXPANSION,
    compile_pattern,
    crlf_line_ends,
    expansion,
    pattern_problem,
)

LONG_BODY = "abcdefghij" * 98  # 980 characters

# Each one allocates hundreds of megabytes or gigabytes inside regex.compile (measured on
# regex 2026.11: 263 MB for (a{1000}){1000}, 441 MB for the long body, 295 MB for the
# alternatives, a MemoryError at 3 GB for the nested ones).
BOMBS = [
    "((a{1000}){1000}){1000}",
    "(a{1000}){1000}",
    "((a{1000,}){1000,}){1000,}",  # the minimum of an open repeat is expanded too
    f"({LONG_BODY}){{100000}}",  # counts within bounds, a long body
    "(?:\\d|\\s|[a-z]|x|[%&]|\\w|[0-5]|y|\\S|[;,]){100000}",  # re's parser merges these
    "[" + "".join(chr(0x4E00 + 2 * i) for i in range(300)) + "]{100000}",  # a large set
    "(?x)(a{1 000}){1 000}",  # verbose: regex reads a{1 000} as a{1000}, re as text
    "(?x)(a{1#\n000}){1#\n000}",  # ... even with a comment between the digits
    "(?<=a+)(a{1000}){1000}",  # a variable-length lookbehind: re cannot parse it
    "(?:\\p{L}{1000}){1000}",  # regex's own syntax
    "(?:\\X){100000}",
    "[[:alpha:]](?:\\d{1000}){1000}",  # re cannot parse it: the braces are a repeat
    "\\p{L}(?:\\w{1000}){1000}",
    "a" * 1001 + "+",  # too long
]

REASONABLE = [
    "FAILED tests/\\w+\\.py",
    "\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}",
    "2026-12-01T05:\\d{2}",
    "[0-9a-f]{64}",
    ".{0,5000}FAILED.{0,5000}",
    "(?:\\s+\\S+){1,50}",
    "a{100000}",
    "\\p{Lu}{3}",
    "(?<=\\w+)x{10}",
    "[[:alpha:]]{3}",
    "(?:abc){e<=1}",
    "(?x) \\d{4} - \\d{2}",
    "(?i)error|warning",
    "^(a|aa)+$",  # backtracks: the time limit's to stop, not the compiler's
]


@pytest.mark.parametrize("pattern", BOMBS)
def test_a_pattern_that_expands_without_bound_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: str
) -> None:
    regex = pytest.importorskip("regex")
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put("a" * 100)

    def never(*args: object, **kw: object) -> None:
        raise AssertionError("a refused pattern reached regex.compile")

    # Refused by reading it: were it compiled, this process would run out of memory.
    monkeypatch.setattr(regex, "compile", never)
    with pytest.raises(InvalidPattern, match=r"pattern refused: .*use smaller counts"):
        grep_artifact(ref, pattern, store=store)
    assert pattern_problem(pattern) is not None


@pytest.mark.parametrize("pattern", REASONABLE)
def test_reasonable_patterns_run(tmp_path: Path, pattern: str) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put("FAILED tests/test_a.py 2026-12-01T05:00 " + "a" * 64 + "\n")
    assert pattern_problem(pattern) is None
    assert compile_pattern(pattern).compiled is not None
    grep_artifact(ref, pattern, store=store)


def test_the_expansion_counts_items_times_the_rounds_around_them() -> None:
    assert expansion("abc") == 3
    assert expansion("a{10}") == 10
    assert expansion("(?:ab){10}c") > 20
    assert expansion("(a{10}){10}") >= 100
    assert expansion("(a{10,}){10,}") >= 100  # an open repeat builds its minimum
    assert expansion("(a|b){10}") >= 20  # alternatives count, unmerged
    assert expansion("\\{1000\\}") < 10  # escaped braces are text
    assert expansion("[a{1000}]") < 10  # so are braces in a set
    assert expansion("((a{1000}){1000}){1000}") > MAX_EXPANSION


def test_nothing_is_allocated_for_a_refused_pattern(tmp_path: Path) -> None:
    # The executor in a process whose address space allows 256 MiB more than it has: each
    # pattern is answered with one refusal line, and the process's peak memory barely moves
    # (before the refusal, the first one died at the limit with a MemoryError).
    if not Path("/proc/self/status").exists():
        pytest.skip("reads the address space size from /proc")
    script = r"""
import json, resource, sys
from budgetware.finalizer import LocalArtifactStore
from budgetware.tools import run_read_tool_output

store = LocalArtifactStore(sys.argv[1])
ref = store.put("a" * 5000 + "\n")
run_read_tool_output({"ref": ref, "pattern": "a+b"}, store=store)  # regex loaded

def address_space():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024

limit = address_space() + 256 * 2**20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
answers = [
    run_read_tool_output({"ref": ref, "pattern": p}, store=store)
    for p in json.loads(sys.argv[2])
]
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"answers": answers, "grown_kib": grown}))
"""
    env = {**os.environ, "BUDGETWARE_RAISE_ERRORS": "0"}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "a"), json.dumps(BOMBS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    for pattern, answer in zip(BOMBS, result["answers"]):
        assert answer.startswith("error: pattern refused: "), (pattern, answer)
        assert "\n" not in answer
    assert result["grown_kib"] < 32 * 1024, result


# -- `$` at CRLF line ends -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "rewritten"),
    [
        ("b$", "b(?=\\r?$)"),
        ("^a$|^b$", "^a(?=\\r?$)|^b(?=\\r?$)"),
        ("\\$5", "\\$5"),  # escaped: a dollar sign
        ("[$]x$", "[$]x(?=\\r?$)"),  # in a set: a dollar sign
        ("[]$]$", "[]$](?=\\r?$)"),  # a leading ] is a member
        ("[[:alpha:]$]$", "[[:alpha:]$](?=\\r?$)"),
        ("(?#costs $5)$", "(?#costs $5)(?=\\r?$)"),  # a comment
        ("(?x) a  # $ here\n$", "(?x) a  # $ here\n(?=\\r?$)"),  # a verbose comment
        ("[a$", "[a$"),  # unreadable: left to the compiler as written
        ("abc", "abc"),
    ],
)
def test_dollar_anchors_match_before_crlf(pattern: str, rewritten: str) -> None:
    assert crlf_line_ends(pattern) == rewritten
