"""What resolving its settings costs a request, in microseconds.

Every request resolves its settings (``core/config.resolve_config``): the environment is
looked at (pydantic-settings reads it again only when a variable changed), then the
entry point's config, the ``budget()`` block and the request's own settings are layered
and validated. The MCP boundary does the same for each
``tools/call`` answer (``mcp/http._effective``: with the request's headers).

Cases, in a process environment of 60 variables (a shell's, a container's):

- no setting anywhere;
- three ``BUDGETWARE_*`` variables and an ``instrument(config=...)``;
- the same inside a ``budget()`` block, with an ``x-budgetware-batch-budget`` header;
- an MCP answer's settings (the request carries the header).

For scale, the same run measures a small request (1 KB, under budget) sent through
``BudgetTransport`` over an in-memory transport: everything budgetware does for it.

Run: ``.venv/bin/python benchmarks/bench_settings.py``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx2
from _harness import best_time, print_table

from budgetware.core.config import BudgetConfig, budget, resolve_config
from budgetware.http.headers import header_overrides, request_settings
from budgetware.http.transport import BudgetTransport

URL = "https://api.openai.com/v1/chat/completions"
HEADER = {"x-budgetware-batch-budget": "20000"}


def _environment(artifacts: str) -> None:
    for name in [name for name in os.environ if name.startswith("BUDGETWARE_")]:
        del os.environ[name]
    for index in range(60 - len(os.environ)):
        os.environ[f"BENCH_VARIABLE_{index}"] = "x" * 40


def _us(fn: object, number: int = 20_000) -> str:
    return f"{best_time(fn, repeat=7, number=number) * 1e6:.1f}"  # type: ignore[arg-type]


def main() -> None:
    artifacts = tempfile.mkdtemp(prefix="budgetware-bench-")
    _environment(artifacts)
    config = BudgetConfig(artifact_dir=Path(artifacts), persist=True)
    rows: list[tuple[str, str]] = []

    rows.append(("no setting anywhere", _us(lambda: resolve_config(None, lenient=True))))
    os.environ.update(
        {
            "BUDGETWARE_BATCH_BUDGET": "50000",
            "BUDGETWARE_UNIT": "chars",
            "BUDGETWARE_MCP_RESULT_BUDGET": "80000",
        }
    )
    rows.append(
        ("3 variables + instrument(config=)", _us(lambda: resolve_config(config, lenient=True)))
    )
    request = httpx2.Request("POST", "http://mcp.example/mcp", headers=HEADER, content=b"{}")
    with budget(batch_budget=30_000):

        def model_request() -> object:
            overrides = header_overrides(request.headers)
            return resolve_config(config, request_overrides=overrides, lenient=True)

        def mcp_answer() -> object:
            overrides = request_settings(request)
            return resolve_config(config, request_overrides=overrides, lenient=True)

        rows.append(("the same + budget() + a header", _us(model_request)))
        rows.append(("an MCP answer's settings (same layers)", _us(mcp_answer)))

    body = (
        b'{"model":"m","messages":[{"role":"user","content":"hi"},'
        b'{"role":"tool","tool_call_id":"c","content":"' + b"x" * 900 + b'"}]}'
    )
    ok = httpx2.Response(200, json={"choices": []})
    transport = BudgetTransport(httpx2.MockTransport(lambda request: ok), config=config)
    with httpx2.Client(transport=transport) as client:
        rows.append(
            (
                "for scale: a 1 KB request through BudgetTransport",
                _us(lambda: client.post(URL, content=body), number=2_000),
            )
        )
    print_table("Settings resolved per request (best of 7)", rows, ("case", "us per request"))


if __name__ == "__main__":
    main()
