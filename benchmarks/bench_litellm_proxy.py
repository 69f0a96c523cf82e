"""The LiteLLM Proxy with budgetware's callback, against the same proxy without it.

Run: .venv/bin/python benchmarks/bench_litellm_proxy.py [--clients 8] [--rounds 10] [--settings]

Two real proxies (``litellm --config``, one worker each) serve the same config in front
of one fake provider (in its own process, so it does not share a GIL with the load); one
names ``budgetware.integrations.litellm.proxy.handler`` in its callbacks. A fixed number
of concurrent clients (raw HTTP, bodies serialized once beforehand) send a fixed number of
chat requests with tool results to each, in alternating rounds. Reported per mix: requests
per second (median of the rounds), p50/p99 latency (of every request of every round), CPU
time per request of the proxy and of the provider (Linux), the ratio of requests per
second with/without the callback (the median of each round's ratio, and their range: a
round runs both proxies back to back, so a shared machine's outside load weighs on both
about alike), and the ratio of capacity: the requests per second a proxy worker can serve
on a core of its own, 1 / its CPU time per request, which outside load barely moves.
Targets (issue 15): at least 0.9x on every mix; over budget, above 1x (the proxy and the
provider handle far fewer bytes).

Mixes: 20 KB chat bodies (under the default 200,000-character budget), 1 MB bodies within
budget (the requests carry ``x-budgetware-batch-budget: 2000000``, to both proxies), and
3 MB bodies over the default budget. Each client re-sends its own conversation, as an agent
re-sends its history every turn: the first request of each writes its artifacts, the
others find them stored. ``--settings`` adds the 3 MB mix with other settings (by request
header) and with new tool results in every request (each writes its artifacts).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The suite's local servers (tests/testing).
sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "tests"))

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx
from _harness import print_table
from testing.litellm_proxy import LiteLLMProxy

HANDLER = "budgetware.integrations.litellm.proxy.handler"
MODEL = "gpt-fake"


@dataclass(frozen=True)
class Mix:
    name: str
    total: int
    """Tool-result characters per request."""
    results: int
    """Tool results per request (one batch)."""
    requests: int
    """Requests per round (scaled by --scale)."""
    headers: dict[str, str] = field(default_factory=dict)
    fresh: bool = False
    """Every request carries tool results never sent before (each writes its artifacts)."""


WITHIN = {"x-budgetware-batch-budget": "2000000"}
MIXES = [
    Mix("20 KB chat bodies", 20_000, 4, 120),
    Mix("1 MB within budget", 1_000_000, 5, 80, WITHIN),
    Mix("3 MB over budget", 3_000_000, 10, 40),
]
# What settings cost (--settings): the same 3 MB over budget, set per request by header,
# and with new tool results in every request (the first time a conversation sends them).
SETTINGS = [
    Mix("3 MB, unit utf8_bytes", 3_000_000, 10, 40, {"x-budgetware-unit": "utf8_bytes"}),
    Mix("3 MB, unit tokens", 3_000_000, 10, 40, {"x-budgetware-unit": "tokens"}),
    Mix("3 MB, budget 20,000", 3_000_000, 10, 40, {"x-budgetware-batch-budget": "20000"}),
    Mix("3 MB, new results every request", 3_000_000, 10, 24, fresh=True),
]

_PROVIDER = """
import sys
from budgetware.testing import FakeProvider
with FakeProvider() as provider:
    print(provider.port, flush=True)
    sys.stdin.read()
