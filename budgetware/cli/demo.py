"""``budgetware demo``: a scripted agent whose huge tool outputs reach the model bounded."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from budgetware.cli.errors import ArgumentParser, CliError, describe_os_error
from budgetware.core.artifacts import text_key
from budgetware.core.config import BudgetConfig
from budgetware.core.fit import fit_text
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


# --- what went where -----------------------------------------------------------------------


class Tap:
    """A transport that remembers the body of every request passing through it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.bodies: list[bytes] = []

    def handle_request(self, request: Any) -> Any:
        self.bodies.append(bytes(request.content))
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def _results_of_last_batch(provider: str, body: bytes) -> list[tuple[str, str]]:
    """``(tool name, text)`` of the newest batch of tool results in a request body."""
    data = json.loads(body)
    messages = data.get("messages", [])
    if provider == "anthropic":
        names = {
            block.get("id"): block.get("name")
            for message in messages
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == "tool_use"
        }
        last = messages[-1] if messages else {}
        content = last.get("content")
        blocks: list[Any] = content if isinstance(content, list) else []
        return [
            (str(names.get(b.get("tool_use_id"))), _text(b.get("content")))
            for b in blocks
            if b.get("type") == "tool_result"
        ]
    names = {
        call["id"]: call["function"]["name"]
        for message in messages
        for call in message.get("tool_calls") or []
    }
    batch: list[tuple[str, str]] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        batch.append((str(names.get(message.get("tool_call_id"))), _text(message["content"])))
    return batch[::-1]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


@dataclass
class Turn:
    number: int
    sdk_bytes: int
    wire_bytes: int
    results: list[tuple[str, int, int]]
    """(tool name, chars the SDK sent, chars that went on the wire)"""
    artifacts: list[tuple[str, int]]
    preview: str | None
    elapsed: float
    unnamed: tuple[str, str] | None = None
    """(SDK text, artifact reference) of a cut result whose preview names no artifact"""
    shared_prefix: int = 0
    """bytes at the start of this wire body identical to the previous request's"""
    previous_bytes: int = 0
    history_identical: bool = False


@dataclass
class Run:
    provider: str
    real: bool
    budget: int
    artifact_dir: Path
    turns: list[Turn] = field(default_factory=list)
    answer: str = ""
    told_unnamed: bool = False


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
            model=model, max_tokens=1024, messages=messages, tools=tools
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
    if provider == "anthropic":
        import anthropic

        return anthropic.Anthropic(
            base_url=base_url,
            api_key=api_key,
            max_retries=0,
            http_client=anthropic.DefaultHttpxClient(transport=transport),
        )
    import openai

    return openai.OpenAI(
        base_url=base_url,
        api_key=api_key,
        max_retries=0,
        http_client=openai.DefaultHttpxClient(transport=transport),
    )


# --- output ----------------------------------------------------------------------------------


