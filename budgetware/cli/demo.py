"""``budgetware demo``: a scripted agent whose huge tool outputs reach the model bounded."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from budgetware.cli.errors import ArgumentParser, CliError, describe_os_error
from budgetware.core import observe
from budgetware.core.config import BudgetConfig
from budgetware.http.transport import BudgetTransport

__all__ = ["main"]

DEFAULT_BUDGET = 20_000
MAX_REAL_TURNS = 6

# --- the tools: deterministic, and as verbose as real ones ----------------------------------


def _run_tests(args: dict[str, Any]) -> str:
    fixed = bool(args.get("after_fix"))
    lines = ["$ pytest -v tests/", "============ test session starts ============"]
    lines += [
        f"tests/test_api.py::test_endpoint_{i:05d} PASSED{'':>20}[{i * 100 // 6000:3d}%]"
        for i in range(6000)
    ]
    if fixed:
        lines.append("============ 6000 passed in 41.87s ============")
    else:
        lines += [
            "================ FAILURES ================",
            "____________ test_checkout_total ____________",
            "    def test_checkout_total():",
            ">       assert cart.total() == Decimal('19.99')",
            "E       AssertionError: assert Decimal('19.98') == Decimal('19.99')",
            "tests/test_cart.py:88: AssertionError",
            "FAILED tests/test_cart.py::test_checkout_total - AssertionError",
            "============ 1 failed, 5999 passed in 42.10s ============",
        ]
    return "\n".join(lines)


def _read_file(args: dict[str, Any]) -> str:
    path = str(args.get("path", "src/shop/cart.py"))
    body = [f"# {path}", "from decimal import Decimal, ROUND_HALF_EVEN", ""]
    for i in range(2500):
        body += [
            f"def price_rule_{i:04d}(cart):",
            f"    return cart.subtotal() * Decimal('0.{i % 97:02d}')",
        ]
    body += ["", "def total(cart):", "    return cart.subtotal().quantize(Decimal('0.01'))"]
    return "\n".join(body)


def _grep(args: dict[str, Any]) -> str:
    pattern = str(args.get("pattern", "quantize"))
    return "\n".join(
        f"src/shop/module_{i // 40:03d}.py:{i % 40 + 1}: value = amount.{pattern}(CENTS)"
        for i in range(4000)
    )


def _list_dir(args: dict[str, Any]) -> str:
    return "\n".join(f"src/shop/{name}.py" for name in ("cart", "checkout", "money", "tax"))


TOOLS: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    "run_tests": ("Run the test suite and return its full log.", _run_tests),
    "read_file": ("Return the full text of a file.", _read_file),
    "grep": ("Search the code base for a pattern.", _grep),
    "list_dir": ("List the source files.", _list_dir),
}

SCRIPT: list[list[tuple[str, dict[str, Any]]]] = [
    [("run_tests", {}), ("list_dir", {})],
    [("read_file", {"path": "src/shop/cart.py"}), ("grep", {"pattern": "quantize"})],
    [("run_tests", {"after_fix": True})],
]
FINAL_TEXT = "The rounding bug in cart.total() is fixed; all 6000 tests pass."
PROMPT = "The checkout total is off by a cent. Find the bug, fix it and make the tests pass."


def run_tool(name: str, args: dict[str, Any]) -> str:
    return TOOLS[name][1](args) if name in TOOLS else f"unknown tool {name!r}"


# --- the agents ------------------------------------------------------------------------------


def _openai_agent(client: Any, model: str, step: Callable[[], None]) -> str:
    tools = [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {"type": "object", "properties": {}},
            },
        }
        for name, (description, _) in TOOLS.items()
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    for _ in range(MAX_REAL_TURNS):
        completion = client.chat.completions.create(model=model, messages=messages, tools=tools)
        step()
        message = completion.choices[0].message
        if not message.tool_calls:
            return str(message.content or "")
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            args = json.loads(call.function.arguments or "{}")
            output = run_tool(call.function.name, args)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return "(stopped after the maximum number of turns)"


def _anthropic_agent(client: Any, model: str, step: Callable[[], None]) -> str:
    tools = [
        {"name": name, "description": description, "input_schema": {"type": "object"}}
        for name, (description, _) in TOOLS.items()
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    for _ in range(MAX_REAL_TURNS):
        reply = client.messages.create(
            model=model,
            max_tokens=1024,
            messages=messages,
            tools=tools,
            cache_control={"type": "ephemeral"},  # cache the conversation so far
        )
        step()
        uses = [block for block in reply.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in reply.content if block.type == "text")
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": use.id,
                        "content": run_tool(use.name, dict(use.input or {})),
                    }
                    for use in uses
                ],
            }
        )
    return "(stopped after the maximum number of turns)"


def _client(provider: str, base_url: str | None, api_key: str, transport: Any) -> Any:
    sdk = importlib.import_module(provider)
    client_class = sdk.Anthropic if provider == "anthropic" else sdk.OpenAI
    http_client = sdk.DefaultHttpxClient(transport=transport)
    return client_class(base_url=base_url, api_key=api_key, max_retries=0, http_client=http_client)


# --- what went where -----------------------------------------------------------------------


def show_request(number: int, report: observe.RequestReport, elapsed: float) -> bool:
    """Print what the SDK made of request ``number`` and what went on the wire; returns
    whether a cut result's preview names no artifact."""
    before, after = report.bytes_before, report.bytes_after
    share = f"{(before - after) * 100 // before}% smaller" if before else ""
    print(
        f"Request {number}: the SDK would have sent {before:,} bytes; "
        f"on the wire: {after:,} bytes ({share}, {elapsed:.2f}s)",
    )
    batch = report.batches[-1] if report.batches else None
    pairs = list(zip(batch.before, batch.after)) if batch is not None else []
    if batch is None:
        print(
            "    no tool results yet (the user's prompt)"
            if number == 1
            else "    the tool results fit the budget: sent as the SDK made them"
        )
    else:
        for old, new in pairs:
            sdk, sent = len(old.full_text), len(new.full_text)
            note = "previewed" if sent < sdk else "unchanged"
            print(f"    {old.tool_name or '?':<10} {sdk:>10,} -> {sent:>7,} chars  {note}")
        print(
            f"    batch on the wire: {batch.size_after:,} {batch.unit} (budget {batch.budget:,})"
        )
    if number > 1 and (usage := report.usage) is not None:
        print(
            f"    provider's prompt cache: {usage.cache_read_tokens:,} of "
            f"{usage.input_tokens:,} input tokens read (the history, bounded alike every "
            "turn, is re-sent byte for byte)"
        )
    for ref in (ref for every in report.batches for ref in every.written):
        print(f"    artifact written: {Path(ref).name} ({Path(ref).stat().st_size:,} bytes)")
    cut = [(old, new) for old, new in pairs if new.slots != old.slots]
    if cut:
        print("    preview excerpt (what the model reads):")
        for text in _excerpt(cut[0][1].full_text).splitlines():
            print("    | " + text)
    print()
    return any(not new.persisted_output_files for _, new in cut)


