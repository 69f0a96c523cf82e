"""Test helpers for budgetware users and its own suite: a local fake of the LLM provider APIs,
a real LiteLLM Proxy process to put in front of it, and a local S3-compatible server for
the S3 artifact store."""

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
from budgetware.testing.s3 import LocalS3Server, LocalS3ServerError

__all__ = [
    "API_NAMES",
    "ApiName",
    "FakeProvider",
    "LiteLLMProxy",
    "LiteLLMProxyError",
    "LocalS3Server",
    "LocalS3ServerError",
    "RecordedRequest",
    "Reply",
    "ReplyPolicy",
    "ToolCall",
    "count_tool_call_turns",
    "detect_api",
    "scripted_tool_calls",
]