class Printer:
    """Plain text, or rich tables and a progress bar when rich is installed and on a TTY."""

    def __init__(self, plain: bool) -> None:
        self.console: Any = None
        if not plain and sys.stdout.isatty():
            try:
                from rich.console import Console
            except ImportError:
                pass
            else:
                self.console = Console()

    def line(self, text: str = "", style: str | None = None) -> None:
        if self.console is not None:
            self.console.print(text, style=style, highlight=False, markup=False)
        else:
            print(text, flush=True)

    @contextmanager
    def progress(self, total: int) -> Iterator[Callable[[str], None]]:
        if self.console is None:

            def advance(label: str) -> None:
                pass

            yield advance
            return
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn

        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} requests"),
            console=self.console,
            transient=True,
        ) as bar:
            task = bar.add_task("agent run", total=total)

            def advance(label: str) -> None:
                bar.update(task, advance=1, description=label)

            yield advance

    def turn(self, turn: Turn, budget: int) -> None:
        saved = turn.sdk_bytes - turn.wire_bytes
        share = f"{saved * 100 // turn.sdk_bytes}% smaller" if turn.sdk_bytes else ""
        self.line(
            f"Request {turn.number}: the SDK would have sent {turn.sdk_bytes:,} bytes; "
            f"on the wire: {turn.wire_bytes:,} bytes ({share}, {turn.elapsed:.2f}s)",
            style="bold",
        )
        if not turn.results:
            self.line("    no tool results yet (the user's prompt)")
        else:
            if self.console is not None:
                from rich.table import Table

                table = Table(show_edge=False, pad_edge=False, box=None)
                for column in ("tool result", "SDK chars", "wire chars", ""):
                    table.add_column(column, justify="left" if not column else "right")
                for name, before, after in turn.results:
                    note = "previewed" if after < before else "unchanged"
                    table.add_row(name, f"{before:,}", f"{after:,}", note)
                self.console.print(table)
            else:
                for name, before, after in turn.results:
                    note = "previewed" if after < before else "unchanged"
                    self.line(f"    {name:<10} {before:>10,} -> {after:>7,} chars  {note}")
            total = sum(after for _, _, after in turn.results)
            self.line(f"    batch on the wire: {total:,} chars (budget {budget:,})")
        if turn.previous_bytes:
            # Bounded alike every turn, the re-sent history keeps prompt caches hitting; the
            # shared prefix reaches the previous body's closing ']' exactly when it did.
            if turn.history_identical:
                self.line(
                    f"    history re-sent byte-identical: all of request {turn.number - 1}'s "
                    f"messages (its first {turn.shared_prefix:,} bytes; prompt caches keep "
                    "hitting)"
                )
            else:
                self.line(
                    f"    history differs from request {turn.number - 1}'s after "
                    f"{turn.shared_prefix:,} bytes"
                )
        for name, size in turn.artifacts:
            self.line(f"    artifact written: {name} ({size:,} bytes)")
        if turn.preview:
            self.line("    preview excerpt (what the model reads):", style="dim")
            for text in turn.preview.splitlines():
                self.line("    | " + text, style="dim")
        self.line()

    def unnamed(self, cut: tuple[str, str], budget: int, artifact_dir: Path) -> None:
        text, ref = cut
        need = _room_to_name(text, ref)
        self.line(
            f"note: previews this small cannot name their artifact: --budget {budget:,} is "
            f"shared by the whole batch, and a preview names the file that holds the full "
            f"output only from about {need:,} chars. The model sees a cut notice with no way "
            f"back to the output, so no artifact is written for it to {artifact_dir} (one "
            f"that no preview names could never be found).",
            style="yellow",
        )
        self.line()


def _room_to_name(text: str, ref: str) -> int:
    """The smallest allocation at which ``text``'s preview names ``ref`` (by bisection)."""
    low, high = 0, len(text)
    while low < high:
        mid = (low + high) // 2
        if ref in fit_text(text, mid, refs=[ref]):
            high = mid
        else:
            low = mid + 1
    return low


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix, by bisection over C-speed slice comparisons."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


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


def run(args: argparse.Namespace, printer: Printer) -> Run:
    import httpx2

    from budgetware.testing import FakeProvider, scripted_tool_calls

    artifact_dir = Path(args.artifact_dir or tempfile.mkdtemp(prefix="budgetware-demo-"))
    config = BudgetConfig(batch_budget=args.budget, artifact_dir=artifact_dir)
    real = _real_settings(args)
    result = Run(args.provider, real is not None, args.budget, artifact_dir)
    model = args.model or ("claude-haiku-4-5" if args.provider == "anthropic" else "gpt-4o-mini")
    with ExitStack() as stack:
        if real is None:
            provider = stack.enter_context(
                FakeProvider(reply=scripted_tool_calls(SCRIPT, FINAL_TEXT))
            )
            suffix = "" if args.provider == "anthropic" else "/v1"
            base_url: str | None = provider.url + suffix
            api_key = "demo-key"
        else:
            base_url, api_key = real
        wire = Tap(httpx2.HTTPTransport())
        sdk = Tap(BudgetTransport(wire, config=config))
        client = stack.enter_context(_client(args.provider, base_url, api_key, sdk))
        seen_artifacts: set[str] = set()
        started = time.perf_counter()

        def record() -> None:
            nonlocal started
            before = _results_of_last_batch(args.provider, sdk.bodies[-1])
            after = _results_of_last_batch(args.provider, wire.bodies[-1])
            new = sorted(p for p in _listing(artifact_dir) if p.name not in seen_artifacts)
            seen_artifacts.update(p.name for p in new)
            cut = [a for (_, b), (_, a) in zip(before, after) if len(a) < len(b)]
            names = [p.name for p in _listing(artifact_dir)]
            unnamed = next(
                (
                    (b, os.path.join(os.path.abspath(artifact_dir), text_key(b) + ".txt"))
                    for (_, b), (_, a) in zip(before, after)
                    if len(a) < len(b) and not any(name in a for name in names)
                ),
                None,
            )
            previous = wire.bodies[-2] if len(wire.bodies) > 1 else b""
            shared = _common_prefix(previous, wire.bodies[-1])
            turn = Turn(
                number=len(result.turns) + 1,
                sdk_bytes=len(sdk.bodies[-1]),
                wire_bytes=len(wire.bodies[-1]),
                results=[(n, len(b), len(a)) for (n, b), (_, a) in zip(before, after)],
                artifacts=[(p.name, p.stat().st_size) for p in new],
                preview=_excerpt(cut[0]) if cut else None,
                unnamed=unnamed,
                elapsed=time.perf_counter() - started,
                shared_prefix=shared,
                previous_bytes=len(previous),
                history_identical=previous[shared : shared + 1] == b"]",
            )
            result.turns.append(turn)
            printer.turn(turn, args.budget)
            if turn.unnamed is not None and not result.told_unnamed:
                result.told_unnamed = True
                printer.unnamed(turn.unnamed, args.budget, artifact_dir)
            started = time.perf_counter()

        agent = _anthropic_agent if args.provider == "anthropic" else _openai_agent
        with printer.progress(len(SCRIPT) + 1) as advance:

            def step() -> None:
                record()
                advance(f"turn {len(result.turns)} done")

            result.answer = agent(client, model, step)
    return result