def show_unnamed(budget: int, artifact_dir: Path) -> None:
    """Say why no artifact is written when previews are too small to name one."""
    print(
        f"note: previews this small cannot name their artifact: --budget {budget:,} is "
        "shared by the whole batch, and a preview needs a few hundred chars to name the "
        "file that holds the full output. The model sees a cut notice with no way back to "
        f"the output, so no artifact is written for it to {artifact_dir} (one that no "
        "preview names could never be found).",
    )
    print()


def _excerpt(text: str, lines: int = 3) -> str:
    rows = text.splitlines()
    if len(rows) <= 2 * lines + 1:
        return text
    return "\n".join([*rows[:lines], "...", *rows[-lines:]])


# --- main ------------------------------------------------------------------------------------


def _real_settings(args: argparse.Namespace) -> tuple[str | None, str] | None:
    """``(base_url, api_key)`` of a real provider with ``--real``, else None: the offline fake
    provider, whatever keys the environment holds (a paid call only when asked for)."""
    if not args.real:
        return None
    prefix = "ANTHROPIC" if args.provider == "anthropic" else "OPENAI"
    key = os.environ.get(f"{prefix}_API_KEY")
    if not key:
        raise CliError(f"--real needs {prefix}_API_KEY in the environment", 2)
    return os.environ.get(f"{prefix}_BASE_URL"), key


