"""Smoke test of an installed budgetware, run by scripts/ci-package from outside the repo.

With the interpreter of a fresh environment (budgetware and its ``demo`` extra installed,
nothing else): budgetware is imported from that environment, not from a source tree;
``instrument()`` bounds a real openai SDK request against ``budgetware.testing.
FakeProvider``, and the full output lands in the artifact store the preview names.
"""

from __future__ import annotations

import json
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path


def main() -> int:
    import openai

    import budgetware
    from budgetware.testing import FakeProvider

    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    where = Path(budgetware.__file__).resolve()
    assert site in where.parents, f"budgetware imported from {where}, not from {site}"
    import budgetware.integrations.openai  # the integrations ship too

    output = "".join(f"line {i:06d} of a long tool output\n" for i in range(20_000))
    artifacts = Path(tempfile.mkdtemp(prefix="budgetware-smoke-"))
    config = budgetware.BudgetConfig(batch_budget=2_000, artifact_dir=artifacts)
    messages = [
        {"role": "user", "content": "run the tests"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": output},
    ]
    with FakeProvider() as provider, budgetware.instrument(config=config):
        client = openai.OpenAI(base_url=provider.url + "/v1", api_key="smoke", max_retries=0)
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        client.close()
        sent = json.loads(provider.last.body)
    preview = sent["messages"][-1]["content"]
    assert reply.choices[0].message.content == "ok", reply
    assert len(preview) <= 2_000 < len(output), len(preview)
    (artifact,) = artifacts.glob("*.txt")
    assert artifact.name in preview
    assert artifact.read_text() == output
    shutil.rmtree(artifacts)
    print(
        f"smoke: budgetware {budgetware.__version__} from {where.parent}; the openai SDK's "
        f"{len(output):,}-char tool result reached the provider as {len(preview):,} chars, "
        f"the full output in the artifact it names"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
