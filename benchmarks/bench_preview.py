"""Preview quality and speed: what the model reads, against a plain 20/80 head and tail.

Run: scripts/bench benchmarks/bench_preview.py (the token part alone, without making the
corpus: .venv/bin/python benchmarks/bench_preview.py --speed)

Quality is measured on a corpus this script makes by running real tools on this machine
(pytest with failures, a Python program that prints tracebacks, gcc on broken C, git log,
grep -rn, find, pip's JSON, a JSON API payload, CSV from git), at rooms of 100, 200, 1,000
and 5,000 characters:

- salient lines kept: of the lines that name a failure (a reference rule of this script,
  independent of budgetware's patterns: the words error, fail, failed, failure, traceback,
  exception, panic, fatal, or pytest's ``E   `` lines), the share that appear in the preview;
- JSON previews that parse: the text after the notice line is valid JSON;
- content share: the part of a preview that is the output's own text (not notices, markers
  or line numbers).

Targets (issue 17): every JSON preview parses from 1,000 chars up; at least 90% of salient
lines kept at 5,000 chars; content share at least 50% from 100 chars up.

Exact token counting over a 20-turn conversation is measured against the chars unit
(within 1.5x cached; the uncached cost reported too). What bounding a 10 MB output costs,
salient scan and JSON preview included, is in bench_targets.py.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
from _harness import print_table

from budgetware.core import finalize as finalize_module
from budgetware.core import tokens
from budgetware.core.config import BudgetConfig
from budgetware.finalizer import fit_text
from budgetware.wire.body import finalize_body

ROOT = Path(__file__).resolve().parent.parent
ROOMS = (100, 200, 1_000, 5_000)
REF = "/home/user/.cache/budgetware/artifacts/" + "0" * 64 + ".txt"
SALIENT = re.compile(
    r"\b(?:error|errors|fail|failed|failure|failures|traceback|exception|panic|fatal)\b"
    r"|^E {2,}\S",
    re.IGNORECASE,
)


# -- the corpus: real tools, run here -------------------------------------------------


def _run(args: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(
        args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300
    )
    return done.stdout


def corpus(work: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    tests = work / "test_suite.py"
    tests.write_text(
        "import pytest\n\n"
        "def helper(x):\n    return {'a': 1}[x]\n\n"
        "@pytest.mark.parametrize('n', range(400))\n"
        "def test_many(n):\n    assert n * 2 == n + n\n\n"
        "def test_assert():\n    assert sum([1, 2]) == 4, 'sum is off'\n\n"
        "def test_keyerror():\n    helper('missing')\n\n"
        "@pytest.mark.parametrize('n', range(400, 700))\n"
        "def test_more(n):\n    assert n >= 0\n\n"
        "def test_raises():\n    raise RuntimeError('connection reset by peer')\n"
    )
    out["pytest -v with failures"] = _run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-v",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            str(tests),
        ],
        cwd=work,
    )
    # A long verbose run (12,000 tests, about 960 KB) with one failure a quarter of the way
    # in: far from the head and the tail, where only a scan of the whole middle finds it.
    big = work / "big"
    big.mkdir()
    (big / "test_big.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.parametrize('n', range(6000))\n"
        "def test_many(n):\n    assert n != 3001, 'n is the bad one'\n\n"
        "@pytest.mark.parametrize('n', range(6000))\n"
        "def test_more(n):\n    assert n >= 0\n"
    )
    out["pytest -v, 12,000 tests, 1 failure"] = _run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-v",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-W",
            "ignore",
            str(big / "test_big.py"),
        ],
        cwd=big,
    )
    for name, batches, failing in (
        ("python tracebacks", 3_000, (900, 2_100)),
        ("python tracebacks, 4 MB", 60_000, (17_000, 41_000)),
    ):
        script = work / "service.py"
        script.write_text(
            "import traceback\n"
            "def parse(v):\n    return int(v)\n"
            f"for i in range({batches}):\n"
            "    print(f'2024-05-01 12:{i // 60 % 60:02d}:{i % 60:02d} INFO worker-{i % 4} '\n"
            "          f'processed batch {i} in {i % 97} ms')\n"
            f"    if i in {failing!r}:\n"
            "        try:\n            parse('x' + str(i))\n"
            "        except ValueError:\n            traceback.print_exc()\n"
            f"raise SystemExit('fatal: giving up after {batches} batches')\n"
        )
        out[name] = _run([sys.executable, "-u", str(script)], cwd=work)
    c = work / "broken.c"
    lines = ["#include <stdio.h>"]
    for i in range(300):
        body = f"    int unused{i} = {i};\n    return x + {i};"
        if i in (40, 150, 260):
            body = f"    return undeclared_{i} + x;"
        lines.append(f"static int f{i}(int x) {{\n{body}\n}}")
    lines.append('int main(void) { printf("%d\\n", f1(2)) return 0; }')
    c.write_text("\n".join(lines) + "\n")
    out["gcc on broken C"] = _run(["gcc", "-Wall", "-Wextra", "-c", str(c), "-o", "/dev/null"])
    out["git log --stat"] = _run(["git", "-C", str(ROOT), "log", "--stat", "-n", "400"])
    out["grep -rn"] = _run(["grep", "-rn", "def ", str(ROOT / "budgetware")])
    out["find"] = _run(["find", str(Path(sys.prefix) / "lib"), "-name", "*.py"])
    out["pip inspect (JSON)"] = _run([sys.executable, "-m", "pip", "inspect", "--quiet"])
    out["pip list (JSON)"] = _run([sys.executable, "-m", "pip", "list", "--format=json"])
    out["JSON API payload"] = json.dumps(
        {
            "object": "list",
            "data": [
                {
                    "id": f"msg_{i:05d}",
                    "created": 1714560000 + i,
                    "author": {"login": f"user{i % 17}", "type": "User"},
                    "title": f"Issue {i}: timeouts when the cache is cold",
                    "labels": ["bug", "cache"] if i % 3 else ["question"],
                    "body": "Steps to reproduce: start the service, send 100 requests. " * 4,
                }
                for i in range(600)
            ],
            "has_more": True,
            "next_cursor": "c_0600",
        },
        indent=2,
    )
    csv_log = _run(["git", "-C", str(ROOT), "log", "-n", "600", "--format=%H,%an,%ad,%s"])
    out["CSV (git log)"] = "sha,author,date,subject\n" + csv_log
    return out


# -- the baseline: a plain 20/80 head and tail (budgetware before issue 17) -----------


def head_tail(text: str, room: int) -> str:
    if len(text) <= room:
        return text
    omitted = len(text) - room
    for _ in range(16):
        notice = f"[Tool output truncated: {len(text):,} chars, {omitted:,} omitted.]"
        marker = f"\n[... {omitted:,} chars omitted ...]\n"
        space = room - len(notice) - 2 - len(marker)
        if space < 0:
            return notice[:room]
        head, tail = text[: space // 5], text[len(text) - (space - space // 5) :]
        actual = len(text) - len(head) - len(tail)
        if actual == omitted:
            return f"{notice}\n\n{head}{marker}{tail}"
        omitted = actual
    return notice[:room]


# -- the measures ----------------------------------------------------------------------


def salient_lines(text: str) -> list[str]:
    return list(
        dict.fromkeys(
            line.strip()[:80]
            for line in text.splitlines()
            if SALIENT.search(line) and line.strip()
        )
    )


def json_body(preview: str) -> Any:
    first, _, rest = preview.partition("\n")
    if not first.startswith("[") or "JSON" not in first:
        return None
    try:
        return json.loads(rest)
    except ValueError:
        return None


_MARKER_STRING = re.compile(r"omitted \.\.\.|^\.\.\.$|^\{\.\.\. object|^\[\.\.\. array")
_NUMBERED = re.compile(r"^(\d+): (.*)$")


def own_text(preview: str, original: str) -> int:
    """How much of the preview is the original's own text."""
    value = json_body(preview)
    if value is not None:
        own = 0
        stack = [value]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                for key, child in node.items():
                    own += len(json.dumps(key, ensure_ascii=False)) + 1
                    stack.append(child)
            elif isinstance(node, list):
                stack.extend(node)
            elif isinstance(node, str):
                if not _MARKER_STRING.search(node):
                    own += len(
                        json.dumps(
                            re.sub(r" \[\.\.\. [\d,]+ chars omitted \.\.\.\] ", "", node),
                            ensure_ascii=False,
                        )
                    )
            else:
                own += len(json.dumps(node))
        return own
    own = 0
    lines = preview.split("\n")
    previous = False  # the line before was the output's own text: so is the newline
    for index, line in enumerate(lines):
        mine = 0
        if (
            (index == 0 and line.startswith("[") and line.endswith("]") and line not in original)
            or line == "[...]"
            or (line.startswith("[...") and not line.startswith("[...]"))
        ):
            pass
        elif line.startswith("[...]") and line[5:] in original:
            mine = len(line) - 5
        elif (numbered := _NUMBERED.match(line)) and line not in original:
            mine = len(numbered.group(2)) if numbered.group(2) in original else 0
        elif line and line in original:
            mine = len(line)
        own += mine + (1 if previous and mine else 0)
        previous = bool(mine)
    return own