def run(
    args: argparse.Namespace, artifact_dir: Path, real: tuple[str | None, str] | None
) -> tuple[str, list[observe.RequestReport]]:
    """Run the scripted agent, printing each request; its answer and budgetware's reports."""
    import httpx2

    from budgetware.testing import FakeProvider, scripted_tool_calls

    config = BudgetConfig(batch_budget=args.budget, artifact_dir=artifact_dir)
    model = args.model or ("claude-haiku-4-5" if args.provider == "anthropic" else "gpt-4o-mini")
    reports: list[observe.RequestReport] = []
    unnamed = False  # a preview too small to name its artifact
    with ExitStack() as stack:
        if real is None:
            policy = scripted_tool_calls(SCRIPT, FINAL_TEXT)
            provider = stack.enter_context(FakeProvider(reply=policy))
            suffix = "" if args.provider == "anthropic" else "/v1"
            base_url: str | None = provider.url + suffix
            api_key = "demo-key"
        else:
            base_url, api_key = real
        transport = BudgetTransport(httpx2.HTTPTransport(), config=config)
        client = stack.enter_context(_client(args.provider, base_url, api_key, transport))
        # A usage listener too: a report's usage is read only where one listens.
        stack.enter_context(observe.subscribe(request=reports.append, usage=lambda _: None))
        started = time.perf_counter()

        def step() -> None:
            nonlocal started, unnamed
            unnamed |= show_request(len(reports), reports[-1], time.perf_counter() - started)
            started = time.perf_counter()

        agent = _anthropic_agent if args.provider == "anthropic" else _openai_agent
        answer = agent(client, model, step)
    if unnamed:
        show_unnamed(args.budget, artifact_dir)
    return answer, reports


def main(argv: list[str]) -> int:
    """Run the demo; returns the exit code."""
    parser = ArgumentParser(
        prog="budgetware demo",
        description="A scripted agent run through budgetware against a local fake provider "
        "(or a real one with --real).",
    )
    parser.add_argument("--provider", choices=("openai", "anthropic"), default="openai")
    parser.add_argument(
        "--budget",
        "--batch-budget",  # the setting's name, as `budgetware run` and every doc spell it
        dest="budget",
        metavar="N",
        type=int,
        default=DEFAULT_BUDGET,
        help=f"chars per batch of tool results (default {DEFAULT_BUDGET})",
    )
    parser.add_argument("--artifact-dir", help="where full outputs go (default: a new temp dir)")
    parser.add_argument(
        "--real",
        action="store_true",
        help="talk to the real provider ({OPENAI,ANTHROPIC}_API_KEY and _BASE_URL)",
    )
    parser.add_argument("--model", help="model name (real provider)")
    args = parser.parse_args(argv)
    if args.budget <= 0:
        typed = next((a for a in reversed(argv) if a.startswith("--b")), "--budget")
        typed = typed.partition("=")[0]  # as typed: --budget or --batch-budget
        parser.error(f"{typed} must be positive, not {args.budget}")
    if args.artifact_dir is not None:
        chosen = Path(args.artifact_dir)
        if chosen.exists() and not chosen.is_dir():
            raise CliError(f"--artifact-dir {chosen} is a file, not a directory", 2)
        try:  # said once, up front, rather than as a warning per artifact
            chosen.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise CliError(f"cannot create --artifact-dir {describe_os_error(exc)}") from None
    # A bad BUDGETWARE_* variable fails here, in one line, not inside the first SDK call.
    BudgetConfig.from_env(batch_budget=args.budget, artifact_dir=args.artifact_dir)
    real = _real_settings(args)
    artifact_dir = Path(args.artifact_dir or tempfile.mkdtemp(prefix="budgetware-demo-"))
    try:
        for name in ("httpx2", args.provider):
            importlib.import_module(name)
    except ImportError as exc:
        raise CliError(f'needs {exc.name}: pip install "budgetware[demo]"') from None
    where = "a real provider" if real else "an embedded fake provider (offline)"
    print(
        f"budgetware demo: the {args.provider} SDK runs a scripted coding agent against {where}; "
        f"every batch of tool results is bounded to {args.budget:,} chars.",
    )
    print()
    started = time.perf_counter()
    try:
        answer, reports = run(args, artifact_dir, real)
    except Exception as exc:  # a real provider refused or was unreachable: say so, briefly
        if real is None:
            raise
        print(f"budgetware demo: the provider call failed: {exc}", file=sys.stderr)
        return 1
    sdk_total = sum(report.bytes_before for report in reports)
    wire_total = sum(report.bytes_after for report in reports)
    artifacts = list(artifact_dir.glob("*.txt"))
    print(f"Model's answer: {answer}")
    print(
        f"Summary: {len(reports)} requests; the SDK produced {sdk_total:,} bytes, "
        f"{wire_total:,} went on the wire; {len(artifacts)} artifacts hold the full outputs in "
        f"{artifact_dir} (kept; delete it when done). "
        f"{time.perf_counter() - started:.1f}s.",
    )
    return 0
