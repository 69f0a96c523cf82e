"""A scripted agent session, as a person runs one: a program that never imports budgetware
(it talks to the model's chat completions API with httpx), started by ``budgetware run``
against the fake provider. (tests/cli/test_run.py runs a real SDK program under ``budgetware
run``; here the client is incidental, and the openai SDK's import cost half a second of CPU
in each agent the report and inspect tests start.)

Run as a script it is the agent: it calls the model, runs the tools the model asks for
(outputs as verbose as real ones: a test log with a failure in its middle, a grep, a JSON
listing, a directory listing) and sends their results back, turn after turn.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The model's tool turns (the fake provider's scripted policy).
TURNS: list[list[tuple[str, dict[str, Any]]]] = [
    [("run_tests", {}), ("list_dir", {})],
    [("grep", {"pattern": "quantize"})],
    [("read_json", {"path": "orders.json"})],
    [("run_tests", {"after_fix": True})],
]
BATCH_BUDGET = 20_000


def run_tests(args: dict[str, Any]) -> str:
    lines = [f"tests/test_api.py::test_endpoint_{i:05d} PASSED" for i in range(6000)]
    if not args.get("after_fix"):
        lines[3000:3000] = [
            "FAILED tests/test_cart.py::test_checkout_total - AssertionError",
            "E       AssertionError: assert Decimal('19.98') == Decimal('19.99')",
        ]
    lines.append("=== 1 failed, 5999 passed in 42.10s ===")
    return "\n".join(lines)


def grep(args: dict[str, Any]) -> str:
    pattern = args.get("pattern", "quantize")
    return "\n".join(
        f"src/shop/module_{i // 40:03d}.py:{i % 40 + 1}: value = amount.{pattern}(CENTS)"
        for i in range(4000)
    )


def read_json(args: dict[str, Any]) -> str:
    orders = [{"id": i, "total": f"{i * 1.25:.2f}", "status": "paid"} for i in range(3000)]
    return json.dumps({"orders": orders}, indent=1)


def list_dir(args: dict[str, Any]) -> str:
    return "src/shop/cart.py\nsrc/shop/money.py"


TOOLS = {"run_tests": run_tests, "grep": grep, "read_json": read_json, "list_dir": list_dir}


def agent() -> None:
    import httpx

    schemas = [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
        for name in TOOLS
    ]
    messages: list[Any] = [{"role": "user", "content": "fix the failing test"}]
    with httpx.Client(
        base_url=os.environ["FAKE_URL"] + "/v1", headers={"authorization": "Bearer k"}, timeout=60
    ) as client:
        while True:
            reply = client.post(
                "/chat/completions", json={"model": "m", "messages": messages, "tools": schemas}
            )
            reply.raise_for_status()
            message = reply.json()["choices"][0]["message"]
            if not message.get("tool_calls"):
                print(message["content"])
                return
            messages.append({key: value for key, value in message.items() if value is not None})
            for call in message["tool_calls"]:
                args = json.loads(call["function"]["arguments"] or "{}")
                output = TOOLS[call["function"]["name"]](args)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})


@dataclass
class AgentSession:
    """A session run with ``run_session`` (tests/cli/conftest.py's ``agent_session``)."""

    done: subprocess.CompletedProcess[str]
    root: Path
    """The directory of sessions (``BUDGETWARE_SESSION_LOG``)."""
    path: Path
    """The session's own directory."""
    bodies: list[bytes]
    """What the provider received, request by request."""
    cache: list[tuple[int, int]]
    """Input tokens and those read from its cache, as the provider answered each request."""


def run_session(
    fake_url: str, tmp_path: Path, *options: str, script: str = __file__
) -> subprocess.CompletedProcess[str]:
    """``budgetware run [options] -- python agent_session.py`` (or ``script``) with the
    session log and the artifacts in ``tmp_path`` (``sessions/``, ``artifacts/``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETWARE_")}
    env.update(
        FAKE_URL=fake_url,
        BUDGETWARE_ARTIFACT_DIR=str(tmp_path / "artifacts"),
        BUDGETWARE_SESSION_LOG=str(tmp_path / "sessions"),
        PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
    )
    env.pop("PYTHONPATH", None)
    command = [sys.executable, "-m", "budgetware", "run", "--batch-budget", str(BATCH_BUDGET)]
    return subprocess.run(
        [*command, *options, "--", "python", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


if __name__ == "__main__":
    agent()


def write_long_session(root: Path, *, requests: int, history: int = 20) -> str:
    """A session log of ``requests`` requests, each carrying the last ``history`` turns of
    tool results (two a turn, one of them cut), written through the real log from reports
    of the real finalizer; returns the session's directory."""
    from budgetware.core import observe
    from budgetware.core.config import BudgetConfig
    from budgetware.core.finalize import finalize_batch
    from budgetware.core.models import ToolResult
    from budgetware.diagnostics import sessionlog

    config = BudgetConfig(batch_budget=BATCH_BUDGET, persist=False)
    log = "\n".join(f"step {i}: ok" for i in range(2500))
    turns: list[observe.BatchReport] = []
    sessionlog.start(str(root))
    try:
        for k in range(requests):
            before = [
                ToolResult(f"c{k}a", "run_tests", (f"turn {k}\n{log}",)),
                ToolResult(f"c{k}b", "list_dir", ("src/shop/cart.py",)),
            ]
            after = finalize_batch(before, config=config)
            cut = observe.count_cut(before, after)
            turns.append(
                observe.BatchReport("request", before, after, BATCH_BUDGET, "chars", cut=cut)
            )
            batches = tuple(turns[-history:])
            size = sum(len(s) for b in batches for e in b.before for s in e.slots)
            sent = sum(len(s) for b in batches for e in b.after for s in e.slots)
            report = observe.RequestReport(
                "openai_chat",
                size + 500,
                sent + 500,
                BATCH_BUDGET,
                "chars",
                0.002,
                batches,
                config=config,
            )
            observe.deliver_request(report)
    finally:
        written = sessionlog.stop()
    assert written is not None
    return os.path.dirname(written)
