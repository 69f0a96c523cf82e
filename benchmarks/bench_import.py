"""What ``import budgetware`` costs a process, and what its lazy front door saves.

``budgetware run`` imports budgetware in every Python process it starts, so the import
itself must stay in milliseconds: the public names (pydantic, the layers) load on first
use, and ``typing`` is not imported for the type checkers' sake (budgetware/__init__.py).
Each case is a fresh ``python -c``, interleaved round by round; the figure is the median
over rounds of (case - ``python -c pass``) in the same round.

For the figure users see, run it with the python of a venv where the built wheel is
installed (an editable install adds its import finder, which itself imports ``typing``):
``python -m build --wheel -o /tmp/w && python -m venv /tmp/v && /tmp/v/bin/pip install
/tmp/w/*.whl && /tmp/v/bin/python benchmarks/bench_import.py``.

Run: ``.venv/bin/python benchmarks/bench_import.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import print_table

CASES = {
    "import budgetware": "import budgetware",
    "import typing (what the front door avoids)": "import typing",
    "import budgetware, then a public name": "import budgetware; budgetware.BudgetConfig",
}


def _time(code: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=31)
    rounds = parser.parse_args(argv).rounds
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETWARE_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode is written and reused, as installed
    codes = {"python -c pass": "pass", **CASES}
    for code in codes.values():  # warm the file cache and write the bytecode
        _time(code, env)
    times: dict[str, list[float]] = {name: [] for name in codes}
    for round_ in range(rounds):
        order = list(codes.items())
        for name, code in order if round_ % 2 == 0 else reversed(order):
            times[name].append(_time(code, env))
    base = times["python -c pass"]
    rows = [("python -c pass", f"{statistics.median(base) * 1000:.1f} ms", "")]
    for name in CASES:
        added = statistics.median(t - b for t, b in zip(times[name], base))
        rows.append(
            (name, f"{statistics.median(times[name]) * 1000:.1f} ms", f"+{added * 1000:.1f} ms")
        )
    print_table(f"import budgetware ({rounds} rounds)", rows, ("case", "median", "added"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
