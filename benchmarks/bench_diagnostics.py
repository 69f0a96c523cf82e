"""Diagnostics off: the finalizer, the guard and finalize_body against hook-free builds.

Target (issue 6): with diagnostics off, each costs within 2% of a build with the hooks
removed, measured as a ratio in one run.

Method: the hook-free build is generated, not hand-copied. The source of
``budgetware.core.finalize`` (and of ``budgetware.wire.body``) is parsed, every statement
``if diagnostics...:`` / ``if _recorder...:`` without an ``else`` and the imports of those
modules are removed from the syntax tree, and the result is compiled into a separate module
that the hook-free ``finalize_body`` copy calls. The script asserts that hooks were found
and removed, so the two builds can never silently be the same code. Both builds run in
the same process on the same inputs, interleaved round by round (the order alternates),
and the ratio is the median over rounds of (hooked time / hook-free time) in the same
round: pairing cancels slow drift and the median ignores bursts from other processes.
The best-round ratio is shown too, and an A/A row (the hooked build against itself) shows
the noise floor of the machine.

Run: ``.venv/bin/python benchmarks/benchdiagnostics.py [--check]`` (``--check`` exits 1
when a median ratio exceeds 1.02).
"""

from __future__ import annotations

import ast
import gc
import inspect
import json
import statistics
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import print_table

import budgetware.core.finalize as finalize_module
import budgetware.wire.body as body_module
from budgetware import BudgetConfig
from budgetware.diagnostics import events as diagnostics
from budgetware.finalizer import ToolResult

# The core reports through ``observer = observe.batch_observer; if observer is not None: ...``
# (budgetware.core.observe); the HTTP layer through ``_recorder``.
HOOK_MODULES = {"observe", "observer", "_recorder"}
TARGET = 1.02


class _StripHooks(ast.NodeTransformer):
    """Drops ``if <hook module>...:`` statements and the imports of the hook modules."""

    def __init__(self) -> None:
        self.removed = 0

    def visit_If(self, node: ast.If) -> Any:
        names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
        if names & HOOK_MODULES and not node.orelse:
            self.removed += 1
            return None
        return self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> Any:
        names = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        return None if names & HOOK_MODULES else node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> Any:
        kept = [a for a in node.names if (a.asname or a.name) not in HOOK_MODULES]
        if not kept:
            return None
        node.names = kept
        return node


def without_hooks(module: types.ModuleType, **replace: Any) -> tuple[types.ModuleType, int]:
    """A copy of ``module`` compiled without its diagnostics hooks; names in ``replace``
    are rebound after execution (to point a copy at other hook-free copies)."""
    tree = ast.parse(inspect.getsource(module))
    stripper = _StripHooks()
    tree = ast.fix_missing_locations(stripper.visit(tree))
    copy = types.ModuleType(module.__name__ + "__without_hooks")
    copy.__dict__["__file__"] = module.__file__
    exec(compile(tree, f"<{module.__name__} without hooks>", "exec"), copy.__dict__)
    copy.__dict__.update(replace)
    return copy, stripper.removed


def compare(
    hooked: Callable[[], object], bare: Callable[[], object], *, rounds: int, number: int
) -> tuple[float, float, float]:
    """(best hooked seconds per call, best-round ratio, median paired ratio)."""
    a_times: list[float] = []
    b_times: list[float] = []
    gc.collect()
    gc.disable()
    try:
        for round_ in range(rounds):
            pair = [(hooked, a_times), (bare, b_times)]
            for fn, times in pair if round_ % 2 == 0 else reversed(pair):
                start = time.perf_counter()
                for _ in range(number):
                    fn()
                times.append((time.perf_counter() - start) / number)
    finally:
        gc.enable()
    ratios = [a / b for a, b in zip(a_times, b_times)]
    return min(a_times), min(a_times) / min(b_times), statistics.median(ratios)


