"""Each wire format: where its tool results are, what is a slot, names, batches, detection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from budgetware.core.config import BudgetConfig
from budgetware.wire.body import finalize_body
from budgetware.wire.detect import format_for_path, sniff_format
from budgetware.wire.formats.anthropic_messages import FORMAT as ANTHROPIC
from budgetware.wire.formats.bedrock_converse import FORMAT as BEDROCK
from budgetware.wire.formats.chat import COHERE_V2, OLLAMA_CHAT, OPENAI_CHAT
from budgetware.wire.formats.gemini import FORMAT as GEMINI
from budgetware.wire.formats.openai_responses import FORMAT as RESPONSES

BIG = "B" * 3_000


def _config(tmp_path: Path) -> BudgetConfig:
    return BudgetConfig(batch_budget=1_000, artifact_dir=tmp_path, raise_errors=True)


# -- detection ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/v1/chat/completions", "openai_chat"),
        ("/openai/deployments/gpt4/chat/completions", "openai_chat"),
        ("/v1/responses", "openai_responses"),
        ("/v1/responses/input_tokens", "openai_responses"),
        ("/v1/messages", "anthropic_messages"),
        ("/v1/messages/count_tokens", "anthropic_messages"),
        ("/v1beta/models/gemini-2.5-flash:generateContent", "gemini"),
        ("/v1/projects/p/locations/l/publishers/google/models/g:streamGenerateContent", "gemini"),
        ("/api/chat", "ollama_chat"),
        ("/v2/chat", "cohere_v2"),
        ("/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse", "bedrock_converse"),
        ("/model/us.amazon.nova-pro-v1:0/converse-stream", "bedrock_converse"),
    ],
)
def test_the_url_path_picks_the_format(path: str, name: str) -> None:
    fmt = format_for_path(path)
    assert fmt is not None
    assert fmt.name == name


@pytest.mark.parametrize("path", ["/api/generate", "/v1/embeddings", "/v1/completions", "/"])
def test_other_paths_pick_no_format(path: str) -> None:
    assert format_for_path(path) is None


@pytest.mark.parametrize(
    ("body", "name"),
    [
        ({"messages": [{"role": "tool", "tool_call_id": "a", "content": "x"}]}, "openai_chat"),
        ({"input": [{"type": "function_call_output", "call_id": "a", "output": "x"}]},
         "openai_responses"),
        ({"messages": [{"role": "user", "content": [{"type": "tool_result",
                                                     "tool_use_id": "a"}]}]},
         "anthropic_messages"),
        ({"messages": [{"role": "user", "content": [{"toolResult": {"toolUseId": "a"}}]}]},
         "bedrock_converse"),
        ({"contents": [{"parts": [{"function_response": {"name": "f", "response": {}}}]}]},
         "gemini"),
    ],
)  # fmt: skip
def test_a_gateway_path_is_recognized_by_body_shape(body: dict[str, Any], name: str) -> None:
    fmt = sniff_format(body)
    assert fmt is not None
    assert fmt.name == name


def test_a_gateway_chat_body_is_bounded_when_sniffing_is_on(tmp_path: Path) -> None:
    body = json.dumps(
        {"model": "m", "messages": [{"role": "tool", "tool_call_id": "a", "content": BIG}]}
    ).encode()
    config = _config(tmp_path).model_copy(update={"sniff_unknown_endpoints": True})
    out = finalize_body("https://gateway.example/llm/run?x=1", body, config=config)
    assert len(json.loads(out)["messages"][0]["content"]) <= 1_000


def test_the_url_path_wins_over_the_body_shape(tmp_path: Path) -> None:
    # An Anthropic-shaped body sent to a chat completions URL is read as OpenAI chat: it
    # has no role "tool" message, so there is nothing to bound.
    body = json.dumps(
        {"messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": BIG}]}]}
    ).encode()  # fmt: skip
    url = "https://api.openai.com/v1/chat/completions"
    assert finalize_body(url, body, config=_config(tmp_path)) is body


# -- names, call ids, slots ----------------------------------------------------------------


def test_openai_chat_names_a_result_after_its_assistant_call() -> None:
    body = {
        "messages": [
            {"role": "assistant", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "grep", "arguments": "{}"}},
                {"id": "b", "type": "custom", "custom": {"name": "patch", "input": ""}}]},
            {"role": "tool", "tool_call_id": "b", "content": "one"},
            {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "two"}]},
        ]
    }  # fmt: skip
    [batch] = OPENAI_CHAT.batches(body)
    assert [(f.call_id, f.tool_name, f.slots) for f in batch] == [
        ("b", "patch", ["one"]),
        ("a", "grep", ["two"]),
    ]


def test_mistral_names_its_tool_messages_itself() -> None:
    body = {"messages": [{"role": "tool", "name": "search", "tool_call_id": "x", "content": "r"}]}
    [[found]] = OPENAI_CHAT.batches(body)
    assert found.tool_name == "search"


def test_openai_chat_batches_are_runs_of_consecutive_tool_messages() -> None:
    body = {
        "messages": [
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "assistant", "content": "ok"},
            {"role": "tool", "tool_call_id": "c", "content": "3"},
        ]
    }
    assert [[f.slots[0] for f in batch] for batch in OPENAI_CHAT.batches(body)] == [
        ["1", "2"],
        ["3"],
    ]


def test_openai_chat_image_parts_are_parts_not_slots() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    body = {"messages": [{"role": "tool", "tool_call_id": "a", "content": [image]}]}
    # A batch without any text slot is no batch at all.
    assert OPENAI_CHAT.batches(body) == []


def test_ollama_names_come_from_tool_name() -> None:
    body = {
        "messages": [
            {"role": "tool", "content": "r", "tool_name": "ls", "images": ["AAAA"]},
        ]
    }
    [[found]] = OLLAMA_CHAT.batches(body)
    assert (found.tool_name, found.slots, found.parts) == ("ls", ["r"], [["AAAA"]])


def test_cohere_documents_are_parts_and_names_come_from_tool_calls() -> None:
    doc = {"type": "document", "document": {"data": {"title": "x" * 5_000}}}
    body = {
        "messages": [
            {"role": "assistant", "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "web", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "t"}, doc]},
        ]
    }  # fmt: skip
    [[found]] = COHERE_V2.batches(body)
    assert (found.tool_name, found.slots, found.parts) == ("web", ["t"], [doc])


def test_anthropic_keeps_is_error_cache_control_and_server_results(tmp_path: Path) -> None:
    server = {
        "type": "web_search_tool_result",
        "tool_use_id": "s",
        "content": [{"type": "web_search_result", "encrypted_content": "E" * 4_000}],
    }
    body = {
        "model": "claude",
        "messages": [
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t", "name": "bash", "input": {}}, server]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t", "is_error": True,
                 "cache_control": {"type": "ephemeral", "ttl": "1h"}, "content": BIG},
                {"type": "text", "text": "T" * 2_000}]},
        ],
    }  # fmt: skip
    raw = json.dumps(body).encode()
    out = json.loads(
        finalize_body("https://api.anthropic.com/v1/messages", raw, config=_config(tmp_path))
    )
    result = out["messages"][1]["content"][0]
    assert len(result["content"]) <= 1_000
    assert result["is_error"] is True
    assert result["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert out["messages"][0]["content"][1] == server
    assert out["messages"][1]["content"][1] == {"type": "text", "text": "T" * 2_000}
    [[found]] = ANTHROPIC.batches(body)
    assert found.tool_name == "bash"


def test_anthropic_block_content_keeps_images_as_parts() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A"}}
    body = {"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": [
            {"type": "text", "text": "a"}, image, {"type": "text", "text": "b"}]}]}]}  # fmt: skip
    [[found]] = ANTHROPIC.batches(body)
    assert found.slots == ["a", "b"]
    assert found.parts == [image]
    assert found.paths == [
        ("messages", 0, "content", 0, "content", 0, "text"),
        ("messages", 0, "content", 0, "content", 2, "text"),
    ]


def test_anthropic_batches_are_one_user_message_each() -> None:
    def results(*ids: str) -> dict[str, Any]:
        return {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": i, "content": i} for i in ids]}  # fmt: skip

    body = {"messages": [results("a", "b"), {"role": "assistant", "content": "k"}, results("c")]}
    assert [[f.call_id for f in b] for b in ANTHROPIC.batches(body)] == [["a", "b"], ["c"]]


@pytest.mark.parametrize("spelling", ["functionResponse", "function_response"])
def test_gemini_output_and_error_are_slots_other_values_structured(spelling: str) -> None:
    response = {"output": "out", "error": "err", "rows": [{"name": "x" * 50}], "count": 3}
    media = [{"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]
    call = {"id": "g1", "name": "query", "response": response, "parts": media}
    body = {"contents": [{"role": "user", "parts": [{spelling: call}]}]}
    [[found]] = GEMINI.batches(body)
    assert (found.call_id, found.tool_name) == ("g1", "query")
    assert found.slots == ["out", "err"]
    assert found.parts == [[{"name": "x" * 50}], 3, media]


def test_gemini_litellm_content_string_is_a_slot_but_a_dict_is_not() -> None:
    body = {"contents": [{"parts": [
        {"function_response": {"name": "a", "response": {"content": "text"}}},
        {"function_response": {"name": "b", "response": {"content": {"k": "v"}}}}]}]}  # fmt: skip
    [[first, second]] = GEMINI.batches(body)
    assert first.slots == ["text"]
    assert (second.slots, second.parts) == ([], [{"k": "v"}])


def test_gemini_structured_values_are_untouched_when_bounding(tmp_path: Path) -> None:
    structured = {"rows": ["r" * 3_000], "n": 1}
    call = {"name": "q", "response": {"output": BIG, **structured}}
    body = {"contents": [{"role": "user", "parts": [{"functionResponse": call}]}]}
    url = "https://x.googleapis.com/v1beta/models/m:generateContent"
    out = json.loads(finalize_body(url, json.dumps(body).encode(), config=_config(tmp_path)))
    response = out["contents"][0]["parts"][0]["functionResponse"]["response"]
    assert len(response["output"]) <= 1_000
    assert {k: v for k, v in response.items() if k != "output"} == structured


def test_responses_finds_every_output_kind() -> None:
    body = {
        "input": [
            {"type": "function_call", "call_id": "f", "name": "grep", "arguments": "{}"},
            {"type": "custom_tool_call", "call_id": "c", "name": "patch", "input": "x"},
            {"type": "local_shell_call", "call_id": "l", "id": "l", "action": {}},
            {"type": "shell_call", "call_id": "s", "action": {"commands": ["ls"]}},
            {"type": "function_call_output", "call_id": "f", "output": "fo"},
            {"type": "custom_tool_call_output", "call_id": "c", "output": [
                {"type": "input_text", "text": "co"},
                {"type": "input_image", "image_url": "data:image/png;base64,AA"},
                {"type": "input_file", "file_id": "file_1"}]},
            {"type": "local_shell_call_output", "id": "l", "output": "lo"},
            {"type": "shell_call_output", "call_id": "s", "output": [
                {"stdout": "so", "stderr": "se", "outcome": {"type": "exit", "exit_code": 1}}]},
        ]
    }  # fmt: skip
    [batch] = RESPONSES.batches(body)
    assert [(f.call_id, f.tool_name, f.slots, len(f.parts)) for f in batch] == [
        ("f", "grep", ["fo"], 0),
        ("c", "patch", ["co"], 2),
        ("l", "local_shell", ["lo"], 0),
        ("s", "shell", ["so", "se"], 1),
    ]


def test_responses_mcp_call_output_and_error_are_slots() -> None:
    body = {"input": [
        {"type": "mcp_call", "id": "m1", "name": "fetch", "server_label": "s", "arguments": "{}",
         "output": "page", "error": "partial"},
        {"type": "mcp_call", "id": "m2", "name": "fetch", "server_label": "s", "arguments": "{}",
         "error": {"type": "http_error", "code": 500, "message": "down"}},
    ]}  # fmt: skip
    [batch] = RESPONSES.batches(body)
    assert [(f.tool_name, f.slots) for f in batch] == [
        ("fetch", ["page", "partial"]),
        ("fetch", ["down"]),
    ]
    assert batch[1].paths == [("input", 1, "error", "message")]


def test_responses_a_new_turn_starts_at_a_call_after_outputs() -> None:
    def call(i: str) -> dict[str, Any]:
        return {"type": "function_call", "call_id": i, "name": "f", "arguments": "{}"}

    def output(i: str) -> dict[str, Any]:
        return {"type": "function_call_output", "call_id": i, "output": i}

    body = {
        "input": [
            call("a"), call("b"), output("a"), output("b"),
            call("c"), output("c"),
            {"type": "message", "role": "user", "content": "more"},
            output("d"),
        ]
    }  # fmt: skip
    assert [[f.call_id for f in b] for b in RESPONSES.batches(body)] == [["a", "b"], ["c"], ["d"]]


def test_bedrock_text_items_are_slots_json_and_images_are_parts() -> None:
    body = {"messages": [
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "u", "name": "calc",
                                                       "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "u", "status": "error",
            "content": [{"text": "t"}, {"json": {"a": 1}},
                        {"image": {"format": "png", "source": {"bytes": "AA"}}}]}}]},
    ]}  # fmt: skip
    [[found]] = BEDROCK.batches(body)
    assert (found.tool_name, found.slots) == ("calc", ["t"])
    assert found.parts == [
        {"json": {"a": 1}},
        {"image": {"format": "png", "source": {"bytes": "AA"}}},
    ]
