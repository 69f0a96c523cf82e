"""Telemetry on against off in instructions (valgrind's callgrind): steady where timing
is not.

The same requests as ``bench_telemetry.py`` (``BudgetTransport`` over an in-memory
transport, the real OpenTelemetry SDK inside a recording span), in alternating segments
of ``--requests`` requests with telemetry off and on, in one process. Each segment starts
with a call of ``time.get_clock_info``, which callgrind is told to dump its counters
before: every dump holds one segment. Not part of ``scripts/bench`` (it needs valgrind,
and takes minutes: a 3 MB request runs about 50 times slower under it).

Run: ``.venv/bin/python benchmarks/count_telemetry.py [big|small] [--requests N]
[--rounds R]``.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_CHILD = "BUDGETWARE_COUNT_TELEMETRY_CHILD"


def child(size: str, requests: int, rounds: int) -> None:
    import gc
    import logging

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_telemetry as bench
    from opentelemetry.sdk.trace import TracerProvider

    from budgetware.core.config import BudgetConfig
    from budgetware.telemetry import otel

    logging.getLogger("budgetware").setLevel(logging.WARNING)
    tracer = TracerProvider().get_tracer("bench")
    config = BudgetConfig(batch_budget=200_000, artifact_dir=tempfile.mkdtemp())
    body = bench.chat_body(10, 300_000) if size == "big" else bench.chat_body(3, 200)
    send = bench.sender(body, config)
    gc.disable()
    with tracer.start_as_current_span("agent turn"):
        for on in (True, False):  # warm both paths (and the SDK's instruments)
            _telemetry(otel, bench, on)
            for _ in range(3):
                send()
        for _ in range(rounds):
            for on in (False, True):
                _telemetry(otel, bench, on)
                time.get_clock_info("monotonic")  # callgrind dumps here
                for _ in range(requests):
                    send()
        time.get_clock_info("monotonic")


def _telemetry(otel: Any, bench: Any, on: bool) -> None:
    if on:
        otel.enable(meter_provider=bench.METERS)
    else:
        otel.disable()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("size", nargs="?", default="big", choices=("big", "small"))
    parser.add_argument("--requests", type=int, default=0, help="per segment")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    requests = args.requests or (4 if args.size == "big" else 100)
    if os.environ.get(_CHILD):
        child(args.size, requests, args.rounds)
        return 0
    with tempfile.TemporaryDirectory(prefix="budgetware-callgrind-") as out:
        command = [
            "valgrind",
            "--tool=callgrind",
            "--dump-before=time_get_clock_info",
            f"--callgrind-out-file={out}/cg.out",
            sys.executable,
            __file__,
            args.size,
            f"--requests={requests}",
            f"--rounds={args.rounds}",
        ]
        env = {**os.environ, _CHILD: "1", "PYTHONHASHSEED": "0"}
        subprocess.run(command, env=env, check=True, capture_output=True)
        dumps = sorted(glob.glob(f"{out}/cg.out.*"), key=lambda f: int(f.rsplit(".", 1)[1]))
        totals = [_summary(path) / requests for path in dumps[1:]]  # [0]: start-up
    off, on = totals[0::2], totals[1::2]
    base, observed = statistics.median(off), statistics.median(on)
    extra = observed - base
    print(f"{args.size}: off {base:,.0f} instructions per request")
    print(f"{args.size}: on  {observed:,.0f} ({extra:+,.0f}, {extra / base:+.2%})")
    return 0


def _summary(path: str) -> int:
    with open(path) as lines:
        for line in lines:
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise ValueError(f"no summary in {path}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
