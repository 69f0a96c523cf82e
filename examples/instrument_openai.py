"""One call bounds every SDK in the process: the openai SDK against a local fake provider.

Run: python examples/instrument_openai.py
"""

from __future__ import annotations

import tempfile

import openai

import budgetware
from budgetware.testing import FakeProvider

big_listing = "".join(f"src/module_{i:05d}.py\n" for i in range(50_000))
messages = [
    {"role": "user", "content": "Which files are in src/?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": big_listing},
]
config = budgetware.BudgetConfig(batch_budget=10_000, artifact_dir=tempfile.mkdtemp())

with FakeProvider() as provider, budgetware.instrument(config=config):
    # Any client, created before or after instrument(), is bounded.
    client = openai.OpenAI(base_url=provider.url + "/v1", api_key="sk-example")
    client.chat.completions.create(model="gpt-4o-mini", messages=messages)  # type: ignore[arg-type]
    sent = provider.last.json()["messages"][-1]["content"]

print(f"the agent's tool result: {len(big_listing):,} chars")
print(f"what went on the wire:   {len(sent):,} chars (budget 10,000)")
print(sent.splitlines()[0])