# The outputs of runs that failed: their failure lines are what "salient" means. Elsewhere
# the reference words appear by accident (a path with "errors" in it, a commit subject).
FAILURES = (
    "pytest -v with failures",
    "pytest -v, 12,000 tests, 1 failure",
    "python tracebacks",
    "python tracebacks, 4 MB",
    "gcc on broken C",
)


def quality(outputs: dict[str, str]) -> None:
    budget_rows = []
    for name, text in outputs.items():
        salient = str(len(salient_lines(text))) if name in FAILURES else "-"
        budget_rows.append(
            (
                name,
                f"{len(text):,}",
                salient,
                "yes" if json_body("[JSON]\n" + text) is not None else "",
            )
        )
    print_table(
        "the corpus (real tools, run now)",
        budget_rows,
        ("output", "chars", "salient lines", "JSON"),
    )
    rows = []
    for room in ROOMS:
        for method, fit in (
            ("budgetware", lambda t, r: fit_text(t, r, refs=[REF])),
            ("20/80 head+tail", head_tail),
        ):
            kept = total = 0
            parsed = docs = 0
            shares = []
            for name, text in outputs.items():
                if len(text) <= room:
                    continue
                preview = fit(text, room)
                assert len(preview) <= room, (name, room)
                wanted = salient_lines(text) if name in FAILURES else []
                total += len(wanted)
                kept += sum(1 for line in wanted if line in preview)
                if json_body("[JSON]\n" + text) is not None:
                    docs += 1
                    parsed += json_body(preview) is not None
                shares.append(own_text(preview, text) / len(preview))
            rows.append(
                (
                    f"{room:,}",
                    method,
                    f"{kept / total:.0%} ({kept}/{total})" if total else "-",
                    f"{parsed}/{docs}",
                    f"{min(shares):.0%}",
                    f"{sum(shares) / len(shares):.0%}",
                )
            )
    print_table(
        "preview quality (targets: JSON parses from 1,000 up; >= 90% salient at 5,000; "
        "content >= 50% from 100 up)",
        rows,
        ("room", "method", "salient lines kept", "JSON parses", "content min", "content mean"),
    )


