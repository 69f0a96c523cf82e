"""Test helpers for budgetware users and its own suite: a local fake of the LLM provider APIs,
and a real LiteLLM Proxy process to put in front of it."""

from __future__ import annotations

from budgetware.testing.apis import (
    API_NAMES,
    ApiName,
    RecordedRequest,
    Reply,
    ReplyPolicy,
    ToolCall,
    count_tool_call_turns,
    detect_api,
    scripted_tool_calls,
)
from budgetware.testing.litellm_proxy import LiteLLMProxy, LiteLLMProxyError
from budgetware.testing.provider import FakeProvider

__all__ = [
    "API_NAMES",
    "ApiName",
    "FakeProvider",
    "LiteLLMProxy",
    "LiteLLMProxyError",
    "RecordedRequest",
    "Reply",
    "ReplyPolicy",
    "ToolCall",
    "count_tool_call_turns",
    "detect_api",
    "scripted_tool_calls",
]
