"""The loop closes: a failing test's line in the omitted middle of a 400 KB log is cut from
the preview, the model calls read_tool_output with a pattern on the reference the preview
names, and the line reaches the model in the next request (the real openai SDK, bounded by
instrument(), against the fake provider)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import budgetware
from budgetware.testing import FakeProvider, Reply
from budgetware.tools import TOOL_NAME, read_tool_output_schema, run_read_tool_output

openai = pytest.importorskip("openai")

FAILING = "FAILED tests/test_cart.py::test_checkout_total - AssertionError: 41.99 != 42.00"
LINES = [f"tests/test_mod_{i:05d}.py::test_case PASSED [{i % 100:3d}%]" for i in range(8200)]
LOG = "\n".join([*LINES[:4100], FAILING, *LINES[4100:], "==== 1 failed, 8200 passed ===="])
RUN_TESTS = {
    "type": "function",
    "function": {"name": "run_tests", "parameters": {"type": "object", "properties": {}}},
}
REF = re.compile(r"Full output: (\S+?\.txt)")


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m.get("role") == "tool"]


def model(api: str, body: dict[str, Any] | None) -> Reply:
    """The scripted model: run the tests; then search the full output the preview names."""
    assert body is not None
    results = tool_messages(body)
    if not results:
        return Reply.tools([("call_run", "run_tests", {})])
    if len(results) == 1:
        found = REF.search(results[0])
        assert found, "the preview names its full output"
        return Reply.tools(
            [("call_read", TOOL_NAME, {"ref": found.group(1), "pattern": "^FAILED"})]
        )
    return Reply("the checkout total is off by a cent")


def test_the_failing_line_reaches_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert 390_000 < len(LOG.encode()) < 410_000
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", str(tmp_path / "artifacts"))
    tools = [RUN_TESTS, read_tool_output_schema("openai_chat")]
    with (
        FakeProvider(model) as fake,
        budgetware.instrument(),
        budgetware.budget(
            # Salient lines off: the preview would otherwise rescue a FAILED line from the
            # omitted middle (docs/previews.md); here it must stay omitted.
            batch_budget=20_000,
            preview_salient_percent=0,
            # The agent has the tool: previews say so.
            preview_tool_hint=True,
        ),
    ):
        client = openai.OpenAI(base_url=f"{fake.url}/v1", api_key="test")
        messages: list[Any] = [{"role": "user", "content": "Why does CI fail?"}]
        while True:
            reply = client.chat.completions.create(model="m", messages=messages, tools=tools)
            message = reply.choices[0].message
            if not message.tool_calls:
                break
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                if call.function.name == "run_tests":
                    output = LOG
                else:
                    output = run_read_tool_output(call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
        client.close()
    assert message.content == "the checkout total is off by a cent"
    _first, second, third = (r.json() for r in fake.requests)
    # What the model saw of the log: a bounded preview without the failing line.
    [preview] = tool_messages(second)
    assert len(preview) <= 20_000
    assert FAILING not in preview
    notice = preview.split("\n", 1)[0]
    assert notice.endswith("; read_tool_output can page or search it]")
    # What it saw after reading: the line, with its number and offset.
    preview_again, answer = tool_messages(third)
    assert preview_again == preview  # the same bytes again: cache-safe
    assert answer.split("\n")[:2] == [
        "1 match (line:offset: text; read around one with its offset)",
        f"4101:{LOG.index(FAILING)}: {FAILING}",
    ]
    assert json.dumps(third).count(FAILING) == 1
