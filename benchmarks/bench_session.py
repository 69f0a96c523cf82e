"""A long coding-agent session through the real openai and anthropic SDKs against the caching
fake provider, under four policies (issue 28, docs/history.md):

- ``none``: no budgetware;
- ``per-batch``: budgetware's batch budget only;
- ``history``: the batch budget and ``history_budget``;
- ``naive``: the peers' way: every turn, every older tool result re-truncated to fit.

Every tool output comes from a real tool run on this machine (pytest runs, logs, gcc and
mypy errors, ``git log -p``, ``grep -rn``, JSON). Per policy: the largest request, the
total input tokens, the share read from the provider's cache (as the fake provider's usage
reports it), and a bill at list prices (input 1.0, cache write 1.25, cache read 0.1 per
token). Then the speed: what the history pass adds to bounding a 1 MB, 80-turn request.

Run: .venv/bin/python benchmarks/bench_session.py [--turns N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import print_table

import budgetware
from budgetware.core.config import BudgetConfig
from budgetware.core.measure import measure
from budgetware.testing import FakeProvider
from budgetware.wire.body import finalize_body, observed_finalize_body
from budgetware.wire.history import input_window

ROOT = Path(__file__).resolve().parent.parent
UNIT = "tokens"
BATCH_BUDGET = 8_000  # tokens per batch
# history_budget="auto": half the input window of the model each SDK names.
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}
PRICES = {"input": 1.0, "write": 1.25, "read": 0.1}
SYSTEM = (
    "You are a careful coding agent working in a Python repository. Use the tools to run "
    "tests, read logs, compile, search and inspect history; fix what fails; explain briefly. "
) * 40
TOOLS = ("pytest", "log", "gcc", "mypy", "git_log_p", "grep_rn", "json", "read_file")


# --- tool output from real tools ---------------------------------------------------------------


def _run(command: list[str], cwd: Path = ROOT, timeout: float = 300) -> str:
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=timeout
    )
    return f"$ {' '.join(command)}\n{done.stdout}{done.stderr}[exit {done.returncode}]"


_BROKEN_C = [
    "int main(void) {{ int x = {n}; return y + x; }}\n",
    '#include <stdio.h>\nvoid f(int a) {{ printf("%s", a); }}\nint main(void) {{ f({n}) }}\n',
    "struct s {{ int a; }};\nint main(void) {{ struct s v; v.b = {n}; return v; }}\n",
    "#include <stdlib.h>\nint main(void) {{ char *p = malloc({n}); return p * 2; }}\n",
]
_BROKEN_PY = [
    "def f(x: int) -> str:\n    return x + {n}\n\nf('a')\n",
    "from typing import List\n\ndef g(v: List[int]) -> int:\n    return v.count('{n}') + None\n",
    "class A:\n    n: int = {n}\n\nA().m()\nA.n = 'text'\n",
]


def collect_outputs(workdir: Path) -> dict[str, list[str]]:
    """Run the tools once; every output of each tool, in a fixed order."""
    python = sys.executable
    out: dict[str, list[str]] = {tool: [] for tool in TOOLS}
    # pytest: a few of the suite's own files, one -v, and a module of ours that fails.
    failing = workdir / "test_failing.py"
    failing.write_text(
        "import pytest\n\n"
        "@pytest.mark.parametrize('n', range(40))\n"
        "def test_total(n):\n"
        "    assert round(n * 0.1 + 0.2, 2) == round((n + 2) * 0.1, 2) or n % 7\n\n"
        "def test_cart():\n"
        "    from decimal import Decimal\n"
        "    assert Decimal('19.98') == Decimal('19.99')\n"
    )
    pytest = [python, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q"]
    for target in ("tests/core/test_allocate.py", "tests/core/test_measure.py"):
        out["pytest"].append(_run([*pytest, target]))
    out["pytest"].append(_run([*pytest, "-v", "tests/core/test_priorities.py"]))
    out["pytest"].append(_run([*pytest, str(failing)], cwd=workdir))
    out["pytest"].append(_run([*pytest, "-v", str(failing)], cwd=workdir))
    # logs
    for log in ("/var/log/dpkg.log", "/var/log/apt/history.log", "/var/log/alternatives.log"):
        if os.access(log, os.R_OK):
            out["log"].append(_run(["tail", "-n", "400", log]))
            out["log"].append(_run(["head", "-n", "150", log]))
    # gcc and mypy errors
    for index, template in enumerate(_BROKEN_C * 2):
        source = workdir / f"broken_{index}.c"
        source.write_text(template.format(n=index))
        out["gcc"].append(_run(["gcc", "-Wall", "-Wextra", "-c", str(source)], cwd=workdir))
    sources = []
    for index, template in enumerate(_BROKEN_PY * 2):
        source = workdir / f"broken_{index}.py"
        source.write_text(template.format(n=index))
        sources.append(source)
    mypy = [python, "-m", "mypy", "--strict", "--no-incremental", "--no-error-summary"]
    for source in sources[:3]:
        out["mypy"].append(_run([*mypy, str(source)], cwd=workdir))
    out["mypy"].append(_run([*mypy, *map(str, sources)], cwd=workdir))
    # history, search, JSON, files
    for skip in range(0, 48, 3):
        out["git_log_p"].append(_run(["git", "log", "-p", "-n", "2", f"--skip={skip}"]))
    for word in (
        "def ",
        "import",
        "budget",
        "raise",
        "async",
        "measure",
        "store",
        "config",
        "TODO",
        "lock",
        "json",
        "unit",
        "Found",
        "report",
        "warn",
    ):
        out["grep_rn"].append(_run(["grep", "-rn", word, "budgetware/core", "budgetware/wire"]))
    out["json"].append(_run([python, "-m", "pip", "list", "--format", "json"]))
    out["json"].append(_run(["git", "log", "-n", "60", "--format=%H %an %s"]))
    for name in ("anthropic_beta_headers_config.json", "provider_endpoints_support_backup.json"):
        found = list(Path(sys.prefix).glob(f"lib/python3*/site-packages/litellm/{name}"))
        if found:
            out["json"].append(_run([python, "-m", "json.tool", str(found[0])]))
    for path in sorted((ROOT / "budgetware" / "core").glob("*.py"))[:14]:
        out["read_file"].append(_run(["cat", str(path.relative_to(ROOT))]))
    return {tool: outputs for tool, outputs in out.items() if outputs}


@dataclass
class Turn:
    calls: list[tuple[str, str, str]]  # (call id, tool, output)


def session(outputs: dict[str, list[str]], turns: int, seed: int = 28) -> list[Turn]:
    """A coding agent's turns: 1 to 3 tool calls each, tools drawn as an agent would."""
    rng = random.Random(seed)
    weights = {
        "pytest": 5,
        "read_file": 4,
        "grep_rn": 4,
        "gcc": 2,
        "mypy": 2,
        "git_log_p": 2,
        "log": 1,
        "json": 1,
    }
    tools = [t for t in weights if t in outputs]
    used = dict.fromkeys(tools, 0)
    made = []
    for t in range(turns):
        calls = []
        for i in range(rng.choice((1, 1, 1, 2, 2, 3))):
            tool = rng.choices(tools, [weights[x] for x in tools])[0]
            pool = outputs[tool]
            text = pool[used[tool] % len(pool)]
            used[tool] += 1
            calls.append((f"call_{t}_{i}", tool, text))
        made.append(Turn(calls))
    return made


