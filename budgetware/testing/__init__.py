"""A local fake of the LLM provider APIs for your agent's tests (docs/pytest.md).

``FakeProvider`` answers the real client libraries on 127.0.0.1 and records every request
byte for byte; a reply policy (``scripted_tool_calls`` for a scripted agent) decides the
answers, and it caches prompts as each provider does. Standard library only: it imports
nothing of budgetware.
"""

from __future__ import annotations

from budgetware.testing._apis import (
    ApiName,
    RecordedRequest,
    Reply,
    ReplyPolicy,
    ToolCall,
    Usage,
    scripted_tool_calls,
)
from budgetware.testing._provider import FakeProvider

__all__ = [
    "ApiName",
    "FakeProvider",
    "RecordedRequest",
    "Reply",
    "ReplyPolicy",
    "ToolCall",
    "Usage",
    "scripted_tool_calls",
]