"""


def conversation(client: int, total: int, count: int, turn: int = 0) -> list[dict[str, Any]]:
    """A chat whose ``count`` tool results hold ``total`` characters, distinct per client
    (and per turn)."""
    size = total // count
    results = [
        f"client {client} turn {turn} result {i}: " + chr(ord("a") + (client + i) % 26) * size
        for i in range(count)
    ]
    return [
        {"role": "user", "content": "Look these up, then summarize what you found."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": json.dumps({"i": i})},
                }
                for i in range(count)
            ],
        },
        *(
            {"role": "tool", "tool_call_id": f"call_{i}", "content": text}
            for i, text in enumerate(results)
        ),
    ]


def proxy_config(upstream: str, *, callback: bool) -> dict[str, Any]:
    config: dict[str, Any] = {
        "model_list": [
            {
                "model_name": MODEL,
                "litellm_params": {
                    "model": "openai/gpt-4o-mini",
                    "api_base": upstream + "/v1",
                    "api_key": "sk-fake-upstream",
                    "max_retries": 0,
                },
            }
        ],
        "router_settings": {"num_retries": 0, "disable_cooldowns": True},
    }
    if callback:
        config["litellm_settings"] = {"callbacks": HANDLER}
    return config


async def drive(
    proxy: LiteLLMProxy, bodies: list[list[bytes]], headers: dict[str, str]
) -> tuple[float, list[float]]:
    """Each client sends its first body (warm-up: connections open, artifacts written),
    then the others, all clients at once: (seconds for the others, their latencies)."""
    all_headers = {
        "authorization": f"Bearer {proxy.master_key}",
        "content-type": "application/json",
        **headers,
    }
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=len(bodies))
    async with httpx.AsyncClient(trust_env=False, timeout=300, limits=limits) as http:

        async def client(sequence: list[bytes]) -> None:
            for body in sequence:
                start = time.perf_counter()
                response = await http.post(
                    proxy.url + "/v1/chat/completions", content=body, headers=all_headers
                )
                if response.status_code != 200:
                    raise RuntimeError(f"{response.status_code}: {response.text[:200]}")
                latencies.append(time.perf_counter() - start)

        await asyncio.gather(*(client(sequence[:1]) for sequence in bodies))
        latencies.clear()
        start = time.perf_counter()
        await asyncio.gather(*(client(sequence[1:]) for sequence in bodies))
        return time.perf_counter() - start, latencies


def bodies_for(mix: Mix, clients: int, requests: int, turn: int) -> list[list[bytes]]:
    """Per client: a warm-up body, then its share of ``requests``."""
    shares = [requests // clients + (1 if c < requests % clients else 0) for c in range(clients)]
    out = []
    for c, share in enumerate(shares):
        if mix.fresh:
            turns = [turn * 10_000 + t for t in range(share + 1)]
        else:
            turns = [0] * (share + 1)
        encoded: dict[int, bytes] = {}
        sequence = []
        for t in turns:
            if t not in encoded:
                messages = conversation(c, mix.total, mix.results, t)
                encoded[t] = json.dumps({"model": MODEL, "messages": messages}).encode()
            sequence.append(encoded[t])
        out.append(sequence)
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply request counts")
    parser.add_argument(
        "--settings", action="store_true", help="also measure what each setting costs"
    )
    args = parser.parse_args()

    provider = subprocess.Popen(
        [sys.executable, "-c", _PROVIDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert provider.stdout is not None
    upstream = f"http://127.0.0.1:{int(provider.stdout.readline())}"
    work = Path(tempfile.mkdtemp(prefix="budgetware-bench-proxy-"))
    env: dict[str, str | None] = {n: None for n in os.environ if n.startswith("BUDGETWARE_")}
    gateway = LiteLLMProxy(
        proxy_config(upstream, callback=True),
        # The mixes set their budgets and units by request header, some above the default.
        env={
            **env,
            "BUDGETWARE_ARTIFACT_DIR": str(work / "artifacts"),
            "BUDGETWARE_CLIENT_OVERRIDES": "allow",
        },
        workdir=work / "with",
    )
    baseline = LiteLLMProxy(
        proxy_config(upstream, callback=False), env=env, workdir=work / "without"
    )
    rows = []
    try:
        for proxy in (gateway, baseline):
            proxy.launch()
        for proxy in (gateway, baseline):
            proxy.wait_ready()
        for number, mix in enumerate(MIXES + (SETTINGS if args.settings else [])):
            requests = max(args.clients, round(mix.requests * args.scale))
            rates: dict[str, list[float]] = {"without": [], "with": []}
            lat: dict[str, list[float]] = {"without": [], "with": []}
            # CPU seconds per request: the proxy's, and the provider's.
            cpu: dict[str, list[tuple[float, float]]] = {"without": [], "with": []}
            for round_ in range(args.rounds):
                bodies = bodies_for(mix, args.clients, requests, number * 100 + round_)
                # Alternate which proxy goes first, so a load that grows or fades during a
                # round favours neither.
                order = [("without", baseline), ("with", gateway)]
                for label, proxy in order if round_ % 2 == 0 else order[::-1]:
                    before = cpu_seconds(proxy.pid), cpu_seconds(provider.pid)
                    took, latencies = asyncio.run(drive(proxy, bodies, mix.headers))
                    after = cpu_seconds(proxy.pid), cpu_seconds(provider.pid)
                    rates[label].append(requests / took)
                    lat[label].extend(latencies)
                    # The warm-up requests (one per client) are counted in the CPU time.
                    n = requests + args.clients
                    cpu[label].append(((after[0] - before[0]) / n, (after[1] - before[1]) / n))
            without, with_ = statistics.median(rates["without"]), statistics.median(rates["with"])
            # Each round runs both proxies back to back, under about the same outside load:
            # the ratio is the median of the rounds' ratios.
            ratios = [w / wo for w, wo in zip(rates["with"], rates["without"])]
            ratio = statistics.median(ratios)
            spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
            # The proxy is one single-threaded worker: the requests/s it can serve on a core
            # of its own is 1 / its CPU time per request, which outside load barely moves.
            capacity = statistics.median(
                wo[0] / w[0] for w, wo in zip(cpu["with"], cpu["without"]) if w[0] > 0
            )
            for label, rate in (("without", without), ("with", with_)):
                proxy_cpu = statistics.median(c[0] for c in cpu[label]) * 1e3
                provider_cpu = statistics.median(c[1] for c in cpu[label]) * 1e3
                rows.append(
                    (
                        mix.name,
                        label,
                        f"{rate:.1f}",
                        f"{percentile(lat[label], 0.5) * 1e3:.0f}",
                        f"{percentile(lat[label], 0.99) * 1e3:.0f}",
                        f"{proxy_cpu:.1f}",
                        f"{provider_cpu:.1f}",
                        f"{ratio:.2f}x ({spread})" if label == "with" else "",
                        f"{capacity:.2f}x" if label == "with" else "",
                    )
                )
            print(
                f"{mix.name}: {without:.1f} req/s without, {with_:.1f} with: {ratio:.2f}x; "
                f"capacity {capacity:.2f}x",
                flush=True,
            )
    finally:
        for proxy in (gateway, baseline):
            proxy.stop()
        assert provider.stdin is not None
        provider.stdin.close()
        provider.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    print_table(
        f"LiteLLM Proxy, {args.clients} concurrent clients, {args.rounds} rounds",
        rows,
        (
            "mix",
            "callback",
            "req/s",
            "p50 ms",
            "p99 ms",
            "proxy CPU ms/req",
            "provider CPU ms/req",
            "req/s with/without (rounds)",
            "capacity with/without",
        ),
    )


if __name__ == "__main__":
    main()
