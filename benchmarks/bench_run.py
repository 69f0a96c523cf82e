"""``budgetware run`` start-up overhead against the same command without it.

Target (issue 16): under 50 ms added to an agent's start-up.

Method: each case runs a command directly and through ``budgetware run`` (the installed
console script), interleaved round by round with alternating order; the figure is the
median over rounds of (with - without) in the same round, so slow drift and bursts from
other processes cancel out. Cases:

- an empty program (``python -c pass``): the whole fixed cost (the ``budgetware`` process,
  ``exec``, the start-up hook);
- a program on httpx alone (import httpx, build a client): ``instrument()`` at the import,
  in a program that loads neither pydantic nor asyncio itself;
- an agent's start-up (import openai, build a client): what a user notices, where the
  program loads pydantic itself;
- the same with a setting given as an option (``--batch-budget 50000``).

Both wall time and CPU time (user + system of every process the command ran, from
``getrusage``) are reported: on a shared machine CPU time is the steadier of the two.

Bytecode is written and used as an installed package has it (``PYTHONDONTWRITEBYTECODE``
is dropped for the commands; the warm-up rounds compile): otherwise every budgetware
module would be compiled again in every process, which no user pays.

``--source DIR`` runs budgetware from another checkout (put first on ``PYTHONPATH`` for
both commands, so the bootstrap folder is that checkout's too): the same machine and
method for a before/after comparison, e.g. ``git worktree add --detach /tmp/base main``.

For the figure users see, run it with the python of a venv where the built wheel is
installed (an editable install adds its import finder to every process):
``python -m build --wheel -o /tmp/w && python -m venv /tmp/v && /tmp/v/bin/pip install
/tmp/w/*.whl openai httpx && /tmp/v/bin/python benchmarks/bench_run.py``.

Run: ``.venv/bin/python benchmarks/bench_run.py [--rounds N] [--source DIR] [--check]``.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import print_table

BIN = Path(sys.executable).parent
PYTHON = str(BIN / "python")
BUDGETWARE = str(BIN / "budgetware")
TARGET_MS = 50.0
AGENT = "import openai; openai.OpenAI(api_key='k', base_url='http://127.0.0.1:9/v1')"
HTTPX = "import httpx; httpx.Client()"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and every process it ran)."""
    cpu = _cpu()
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, _cpu() - cpu


def compare(
    program: list[str], options: list[str], rounds: int, source: str | None = None
) -> tuple[float, float, float, float]:
    """Medians: (wall without, wall with, paired wall difference, paired CPU difference)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETWARE_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH")) if p)
    wrapped = [BUDGETWARE, "run", *options, "--", *program]
    for _ in range(2):  # warm the file cache and the bytecode caches
        _time(program, env)
        _time(wrapped, env)
    plain: list[tuple[float, float]] = []
    run: list[tuple[float, float]] = []
    for round_ in range(rounds):
        pair = [(program, plain), (wrapped, run)]
        for command, times in pair if round_ % 2 == 0 else reversed(pair):
            times.append(_time(command, env))
    wall = [b[0] - a[0] for a, b in zip(plain, run)]
    cpu = [b[1] - a[1] for a, b in zip(plain, run)]
    return (
        statistics.median(t[0] for t in plain),
        statistics.median(t[0] for t in run),
        statistics.median(wall),
        statistics.median(cpu),
    )


def main(argv: list[str]) -> int:
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 21
    source = argv[argv.index("--source") + 1] if "--source" in argv else None
    cases = [
        ("empty program (python -c pass)", [PYTHON, "-c", "pass"], [], False),
        ("httpx program (import httpx, client)", [PYTHON, "-c", HTTPX], [], False),
        ("agent start-up (import openai, client)", [PYTHON, "-c", AGENT], [], True),
        (
            "agent start-up, --batch-budget 50000",
            [PYTHON, "-c", AGENT],
            ["--batch-budget", "50000"],
            True,
        ),
    ]
    rows: list[tuple[str, ...]] = []
    failed = False
    for name, program, options, targeted in cases:
        plain, run, added, cpu = compare(program, options, rounds, source)
        verdict = ""
        if targeted:
            ok = added * 1000 < TARGET_MS
            failed |= not ok
            verdict = "ok" if ok else "OVER"
        rows.append(
            (
                name,
                f"{plain * 1000:.1f} ms",
                f"{run * 1000:.1f} ms",
                f"{added * 1000:+.1f} ms",
                f"{cpu * 1000:+.1f} ms",
                f"{run / plain:.2f}x",
                verdict,
            )
        )
    print_table(
        f"budgetware run start-up, median of {rounds} interleaved rounds"
        + (f" (budgetware from {source})" if source else ""),
        rows,
        (
            "case",
            "without",
            "with",
            "added, wall",
            "added, CPU",
            "ratio",
            f"wall < {TARGET_MS:.0f} ms",
        ),
    )
    return 1 if failed and "--check" in argv else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
