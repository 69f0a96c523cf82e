"""Budgets from wide to narrow: instrument(config), a budget() block, a request header.

Run: python examples/per_request_budget.py
"""

from __future__ import annotations

import tempfile

import anthropic

import budgetware
from budgetware.testing import FakeProvider

output = "".join(f"{i:06d} lorem ipsum dolor sit amet\n" for i in range(20_000))
messages = [
    {"role": "user", "content": "Summarize the log."},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "cat", "input": {}}],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": output}],
    },
]
config = budgetware.BudgetConfig(batch_budget=50_000, artifact_dir=tempfile.mkdtemp())


def sent_size(provider: FakeProvider) -> int:
    block = provider.last.json()["messages"][-1]["content"][0]
    return len(block["content"])


with FakeProvider() as provider, budgetware.instrument(config=config):
    client = anthropic.Anthropic(base_url=provider.url, api_key="sk-ant-example")

    def ask(**kwargs: object) -> int:
        client.messages.create(
            model="claude-haiku-4-5",
            max_tokens=100,
            messages=messages,
            **kwargs,  # type: ignore[arg-type]
        )
        return sent_size(provider)

    print(f"instrument(config): {ask():,} chars")
    with budgetware.budget(batch_budget=5_000):
        print(f"budget() block:     {ask():,} chars")
    headers = {"x-budgetware-batch-budget": "2000"}
    print(f"request header:     {ask(extra_headers=headers):,} chars")
    # budgetware's own headers never reach the provider.
    assert not any(h.startswith("x-budgetware") for h in provider.last.headers)
    print(f"disabled by header: {ask(extra_headers={'x-budgetware-disable': '1'}):,} chars")