def _openai_body(n: int, size: int) -> bytes:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "look at these files"}]
    messages.append(
        {
            "role": "assistant",
            "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "t", "arguments": "{}"}}
                for i in range(n)
            ],
        }
    )
    messages += [
        {"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} " + "line of output\n" * size}
        for i in range(n)
    ]
    return json.dumps({"model": "m", "messages": messages}).encode()


def main(argv: list[str]) -> int:
    diagnostics.reset()
    if diagnostics.active() or diagnostics.enabled:
        print("unset BUDGETWARE_DEBUG_LOG_FILE: this measures diagnostics off", file=sys.stderr)
        return 2
    bare_finalize, removed = without_hooks(finalize_module)
    assert removed >= 2, "no hooks found in budgetware.core.finalize: nothing to compare"
    bare_body, _ = without_hooks(
        body_module,
        finalize_batch_written=bare_finalize.finalize_batch_written,
        guard_batch=bare_finalize.guard_batch,
    )
    config = BudgetConfig(persist=False)
    tiny = [ToolResult("c", "read", ["ok"])]
    typical = [ToolResult(f"c{i}", "read", ["x" * 2_000]) for i in range(20)]
    over = [ToolResult(f"c{i}", "grep", ["y" * 150_000]) for i in range(3)]
    body = _openai_body(4, 5_000)  # ~300 KB, over the 200,000 budget
    url = "https://api.example/v1/chat/completions"
    assert bare_body.finalize_body(url, body, config=config) == body_module.finalize_body(
        url, body, config=config
    )
    cases: list[tuple[str, Callable[[], object], Callable[[], object], int, int]] = [
        (
            "finalize_batch, 1 tiny result (worst case)",
            lambda: finalize_module.finalize_batch(tiny, config=config),
            lambda: bare_finalize.finalize_batch(tiny, config=config),
            301,
            2_000,
        ),
        (
            "finalize_batch, 20 x 2 KB within budget",
            lambda: finalize_module.finalize_batch(typical, config=config),
            lambda: bare_finalize.finalize_batch(typical, config=config),
            301,
            500,
        ),
        (
            "guard_batch, 20 x 2 KB within budget",
            lambda: finalize_module.guard_batch(typical, config=config),
            lambda: bare_finalize.guard_batch(typical, config=config),
            301,
            500,
        ),
        (
            "finalize_batch, 3 x 150 K over budget",
            lambda: finalize_module.finalize_batch(over, config=config),
            lambda: bare_finalize.finalize_batch(over, config=config),
            201,
            20,
        ),
        (
            "finalize_body, 4 x 75 KB OpenAI body",
            lambda: body_module.finalize_body(url, body, config=config),
            lambda: bare_body.finalize_body(url, body, config=config),
            201,
            3,
        ),
    ]
    # The same build against itself: the noise floor of this machine, for reading the rest.
    _, aa_best, aa_median = compare(
        lambda: finalize_module.finalize_batch(typical, config=config),
        lambda: finalize_module.finalize_batch(typical, config=config),
        rounds=301,
        number=500,
    )
    rows: list[tuple[str, ...]] = [
        ("noise floor: hooked vs itself, 20 x 2 KB", "", f"{aa_best:.4f}", f"{aa_median:.4f}", "")
    ]
    failed = False
    for name, hooked, bare, rounds, number in cases:
        best, ratio, median = compare(hooked, bare, rounds=rounds, number=number)
        ok = median <= TARGET
        failed |= not ok
        verdict = "ok" if ok else "OVER"
        rows.append((name, f"{best * 1e6:,.2f} us", f"{ratio:.4f}", f"{median:.4f}", verdict))
    print_table(
        f"diagnostics off vs hooks removed ({removed} hooks stripped from core.finalize)",
        rows,
        ("case", "hooked, best", "ratio (best)", "ratio (median)", f"median <= {TARGET}"),
    )
    return 1 if failed and "--check" in argv else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