# -- speed ---------------------------------------------------------------------------


def _log(size: int) -> str:
    lines = []
    n = 0
    total = 0
    while total < size:
        stamp = f"2024-05-01 12:{n // 60 % 60:02d}:{n % 60:02d},123"
        line = f"{stamp} INFO [worker-{n % 8}] request {n} handled in {n % 97} ms"
        if n % 5_000 == 2_500:
            line = f"2024-05-01 12:00:00,123 ERROR [worker-{n % 8}] request {n} failed: timeout"
        lines.append(line)
        total += len(line) + 1
        n += 1
    return "\n".join(lines) + "\n"


def _body(text: str) -> bytes:
    return orjson.dumps(
        {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": text}]}
    )


def _pytest_log(size: int, seed: int = 1) -> str:
    """A `pytest -v` run of about ``size`` characters as pytest prints it: 143,000 test
    lines for 10 MB, a failure in one of 2,000, then the failures with their assertion
    detail, captured logs and tracebacks, the short summary and the footer."""
    rng = random.Random(seed)
    out = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0 -- /usr/bin/python",
        "cachedir: .pytest_cache",
        "rootdir: /home/me/proj",
        "plugins: xdist-3.6.1, hypothesis-6.1",
        "collecting ... collected 150000 items",
        "",
    ]
    total = sum(len(line) + 1 for line in out)
    failures: list[tuple[str, int]] = []
    modules = [f"tests/unit/test_module_{m}.py" for m in range(300)]
    i = 0
    while total < size * 0.8:
        module = modules[i // 500 % 300]
        status = "PASSED"
        if rng.random() < 0.0005:
            status = "FAILED"
            failures.append((module, i))
        elif rng.random() < 0.003:
            status = "SKIPPED"
        percent = i * 100 // 150_000
        line = f"{module}::TestThing::test_case_{i}[param-{i % 13}] {status} [{percent:3d}%]"
        out.append(line)
        total += len(line) + 1
        i += 1
    out += ["", "=================================== FAILURES ==================================="]
    k = 0
    while total < size:
        module, n = failures[k % len(failures)]
        k += 1
        block = [
            f"_____________________ TestThing.test_case_{n}[param-{n % 13}] _____________________",
            "",
            "self = <tests.unit.test_module.TestThing object at 0x7f3a2c1b9d50>",
            "",
            f"    def test_case_{n}(self):",
            "        client = make_client()",
            "        resp = client.get('/api/items')",
            ">       assert resp.status_code == 200",
            "E       assert 500 == 200",
            "E        +  where 500 = <Response [500]>.status_code",
            "",
            f"{module}:{n % 400 + 10}: AssertionError",
            "----------------------------- Captured log call ------------------------------",
        ]
        block += [
            f"INFO     app.server:server.py:{j + 100} handled request {j} in {j % 17} ms"
            for j in range(30)
        ]
        block += [
            "ERROR    app.server:server.py:211 Traceback (most recent call last):",
            '  File "/home/me/proj/app/server.py", line 205, in handle',
            "    return self.dispatch(req)",
            '  File "/home/me/proj/app/db.py", line 88, in query',
            "    raise ConnectionError('reset by peer')",
            "ConnectionError: reset by peer",
        ]
        out += block
        total += sum(len(line) + 1 for line in block)
    out.append("=========================== short test summary info ============================")
    out += [
        f"FAILED {m}::TestThing::test_case_{n}[param-{n % 13}] - assert 500 == 200"
        for m, n in failures
    ]
    out.append(
        f"============ {len(failures)} failed, {i - len(failures)} passed in 812.31s ============"
    )
    return "\n".join(out) + "\n"


def _turns(count: int) -> list[bytes]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing service."}]
    bodies = []
    for t in range(count):
        calls = [f"call_{t}_{i}" for i in range(2)]
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": c, "type": "function", "function": {"name": "shell", "arguments": "{}"}}
                    for c in calls
                ],
            }
        )
        for i, c in enumerate(calls):
            out = "".join(
                f"[{t:02d}:{i}] line {n}: GET /api/items?id={n} -> 200 ok in {n % 89} ms\n"
                for n in range(500)
            )
            messages.append({"role": "tool", "tool_call_id": c, "content": out})
        bodies.append(orjson.dumps({"model": "gpt-4o", "messages": messages}))
    return bodies


