"""End to end: an MCP result bounded by instrument(), then sent to a model with openai."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from mcp_helpers import artifact_files, artifacts_of, call_over_http

from budgetware.core.config import BudgetConfig
from budgetware.http.instrument import instrument
from budgetware.testing import FakeProvider

BATCH_BUDGET = 30_000


@pytest.fixture
def artifact_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    directory = tmp_path / "artifacts"
    # The producer boundary and the finalizer both use the configured store.
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", str(directory))
    monkeypatch.setenv("BUDGETWARE_BATCH_BUDGET", str(BATCH_BUDGET))
    with instrument():
        yield directory


async def test_instrumented_mcp_result_reaches_the_model_naming_the_producer_artifact(
    sse_server, artifact_dir: Path
) -> None:
    result, _ = await call_over_http(sse_server.url, "big_text")
    bounded = result.content[0].text
    (ref,) = artifacts_of(result)
    assert len(bounded) > BATCH_BUDGET  # the batch budget has to cut it once more

    with FakeProvider() as provider:
        client = openai.AsyncOpenAI(base_url=f"{provider.url}/v1", api_key="k", max_retries=0)
        async with client:
            await client.chat.completions.create(
                model="fake-model",
                messages=[
                    {"role": "user", "content": "dump it"},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "big_text", "arguments": "{}"},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": "call_1", "content": bounded},
                ],
            )
        (sent,) = provider.requests
    tool_message = sent.json()["messages"][2]
    assert len(tool_message["content"]) <= BATCH_BUDGET
    assert ref in tool_message["content"]
    assert "TAIL-MARKER" in tool_message["content"]
    assert artifact_files(artifact_dir) == [Path(ref)]


async def test_the_config_of_instrument_sets_the_mcp_result_budget(
    sse_server, artifact_dir: Path
) -> None:
    with instrument(config=BudgetConfig(mcp_result_budget=4_000)):
        result, _ = await call_over_http(sse_server.url, "big_text")
    assert len(result.content[0].text) <= 4_000
    assert artifacts_of(result)[0] in result.content[0].text
