"""The ready-made read_tool_output tools, each driven by its real framework against the
fake provider scripted to call it: the failing line in the omitted middle of a log reaches
the model in the next request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from budgetware.finalizer import LocalArtifactStore
from budgetware.integrations import tools
from budgetware.testing import FakeProvider, scripted_tool_calls

FAILING = "FAILED tests/test_cart.py::test_checkout_total - AssertionError: 41.99 != 42.00"
LOG = "\n".join(
    [f"PASSED tests/test_{i}.py::test_ok" for i in range(1, 5000)]
    + [FAILING]
    + [f"PASSED tests/test_{i}.py::test_more" for i in range(5000, 10000)]
)


@pytest.fixture
def ref(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    directory = tmp_path / "artifacts"
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", str(directory))
    return LocalArtifactStore(directory).put(LOG)


@pytest.fixture
def provider(ref: str) -> Any:
    policy = scripted_tool_calls([[("read_tool_output", {"ref": ref, "pattern": "FAILED"})]])
    with FakeProvider(policy) as fake:
        yield fake


def tool_results(fake: FakeProvider) -> list[str]:
    """The tool messages of the last request the model received (OpenAI chat format)."""
    body = fake.requests[-1].json()
    return [m["content"] for m in body["messages"] if m.get("role") == "tool"]


def assert_failing_line_reached_the_model(fake: FakeProvider) -> None:
    assert len(fake.requests) == 2
    [answer] = tool_results(fake)
    if isinstance(answer, list):  # content parts
        answer = "".join(part["text"] for part in answer)
    assert answer.startswith("1 match")
    assert f": {FAILING}" in answer


async def test_openai_agents_sdk(provider: FakeProvider) -> None:
    pytest.importorskip("agents")
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # no traces sent anywhere
    client = AsyncOpenAI(base_url=f"{provider.url}/v1", api_key="test")
    agent = Agent(
        name="ci",
        instructions="Find why CI failed.",
        model=OpenAIChatCompletionsModel(model="gpt-test", openai_client=client),
        tools=[tools.openai_agents_tool()],
    )
    try:
        result = await Runner.run(agent, "why did CI fail?")
    finally:
        await client.close()
    assert result.final_output == "done"
    assert_failing_line_reached_the_model(provider)
    declared = provider.requests[0].json()["tools"][0]["function"]
    assert declared["name"] == "read_tool_output"
    assert declared["parameters"]["required"] == ["ref"]


def test_langchain_and_langgraph(provider: FakeProvider) -> None:
    pytest.importorskip("langgraph")
    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    model = ChatOpenAI(model="gpt-test", base_url=f"{provider.url}/v1", api_key="test")
    tool = tools.langchain_tool()
    bound = model.bind_tools([tool])

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode([tool]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    out = graph.compile().invoke({"messages": [HumanMessage("why did CI fail?")]})
    assert out["messages"][-1].content == "done"
    assert_failing_line_reached_the_model(provider)


def test_a_langchain_mistake_is_an_answer_not_an_exception(ref: str) -> None:
    pytest.importorskip("langchain_core")
    tool = tools.langchain_tool()
    assert tool.invoke({"ref": ref, "offset": -1}).startswith("error: offset must be 0 or more")
    assert tool.invoke({"ref": ref, "offset": "x"}).startswith("error: offset must be a whole")


async def test_pydantic_ai(provider: FakeProvider) -> None:
    pytest.importorskip("pydantic_ai")
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    async with AsyncOpenAI(base_url=f"{provider.url}/v1", api_key="test") as client:
        model = OpenAIChatModel("gpt-test", provider=OpenAIProvider(openai_client=client))
        agent = Agent(model, tools=[tools.pydantic_ai_tool()])
        result = await agent.run("why did CI fail?")
    assert result.output == "done"
    assert_failing_line_reached_the_model(provider)


async def test_the_plain_function_in_a_framework_that_wraps_functions(
    provider: FakeProvider,
) -> None:
    # pydantic-ai builds a tool from a typed, documented function: what most frameworks do.
    pytest.importorskip("pydantic_ai")
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    async with AsyncOpenAI(base_url=f"{provider.url}/v1", api_key="test") as client:
        model = OpenAIChatModel("gpt-test", provider=OpenAIProvider(openai_client=client))
        agent = Agent(model, tools=[tools.aread_tool_output])
        await agent.run("why did CI fail?")
    assert_failing_line_reached_the_model(provider)
    declared = provider.requests[0].json()["tools"][0]["function"]
    assert declared["name"] == "read_tool_output"
    assert "ref" in declared["parameters"]["properties"]


def test_the_plain_function_with_any_sdk(provider: FakeProvider) -> None:
    openai = pytest.importorskip("openai")
    from budgetware.tools import read_tool_output_schema

    client = openai.OpenAI(base_url=f"{provider.url}/v1", api_key="test")
    messages: list[Any] = [{"role": "user", "content": "why did CI fail?"}]
    schema = read_tool_output_schema("openai_chat")
    first = client.chat.completions.create(model="m", messages=messages, tools=[schema])
    call = first.choices[0].message.tool_calls[0]
    answer = tools.read_tool_output(**json.loads(call.function.arguments))
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": answer},
    ]
    client.chat.completions.create(model="m", messages=messages, tools=[schema])
    assert_failing_line_reached_the_model(provider)


@pytest.mark.parametrize(
    ("factory", "module", "extra"),
    [
        ("openai_agents_tool", "agents", "openai-agents"),
        ("langchain_tool", "langchain_core", "langchain"),
        ("pydantic_ai_tool", "pydantic_ai", "pydantic-ai"),
    ],
)
def test_a_missing_framework_names_its_extra(
    monkeypatch: pytest.MonkeyPatch, factory: str, module: str, extra: str
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=rf'pip install "budgetware\[{extra}\]"'):
        getattr(tools, factory)()
