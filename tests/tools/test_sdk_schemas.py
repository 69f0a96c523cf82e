"""Each API's declaration of read_tool_output, sent by that API's real SDK: the SDK accepts
it and the request carries it as the provider expects; the model's call of it is run by the
executor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from budgetware.finalizer import LocalArtifactStore
from budgetware.testing import FakeProvider, Reply
from budgetware.tools import TOOL_NAME, read_tool_output_schema, run_read_tool_output

TEXT = "HEAD " + "x" * 50_000 + " needle " + "y" * 50_000


@pytest.fixture
def ref(tmp_path: Path) -> tuple[LocalArtifactStore, str]:
    store = LocalArtifactStore(tmp_path / "artifacts")
    return store, store.put(TEXT)


def calls_the_tool(ref: str) -> Any:
    def policy(api: str, body: dict[str, Any] | None) -> Reply:
        return Reply.tools([("call_1", TOOL_NAME, {"ref": ref, "pattern": "needle"})])

    return policy


def test_openai_responses(ref: tuple[LocalArtifactStore, str]) -> None:
    openai = pytest.importorskip("openai")
    store, artifact = ref
    with FakeProvider(calls_the_tool(artifact)) as fake:
        client = openai.OpenAI(base_url=f"{fake.url}/v1", api_key="test")
        response = client.responses.create(
            model="m", input="find it", tools=[read_tool_output_schema("openai_responses")]
        )
        client.close()
        sent = fake.last.json()["tools"][0]
    assert sent["name"] == TOOL_NAME
    assert sent["parameters"]["required"] == ["ref"]
    assert sent["strict"] is False  # a missing strict is strict mode: all required
    from openai.types.responses import FunctionToolParam  # the SDK type of a tool

    assert FunctionToolParam.__required_keys__ <= set(read_tool_output_schema("openai_responses"))
    [call] = [item for item in response.output if item.type == "function_call"]
    assert run_read_tool_output(call.arguments, store=store).startswith("1 match")


def test_anthropic(ref: tuple[LocalArtifactStore, str]) -> None:
    anthropic = pytest.importorskip("anthropic")
    store, artifact = ref
    with FakeProvider(calls_the_tool(artifact)) as fake:
        client = anthropic.Anthropic(base_url=fake.url, api_key="test")
        message = client.messages.create(
            model="claude-test",
            max_tokens=100,
            messages=[{"role": "user", "content": "find it"}],
            tools=[read_tool_output_schema("anthropic")],
        )
        client.close()
        sent = fake.last.json()["tools"][0]
    assert sent["input_schema"]["properties"]["pattern"]["type"] == "string"
    [use] = [block for block in message.content if block.type == "tool_use"]
    assert run_read_tool_output(use.input, store=store).startswith("1 match")


def test_gemini(ref: tuple[LocalArtifactStore, str]) -> None:
    pytest.importorskip("google.genai")
    from google import genai
    from google.genai import types

    store, artifact = ref
    with FakeProvider(calls_the_tool(artifact)) as fake:
        client = genai.Client(api_key="test", http_options=types.HttpOptions(base_url=fake.url))
        response = client.models.generate_content(
            model="gemini-test",
            contents="find it",
            config=types.GenerateContentConfig(
                tools=[types.Tool(function_declarations=[read_tool_output_schema("gemini")])],
                automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            ),
        )
        client.close()
        sent = fake.last.json()["tools"][0]["functionDeclarations"][0]
    assert sent["name"] == TOOL_NAME
    assert sent["parameters"]["required"] == ["ref"]
    [call] = response.function_calls or []
    assert run_read_tool_output(dict(call.args or {}), store=store).startswith("1 match")
