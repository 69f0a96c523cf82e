"""The MCP server the tests talk to: big and small tools, served over HTTP or stdio."""

from __future__ import annotations

import base64
import sys
import zlib
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ImageContent, TextContent

# 2 MB of text with markers at both ends and in the middle (the middle must be cut).
BIG = "HEAD-MARKER\n" + "x" * 1_000_000 + "MIDDLE-MARKER" + "y" * 1_000_000 + "\nTAIL-MARKER"
SMALL = "a small result"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4).decode()


def build_server() -> MCPServer:
    server = MCPServer("big-output-server")

    @server.tool()
    def big_text() -> str:
        """2 MB of text (structured as {"result": str} by its output schema)."""
        return BIG

    @server.tool()
    def small_text() -> str:
        """A short result."""
        return SMALL

    @server.tool()
    def big_with_image() -> list[TextContent | ImageContent]:
        """2 MB of text beside a small image."""
        return [
            TextContent(type="text", text=BIG),
            ImageContent(type="image", data=PNG, mime_type="image/png"),
        ]

    @server.tool()
    def big_error() -> str:
        """Fails with a 2 MB error message."""
        raise ToolError(BIG)

    @server.tool()
    def structured_only() -> CallToolResult:
        """No text block: a long string and other values in structuredContent only."""
        return CallToolResult(
            content=[],
            structured_content={"log": BIG, "status": "ok", "count": 3},
        )

    return server


def gzip_everything(app: Any) -> Any:
    """ASGI middleware that gzips every response body, streaming ones included."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        compressor = zlib.compressobj(6, zlib.DEFLATED, 31)

        async def send_gzip(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.lower() != b"content-length"
                ]
                headers.append((b"content-encoding", b"gzip"))
                message = {**message, "headers": headers}
            elif message["type"] == "http.response.body":
                data = compressor.compress(message.get("body", b""))
                if message.get("more_body", False):
                    data += compressor.flush(zlib.Z_SYNC_FLUSH)
                else:
                    data += compressor.flush()
                message = {**message, "body": data}
            await send(message)

        await app(scope, receive, send_gzip)

    return wrapped


if __name__ == "__main__":
    build_server().run("stdio")
    sys.exit(0)
