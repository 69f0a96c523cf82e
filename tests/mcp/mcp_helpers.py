"""Client-side helpers: call one tool over streamable HTTP, record what crosses a transport."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import jsonschema
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from budgetware.mcp.bound import META_ARTIFACTS


async def call_over_http(
    url: str, tool: str, http_client: httpx2.AsyncClient | None = None
) -> tuple[CallToolResult, dict[str, Any] | None]:
    """Call ``tool``; the result (already validated by the client) and its output schema."""
    async with (
        streamable_http_client(url, http_client=http_client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        result = await session.call_tool(tool, {})
        return result, tools[tool].output_schema


async def call_error_over_http(url: str, tool: str) -> MCPError:
    """Call ``tool`` expecting the call to fail; the error, caught inside the session."""
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        try:
            await session.call_tool(tool, {})
        except MCPError as exc:
            return exc
    raise AssertionError(f"{tool} did not fail")


def artifacts_of(result: CallToolResult) -> list[str]:
    meta = result.meta or {}
    refs = meta.get(META_ARTIFACTS)
    assert isinstance(refs, list)
    return refs


def assert_schema_valid(result: CallToolResult, schema: dict[str, Any] | None) -> None:
    assert schema is not None
    jsonschema.validate(result.structured_content, schema)


def artifact_files(directory: Path) -> list[Path]:
    """The artifacts in a store directory (decision records are not artifacts)."""
    if not directory.exists():
        return []
    return sorted(p for p in directory.iterdir() if p.name.endswith(".txt"))


@dataclass
class Exchange:
    request_body: bytes
    chunks: list[bytes] = field(default_factory=list)

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


class _Tee(httpx2.AsyncByteStream):
    def __init__(self, source: Any, sink: Exchange) -> None:
        self._source = source
        self._sink = sink

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._source:
            self._sink.chunks.append(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._source.aclose()


class RecordingTransport(httpx2.AsyncBaseTransport):
    """Records every request body and the exact response bytes that pass through it."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner
        self.exchanges: list[Exchange] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        exchange = Exchange(request.content)
        self.exchanges.append(exchange)
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_Tee(response.stream, exchange),
            request=request,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()