# --- the agent, per SDK ---------------------------------------------------------------------


def openai_messages(turns: list[Turn]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "The build is red: find out why and fix it."},
    ]
    for turn in turns:
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": tool, "arguments": "{}"}}
                    for cid, tool, _ in turn.calls
                ],
            }
        )
        for cid, _, text in turn.calls:
            messages.append({"role": "tool", "tool_call_id": cid, "content": text})
    return messages


def anthropic_messages(turns: list[Turn]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "The build is red: find out why and fix it."}
    ]
    for turn in turns:
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": cid, "name": tool, "input": {}}
                    for cid, tool, _ in turn.calls
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": cid, "content": text}
                    for cid, _, text in turn.calls
                ],
            }
        )
    # A moving breakpoint on the newest block, as coding agents mark it.
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return messages


def tool_texts(api: str, body: dict[str, Any]) -> list[str]:
    texts = []
    for message in body.get("messages", []):
        if api == "openai" and message.get("role") == "tool":
            texts.append(message["content"])
        elif api == "anthropic" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    content = block["content"]
                    texts.append(content if isinstance(content, str) else content[0]["text"])
    return texts


@dataclass
class Usage:
    input: int = 0  # read neither from nor into the cache
    write: int = 0
    read: int = 0

    @property
    def total(self) -> int:
        return self.input + self.write + self.read


def openai_usage(response: Any) -> Usage:
    usage = response.usage
    details = getattr(usage, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0)
    return Usage(input=usage.prompt_tokens - cached, read=cached)


def anthropic_usage(response: Any) -> Usage:
    usage = response.usage
    return Usage(
        input=usage.input_tokens,
        write=int(usage.cache_creation_input_tokens or 0),
        read=int(usage.cache_read_input_tokens or 0),
    )


# --- the naive baseline ----------------------------------------------------------------------


def _cut(text: str, room_chars: int) -> str:
    if len(text) <= room_chars:
        return text
    head = room_chars // 5
    marker = f"\n[... {len(text) - room_chars:,} chars truncated ...]\n"
    return text[:head] + marker + text[len(text) - (room_chars - head) :]


