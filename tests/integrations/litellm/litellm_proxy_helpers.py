"""Request data as the LiteLLM Proxy hands it to callbacks, and checks on bounded results."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from testing import drivers

RESULT_CHARS = 300_000
BUDGET = 50_000
_REF = re.compile(r"Full output: (\S+?\.txt)")


def big_result(i: int, size: int = RESULT_CHARS) -> str:
    """A tool result of ``size`` chars with a recognizable head and tail."""
    head = f"HEAD-{i}: $ pytest -q tests/\n"
    tail = f"\nTAIL-{i}: 1 failed"
    filler = "x" * (size - len(head) - len(tail))
    return head + filler + tail


def big_results(count: int = 10, size: int = RESULT_CHARS) -> list[str]:
    return [big_result(i, size) for i in range(count)]


def small_results(count: int = 10) -> list[str]:
    return [f"small result {i}: " + "ok " * 100 for i in range(count)]


def gemini_contents(results: list[str]) -> list[dict[str, Any]]:
    """Gemini wire contents: user text, model function calls, user function responses."""
    return [
        {"role": "user", "parts": [{"text": drivers.USER_PROMPT}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": drivers.TOOL_NAME, "args": {"i": i}}}
                for i in range(len(results))
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": drivers.TOOL_NAME, "response": {"output": text}}}
                for text in results
            ],
        },
    ]


def proxy_data(
    field: str,
    conversation: list[Any],
    *,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``data`` as the proxy passes it to ``async_pre_call_hook`` (after its own setup)."""
    return {
        "model": "budget-test",
        field: conversation,
        "metadata": {"headers": dict(headers or {})},
        "proxy_server_request": {
            "url": "http://127.0.0.1:4000/v1/chat/completions",
            "method": "POST",
            "headers": {"content-type": "application/json", **(headers or {})},
            "body": None,
        },
        # The proxy also puts live objects into data: bounding must never serialize them.
        "litellm_logging_obj": object(),
    }


def tool_texts(field: str, conversation: list[Any]) -> list[str]:
    """The tool-result texts of an OpenAI chat, Anthropic, Responses or Gemini conversation."""
    texts: list[str] = []
    for item in conversation:
        if field == "messages" and item.get("role") == "tool":
            texts.append(item["content"])
        elif field == "messages" and isinstance(item.get("content"), list):
            texts.extend(b["content"] for b in item["content"] if b.get("type") == "tool_result")
        elif field == "input" and item.get("type") == "function_call_output":
            texts.append(item["output"])
        elif field == "contents":
            texts.extend(
                p["functionResponse"]["response"]["output"]
                for p in item["parts"]
                if "functionResponse" in p
            )
    return texts


def assert_bounded(texts: list[str], originals: list[str], artifact_dir: Path) -> None:
    """Every result is a preview (notice, head, tail, one artifact), the batch fits the
    budget, and each artifact holds the full original text."""
    assert len(texts) == len(originals)
    assert sum(len(t) for t in texts) <= BUDGET
    for i, (text, original) in enumerate(zip(texts, originals)):
        assert text.startswith(f"[Tool output truncated: {len(original):,} chars")
        assert f"HEAD-{i}:" in text
        assert text.endswith(f"TAIL-{i}: 1 failed")
        refs = _REF.findall(text)
        assert len(refs) == 1
        artifact = Path(refs[0])
        assert artifact.parent == artifact_dir
        assert artifact.read_text(encoding="utf-8") == original
