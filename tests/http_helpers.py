"""Helpers for the HTTP-layer tests: big tool results and reading them back from a body."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

RESULT_CHARS = 300_000
BUDGET = 50_000
_REF = re.compile(r"Full output: (\S+?\.txt)")


def big_result(i: int, size: int = RESULT_CHARS) -> str:
    """A tool result of ``size`` chars with a recognizable head and tail."""
    head = f"HEAD-{i}: $ pytest -q tests/\n"
    tail = f"\nFAILED tests/test_{i}.py::test_it - AssertionError\nTAIL-{i}: 1 failed"
    line = f"tests/test_module_{i}.py::test_case PASSED\n"
    filler = line * ((size - len(head) - len(tail)) // len(line) + 1)
    return head + filler[: size - len(head) - len(tail)] + tail


def big_results(count: int = 10, size: int = RESULT_CHARS) -> list[str]:
    return [big_result(i, size) for i in range(count)]


def small_results(count: int = 10) -> list[str]:
    return [f"small result {i}: " + "ok " * 100 for i in range(count)]


def _text(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                if isinstance(item.get("text"), str):
                    yield item["text"]
                document = item.get("document")
                if isinstance(document, dict) and isinstance(document.get("data"), str):
                    yield document["data"]


def tool_result_texts(api: str, body: dict[str, Any]) -> list[str]:
    """The text of every tool result in a request body of the given API, in order."""
    found: list[str] = []
    if api in ("openai_chat", "ollama", "cohere"):
        for message in body.get("messages", []):
            if message.get("role") == "tool":
                found.append("".join(_text(message.get("content"))))
    elif api == "openai_responses":
        for item in body.get("input", []):
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                found.append("".join(_text(item.get("output"))))
    elif api == "anthropic":
        for message in body.get("messages", []):
            for block in message.get("content", []) if isinstance(message, dict) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found.append("".join(_text(block.get("content"))))
    elif api == "gemini":
        for content in body.get("contents", []):
            for part in content.get("parts", []):
                response = part.get("functionResponse") or part.get("function_response")
                if isinstance(response, dict):
                    payload = response.get("response", {})
                    found.append("".join(_text(payload.get("output", payload.get("content")))))
    else:  # pragma: no cover - a new API needs a reader here
        raise AssertionError(f"no tool-result reader for {api}")
    return found


def artifact_refs(text: str) -> list[str]:
    return _REF.findall(text)


def assert_bounded(
    api: str, body: dict[str, Any], originals: list[str], artifact_dir: Path
) -> None:
    """Every result is a preview (notice, head, tail, artifact), the batch fits the budget,
    and each artifact holds the full original text."""
    texts = tool_result_texts(api, body)
    assert len(texts) == len(originals)
    assert sum(len(t) for t in texts) <= BUDGET
    for i, (text, original) in enumerate(zip(texts, originals)):
        assert text.startswith("[Tool output truncated: 300,000 chars")
        assert f"HEAD-{i}:" in text
        assert text.endswith(f"TAIL-{i}: 1 failed")
        refs = artifact_refs(text)
        assert len(refs) == 1
        artifact = Path(refs[0])
        assert artifact.parent == artifact_dir
        assert artifact.read_text(encoding="utf-8") == original


def one_breakpoint(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with only the newest ``cache_control`` breakpoint (Anthropic takes 4)."""
    marked = [
        block
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if "cache_control" in block
    ]
    for block in marked[:-1]:
        del block["cache_control"]
    return messages