def history_budget(api: str) -> int:
    """What ``history_budget="auto"`` gives the model the SDK names, in tokens."""
    window = input_window(MODELS[api])
    assert window is not None, MODELS[api]
    return window // 2


def naive(api: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every turn, every tool result cut to an equal share of the history budget (the
    newest batch to the batch budget first): what re-truncating peers send."""
    messages = json.loads(json.dumps(messages))
    slots: list[tuple[dict[str, Any], str]] = []
    for message in messages:
        if api == "openai" and message.get("role") == "tool":
            slots.append((message, "content"))
        elif api == "anthropic" and isinstance(message.get("content"), list):
            slots += [(b, "content") for b in message["content"] if b.get("type") == "tool_result"]
    chars = history_budget(api) * 4
    share = max(chars // max(len(slots), 1), 200)
    for holder, key in slots:
        holder[key] = _cut(holder[key], min(share, BATCH_BUDGET * 4))
    return messages


# --- running a session under a policy --------------------------------------------------------


POLICIES = ("none", "per-batch", "history", "naive")


@dataclass
class Result:
    policy: str
    api: str
    usages: list[Usage] = field(default_factory=list)
    largest_input: int = 0
    largest_tools: int = 0  # the tool-result text of the largest request, in the unit
    steps: int = 0
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(u.total for u in self.usages)

    @property
    def read_share(self) -> float:
        return sum(u.read for u in self.usages) / max(self.total, 1)

    @property
    def bill(self) -> float:
        return (
            sum(
                u.input * PRICES["input"] + u.write * PRICES["write"] + u.read * PRICES["read"]
                for u in self.usages
            )
            / 1e6
        )


@contextmanager
def _policy(policy: str, artifacts: Path) -> Iterator[None]:
    if policy in ("none", "naive"):
        yield
        return
    settings: dict[str, Any] = {
        "unit": UNIT,
        "batch_budget": BATCH_BUDGET,
        "artifact_dir": artifacts,
    }
    if policy == "history":
        settings["history_budget"] = "auto"
    with budgetware.instrument(config=BudgetConfig(**settings)):
        yield


def run_session(api: str, policy: str, turns: list[Turn], workdir: Path) -> Result:
    import anthropic
    import openai

    from budgetware.core import observe

    result = Result(policy, api)
    artifacts = workdir / f"artifacts-{api}-{policy}"
    reports: list[Any] = []
    start = time.perf_counter()
    with (
        FakeProvider() as provider,
        _policy(policy, artifacts),
        observe.subscribe(request=reports.append),
    ):
        if api == "openai":
            client: Any = openai.OpenAI(
                base_url=provider.url + "/v1", api_key="sk-bench", max_retries=0
            )
        else:
            client = anthropic.Anthropic(base_url=provider.url, api_key="sk-bench", max_retries=0)
        with client:
            for n in range(1, len(turns) + 1):
                build = openai_messages if api == "openai" else anthropic_messages
                messages = build(turns[:n])
                if policy == "naive":
                    messages = naive(api, messages)
                provider.clear()
                if api == "openai":
                    response = client.chat.completions.create(model=MODELS[api], messages=messages)
                    usage = openai_usage(response)
                else:
                    response = client.messages.create(
                        model=MODELS[api],
                        max_tokens=256,
                        system=[
                            {
                                "type": "text",
                                "text": SYSTEM,
                                "cache_control": {"type": "ephemeral"},
                            }
                        ],
                        messages=messages,
                    )
                    usage = anthropic_usage(response)
                result.usages.append(usage)
                body = provider.requests[-1].json()
                if usage.total > result.largest_input:
                    result.largest_input = usage.total
                tools = sum(measure(t, UNIT) for t in tool_texts(api, body))
                result.largest_tools = max(result.largest_tools, tools)
    result.seconds = time.perf_counter() - start
    result.steps = sum(1 for r in reports if r.history is not None and r.history.new_step)
    shutil.rmtree(artifacts, ignore_errors=True)
    return result


# --- the speed of the history pass -----------------------------------------------------------


def speed(outputs: dict[str, list[str]]) -> tuple[float, float, int]:
    """CPU seconds to bound a 1 MB, 80-turn request with the batch budget only and with the
    history budget too (both warm: the second and later calls, as an agent's next turns;
    best of 30)."""
    pool = [text for texts in outputs.values() for text in texts]
    rng = random.Random(80)
    picked = [[rng.choice(pool)[:40_000] for _ in range(rng.choice((1, 2)))] for _ in range(80)]
    # Each output stretched (or cut) by one factor: 1 MB of tool output in all.
    scale = 1_000_000 / sum(len(text) for texts in picked for text in texts)
    turns = [
        Turn(
            [
                (f"c{t}_{i}", "shell", (text * (int(scale) + 1))[: int(len(text) * scale)])
                for i, text in enumerate(texts)
            ]
        )
        for t, texts in enumerate(picked)
    ]
    body = json.dumps({"model": "gpt-4o-mini", "messages": openai_messages(turns)}).encode()
    url = "https://api.openai.com/v1/chat/completions"
    with tempfile.TemporaryDirectory() as directory:
        batch = BudgetConfig(unit=UNIT, batch_budget=BATCH_BUDGET, artifact_dir=directory)
        history = BudgetConfig(
            unit=UNIT,
            batch_budget=BATCH_BUDGET,
            history_budget="auto",
            artifact_dir=directory,
        )
        _, report = observed_finalize_body(url, body, config=history)
        assert report.history is not None
        assert report.history.masked > 0
        finalize_body(url, body, config=batch)
        # Interleaved, so that both see the same machine; CPU time of this thread, which
        # the other processes of a shared machine do not add to.
        times_batch, times_history = [], []
        for _ in range(10):
            for config, times in ((batch, times_batch), (history, times_history)):
                for _ in range(3):
                    start = time.thread_time()
                    finalize_body(url, body, config=config)
                    times.append(time.thread_time() - start)
    return min(times_batch), min(times_history), len(body)


# --- main ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=150)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-session-"))
    try:
        started = time.perf_counter()
        outputs = collect_outputs(workdir)
        sizes = [len(t) for texts in outputs.values() for t in texts]
        print(
            f"tool outputs: {len(sizes)} from {len(outputs)} tools run here "
            f"({time.perf_counter() - started:.0f} s), {min(sizes):,} to {max(sizes):,} chars, "
            f"median {sorted(sizes)[len(sizes) // 2]:,}"
        )
        turns = session(outputs, args.turns)
        digest = hashlib.sha256(
            "".join(text for turn in turns for _, _, text in turn.calls).encode()
        ).hexdigest()[:12]
        print(
            f"session: {len(turns)} turns, {sum(len(t.calls) for t in turns)} tool calls "
            f"(content {digest}); batch budget {BATCH_BUDGET:,} {UNIT}, history budget auto: "
            + ", ".join(f"{MODELS[api]} {history_budget(api):,}" for api in MODELS)
        )
        results: dict[tuple[str, str], Result] = {}
        for api in ("openai", "anthropic"):
            for policy in POLICIES:
                results[(api, policy)] = run_session(api, policy, turns, workdir)
        rows = []
        for (api, policy), r in results.items():
            rows.append(
                (
                    api,
                    policy,
                    f"{r.largest_input:,}",
                    f"{r.largest_tools:,}",
                    f"{r.total:,}",
                    f"{r.read_share:.1%}",
                    f"{r.bill:,.2f}",
                    str(r.steps) if policy == "history" else "",
                )
            )
        print_table(
            "The session, per policy (tokens as the fake provider's usage counts them)",
            rows,
            (
                "sdk",
                "policy",
                "largest request",
                "its tool results",
                "total input",
                "cache reads",
                "bill (M tokens x price)",
                "steps",
            ),
        )
        print("\n## Targets\n")
        ok = True
        for api in ("openai", "anthropic"):
            h = results[(api, "history")]
            others = [results[(api, p)] for p in POLICIES if p != "history"]
            checks = [
                (
                    f"{api}: no request's tool results over the history budget "
                    f"({h.largest_tools:,} <= {history_budget(api):,} + {BATCH_BUDGET:,})",
                    h.largest_tools <= history_budget(api) + BATCH_BUDGET,
                ),
                (
                    f"{api}: at least 85% of input tokens read from cache ({h.read_share:.1%})",
                    h.read_share >= 0.85,
                ),
                (
                    f"{api}: the lowest bill ({h.bill:,.2f} vs "
                    f"{', '.join(f'{o.policy} {o.bill:,.2f}' for o in others)})",
                    all(h.bill < o.bill for o in others),
                ),
                (
                    f"{api}: at most half the naive baseline's bill "
                    f"({h.bill / results[(api, 'naive')].bill:.0%})",
                    h.bill <= results[(api, "naive")].bill / 2,
                ),
            ]
            for text, passed in checks:
                ok = ok and passed
                print(f"{'PASS' if passed else 'FAIL'}  {text}")
        batch_seconds, history_seconds, size = speed(outputs)
        added = history_seconds / batch_seconds - 1
        print(
            f"{'PASS' if added <= 0.10 else 'FAIL'}  speed: bounding a {size / 1e6:.1f} MB, "
            f"80-turn request takes {batch_seconds * 1000:.1f} ms with the batch budget, "
            f"{history_seconds * 1000:.1f} ms with the history budget too (+{added:.1%}; "
            "target at most +10%)"
        )
        if not ok:
            print("\nsome targets were missed (see above)")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