def _listing(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.txt")) if directory.is_dir() else []


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
    parser.add_argument("--offline", action="store_true", help="the default: no real provider")
    parser.add_argument("--model", help="model name (real provider)")
    parser.add_argument("--plain", action="store_true", help="plain text output, no colors")
    args = parser.parse_args(argv)
    if args.budget <= 0:
        typed = next((a for a in reversed(argv) if a.startswith("--b")), "--budget")
        typed = typed.partition("=")[0]  # as typed: --budget or --batch-budget
        parser.error(f"{typed} must be positive, not {args.budget}")
    chosen = Path(args.artifact_dir) if args.artifact_dir is not None else None
    if chosen is not None and chosen.exists() and not chosen.is_dir():
        raise CliError(f"--artifact-dir {chosen} is a file, not a directory", 2)
    if chosen is not None:
        # Say it once, up front, rather than as a warning per artifact.
        try:
            chosen.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise CliError(f"cannot create --artifact-dir {describe_os_error(exc)}") from None
    # A bad BUDGETWARE_* variable fails here, in one line, not inside the first SDK call.
    BudgetConfig.from_env(batch_budget=args.budget, artifact_dir=args.artifact_dir)
    printer = Printer(args.plain)
    try:
        import httpx2  # noqa: F401

        if args.provider == "anthropic":
            import anthropic  # noqa: F401
        else:
            import openai  # noqa: F401
    except ImportError as exc:
        raise CliError(f'needs {exc.name}: pip install "budgetware[demo]"') from None
    where = "a real provider" if _real_settings(args) else "an embedded fake provider (offline)"
    printer.line(
        f"budgetware demo: the {args.provider} SDK runs a scripted coding agent against {where}; "
        f"every batch of tool results is bounded to {args.budget:,} chars.",
        style="bold",
    )
    printer.line()
    started = time.perf_counter()
    try:
        result = run(args, printer)
    except Exception as exc:  # a real provider refused or was unreachable: say so, briefly
        if _real_settings(args) is None:
            raise
        print(f"budgetware demo: the provider call failed: {exc}", file=sys.stderr)
        return 1
    sdk_total = sum(t.sdk_bytes for t in result.turns)
    wire_total = sum(t.wire_bytes for t in result.turns)
    artifacts = _listing(result.artifact_dir)
    printer.line(f"Model's answer: {result.answer}", style="bold")
    printer.line(
        f"Summary: {len(result.turns)} requests; the SDK produced {sdk_total:,} bytes, "
        f"{wire_total:,} went on the wire; {len(artifacts)} artifacts hold the full outputs in "
        f"{result.artifact_dir} (kept; delete it when done). "
        f"{time.perf_counter() - started:.1f}s.",
    )
    return 0