def _forget() -> None:
    """Forget every count and preview, as a new process would start."""
    tokens._COUNTS.clear()
    finalize_module._FITTED.clear()
    finalize_module._fitted_chars = 0


def conversation() -> None:
    url = "https://api.openai.com/v1/chat/completions"
    bodies = _turns(20)
    artifacts = tempfile.mkdtemp()
    try:
        chars = BudgetConfig(batch_budget=20_000, artifact_dir=artifacts)
        exact = BudgetConfig(batch_budget=5_000, unit="tokens:o200k_base", artifact_dir=artifacts)
        for b in bodies:  # write the artifacts and load the vocabulary: a warm store
            finalize_body(url, b, config=chars)
            finalize_body(url, b, config=exact)

        def run(config: BudgetConfig, *, fresh: bool, clear: bool) -> float:
            if fresh:  # a new process: nothing counted or previewed yet
                _forget()
            start = time.perf_counter()
            for b in bodies:
                if clear:
                    _forget()
                finalize_body(url, b, config=config)
            return time.perf_counter() - start

        rows = []
        warm_chars = min(run(chars, fresh=False, clear=False) for _ in range(3))
        warm_exact = min(run(exact, fresh=False, clear=False) for _ in range(3))
        cold_chars = min(run(chars, fresh=True, clear=False) for _ in range(2))
        cold_exact = min(run(exact, fresh=True, clear=False) for _ in range(2))
        none_exact = min(run(exact, fresh=True, clear=True) for _ in range(2))
        rows.append(
            (
                "chars, every output seen before (steady state)",
                "1.00x",
                f"{warm_chars * 1e3:.0f} ms",
            )
        )
        rows.append(
            (
                "tokens:o200k_base, every output seen before (cached)",
                f"{warm_exact / warm_chars:.2f}x",
                f"{warm_exact * 1e3:.0f} ms",
            )
        )
        rows.append(
            (
                "tokens:o200k_base, a new process: each output tokenized once",
                f"{cold_exact / cold_chars:.2f}x (of chars, same)",
                f"{cold_exact * 1e3:.0f} ms vs {cold_chars * 1e3:.0f} ms",
            )
        )
        rows.append(
            (
                "tokens:o200k_base, no cache at all (every request)",
                f"{none_exact / warm_chars:.2f}x",
                f"{none_exact * 1e3:.0f} ms",
            )
        )
        print_table(
            f"20 turns, 2 x 30 KB tool outputs per turn ({len(bodies[-1]) / 1e6:.1f} MB last "
            "body), finalize_body per request (target: exact tokens cached <= 1.5x chars)",
            rows,
            ("unit", "vs chars", "20 requests"),
        )
    finally:
        shutil.rmtree(artifacts, ignore_errors=True)


def main() -> None:
    if "--speed" in sys.argv[1:]:
        conversation()
        return
    work = Path(tempfile.mkdtemp(prefix="budgetware-previews-"))
    try:
        outputs = corpus(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    quality(outputs)
    conversation()


if __name__ == "__main__":
    main()
