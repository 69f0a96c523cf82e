"""Request bodies per wire format, built the way the SDKs write them, with their slot paths.

Each builder takes the tool results of each model turn (a list of batches, each a list of
texts) and returns the decoded body and, per batch, the JSON paths of the text slots, so
that tests can check the contracts without using the code under test to find the slots.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

JsonPath = tuple[str | int, ...]
Built = tuple[dict[str, Any], list[list[JsonPath]]]

IMAGE_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6"


def _cid(turn: int, i: int) -> str:
    return f"call_{turn}_{i}"


def openai_chat(batches: Sequence[Sequence[str]]) -> Built:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Look things up."},
    ]
    paths: list[list[JsonPath]] = []
    for turn, results in enumerate(batches):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": _cid(turn, i),
                        "type": "function",
                        "function": {"name": f"tool_{i}", "arguments": '{"q": 1}'},
                    }
                    for i in range(len(results))
                ],
            }
        )
        batch: list[JsonPath] = []
        for i, text in enumerate(results):
            index = len(messages)
            if i % 2:
                content: Any = [{"type": "text", "text": text}]
                batch.append(("messages", index, "content", 0, "text"))
            else:
                content = text
                batch.append(("messages", index, "content"))
            messages.append({"role": "tool", "tool_call_id": _cid(turn, i), "content": content})
        paths.append(batch)
    return {"model": "gpt-4o-mini", "messages": messages, "temperature": 0}, paths


def openai_responses(batches: Sequence[Sequence[str]]) -> Built:
    items: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "input_text", "text": "Look things up."}]}
    ]
    paths: list[list[JsonPath]] = []
    for turn, results in enumerate(batches):
        items.append({"type": "reasoning", "id": f"rs_{turn}", "summary": []})
        for i in range(len(results)):
            items.append(
                {
                    "type": "function_call",
                    "call_id": _cid(turn, i),
                    "name": f"tool_{i}",
                    "arguments": "{}",
                }
            )
        batch: list[JsonPath] = []
        for i, text in enumerate(results):
            index = len(items)
            if i % 3 == 1:
                output: Any = [
                    {"type": "input_text", "text": text},
                    {"type": "input_image", "image_url": "data:image/png;base64," + IMAGE_B64},
                ]
                batch.append(("input", index, "output", 0, "text"))
            else:
                output = text
                batch.append(("input", index, "output"))
            items.append(
                {"type": "function_call_output", "call_id": _cid(turn, i), "output": output}
            )
        paths.append(batch)
    return {"model": "gpt-5", "input": items, "store": False}, paths


def anthropic(batches: Sequence[Sequence[str]]) -> Built:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Look things up."}]
    paths: list[list[JsonPath]] = []
    for turn, results in enumerate(batches):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": _cid(turn, i), "name": f"tool_{i}", "input": {}}
                    for i in range(len(results))
                ],
            }
        )
        index = len(messages)
        blocks: list[dict[str, Any]] = []
        batch: list[JsonPath] = []
        for i, text in enumerate(results):
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": _cid(turn, i)}
            if i % 2:
                block["content"] = [
                    {"type": "text", "text": text},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": IMAGE_B64},
                    },
                ]
                batch.append(("messages", index, "content", i, "content", 0, "text"))
                block["is_error"] = True
            else:
                block["content"] = text
                batch.append(("messages", index, "content", i, "content"))
            blocks.append(block)
        blocks[-1]["cache_control"] = {"type": "ephemeral"}
        messages.append({"role": "user", "content": blocks})
        paths.append(batch)
    return {"model": "claude-haiku-4-5", "max_tokens": 1024, "messages": messages}, paths


def _gemini(batches: Sequence[Sequence[str]], *, snake: bool) -> Built:
    call_key, response_key = (
        ("function_call", "function_response") if snake else ("functionCall", "functionResponse")
    )
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "Look things up."}]}]
    paths: list[list[JsonPath]] = []
    for turn, results in enumerate(batches):
        contents.append(
            {
                "role": "model",
                "parts": [
                    {call_key: {"id": _cid(turn, i), "name": f"tool_{i}", "args": {}}}
                    for i in range(len(results))
                ],
            }
        )
        index = len(contents)
        parts: list[dict[str, Any]] = []
        batch: list[JsonPath] = []
        for i, text in enumerate(results):
            slot = "content" if snake else ("error" if i % 2 else "output")
            response: dict[str, Any] = {slot: text, "exit_code": i}
            parts.append(
                {response_key: {"id": _cid(turn, i), "name": f"tool_{i}", "response": response}}
            )
            batch.append(("contents", index, "parts", i, response_key, "response", slot))
        contents.append({"role": "user", "parts": parts})
        paths.append(batch)
    config_key = "generation_config" if snake else "generationConfig"
    return {"contents": contents, config_key: {"temperature": 0}}, paths


def gemini(batches: Sequence[Sequence[str]]) -> Built:
    return _gemini(batches, snake=False)


def gemini_snake(batches: Sequence[Sequence[str]]) -> Built:
    return _gemini(batches, snake=True)


def _chat_like(batches: Sequence[Sequence[str]], *, ollama: bool) -> Built:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Look things up."}]
    paths: list[list[JsonPath]] = []
    for turn, results in enumerate(batches):
        calls = [
            {"function": {"name": f"tool_{i}", "arguments": {}}}
            if ollama
            else {
                "id": _cid(turn, i),
                "type": "function",
                "function": {"name": f"tool_{i}", "arguments": "{}"},
            }
            for i in range(len(results))
        ]
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        batch: list[JsonPath] = []
        for i, text in enumerate(results):
            index = len(messages)
            if ollama:
                messages.append({"role": "tool", "content": text, "tool_name": f"tool_{i}"})
                batch.append(("messages", index, "content"))
            elif i % 2:
                content = [
                    {"type": "text", "text": text},
                    {"type": "document", "document": {"data": {"title": "t", "n": i}}},
                ]
                messages.append(
                    {"role": "tool", "tool_call_id": _cid(turn, i), "content": content}
                )
                batch.append(("messages", index, "content", 0, "text"))
            else:
                messages.append({"role": "tool", "tool_call_id": _cid(turn, i), "content": text})
                batch.append(("messages", index, "content"))
        paths.append(batch)
    model = "llama3.2" if ollama else "command-a-03-2025"
    return {"model": model, "messages": messages, "stream": False}, paths


def ollama(batches: Sequence[Sequence[str]]) -> Built:
    return _chat_like(batches, ollama=True)


def cohere(batches: Sequence[Sequence[str]]) -> Built:
    return _chat_like(batches, ollama=False)


def bedrock(batches: Sequence[Sequence[str]]) -> Built:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "Look things up."}]}]
    paths: list[list[JsonPath]] = []
    for turn, results in enumerate(batches):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"toolUse": {"toolUseId": _cid(turn, i), "name": f"tool_{i}", "input": {}}}
                    for i in range(len(results))
                ],
            }
        )
        index = len(messages)
        blocks: list[dict[str, Any]] = []
        batch: list[JsonPath] = []
        for i, text in enumerate(results):
            blocks.append(
                {
                    "toolResult": {
                        "toolUseId": _cid(turn, i),
                        "content": [{"text": text}, {"json": {"rows": i}}],
                        "status": "success",
                    }
                }
            )
            batch.append(("messages", index, "content", i, "toolResult", "content", 0, "text"))
        messages.append({"role": "user", "content": blocks})
        paths.append(batch)
    return {"messages": messages, "inferenceConfig": {"maxTokens": 512}}, paths


@dataclass(frozen=True)
class Fmt:
    """One wire format as tests see it: the endpoint, a body builder, how the SDK encodes."""

    name: str
    url: str
    build: Callable[[Sequence[Sequence[str]]], Built]
    ascii_only: bool = False
    spaced: bool = False

    def encode(self, body: Any) -> bytes:
        separators = (", ", ": ") if self.spaced else (",", ":")
        return json.dumps(body, ensure_ascii=self.ascii_only, separators=separators).encode(
            "utf-8", "surrogatepass"
        )

    def body(self, batches: Sequence[Sequence[str]]) -> tuple[bytes, list[list[JsonPath]]]:
        decoded, paths = self.build(batches)
        return self.encode(decoded), paths


FORMATS: tuple[Fmt, ...] = (
    Fmt("openai_chat", "https://api.openai.com/v1/chat/completions", openai_chat),
    Fmt("openai_responses", "https://api.openai.com/v1/responses", openai_responses),
    Fmt("anthropic", "https://api.anthropic.com/v1/messages", anthropic),
    # google-genai writes ensure_ascii escapes and ", " / ": " separators.
    Fmt(
        "gemini",
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
        gemini,
        ascii_only=True,
        spaced=True,
    ),
    Fmt(
        "gemini_litellm",
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        gemini_snake,
    ),
    Fmt("ollama", "http://127.0.0.1:11434/api/chat", ollama),
    Fmt("cohere", "https://api.cohere.com/v2/chat", cohere),
    Fmt(
        "bedrock",
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku%3A0/converse",
        bedrock,
    ),
)
FORMAT_IDS = [fmt.name for fmt in FORMATS]


def get(value: Any, path: JsonPath) -> Any:
    """The value at ``path`` inside a decoded body."""
    for key in path:
        value = value[key]
    return value


def blank_slots(value: Any, paths: Sequence[Sequence[JsonPath]]) -> Any:
    """A deep copy of a decoded body with every slot replaced by None."""
    copy = json.loads(json.dumps(value))
    for batch in paths:
        for path in batch:
            container = get(copy, path[:-1])
            container[path[-1]] = None
    return copy
