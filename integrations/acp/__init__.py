"""ACP integration: every outgoing ``session/update`` is projected before it reaches the editor.

``acp`` (the agent-client-protocol package) is imported only when a helper needs it.
"""

from __future__ import annotations

import asyncio
import logging
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from budgetware.core.errors import fail_open
from budgetware.core.jsonio import dumps_faithful, loads_exact
from budgetware.diagnostics import events as diagnostics
from budgetware.display.projection import FIELD_BUDGET, project_acp_frame

if TYPE_CHECKING:
    from acp.interfaces import Agent

__all__ = [
    "NdjsonStreamTransport",
    "ProjectingTransport",
    "TransportLike",
    "run_agent",
    "stdio_transport",
]

logger = logging.getLogger("budgetware.acp")

# The same default as acp.run_agent: large enough for multimodal frames.
DEFAULT_READ_LIMIT = 50 * 1024 * 1024


@runtime_checkable
class TransportLike(Protocol):
    """The message-level seam of ``acp`` (``acp._transport.Transport``), structurally."""

    async def send(self, message: dict[str, Any]) -> None: ...

    async def receive(self) -> dict[str, Any] | None: ...

    async def close(self) -> None: ...


def _require_acp() -> ModuleType:
    try:
        import acp
    except ImportError as exc:  # pragma: no cover - acp is installed in development
        raise ImportError(
            "budgetware.integrations.acp needs the agent-client-protocol package: "
            'pip install "budgetware[acp]"'
        ) from exc
    return acp


class ProjectingTransport:
    """Wrap any ``acp`` Transport so that every outgoing ``session/update`` is projected.

    Only ``tool_call_update`` text (``content`` and string ``rawOutput``) is bounded, to
    ``budget`` JSON bytes per field; every other frame is passed on as the same object. The
    agent's own objects are never modified: a projected frame is a new, shallow copy.
    Incoming messages and ``close`` are delegated unchanged.
    """

    def __init__(self, inner: TransportLike, *, budget: int = FIELD_BUDGET) -> None:
        self.inner = inner
        self._budget = budget

    def project(self, message: dict[str, Any]) -> dict[str, Any]:
        """The frame that goes on the wire for ``message``: the projection boundary."""
        return project_acp_frame(message, self._budget)

    async def send(self, message: dict[str, Any]) -> None:
        try:
            projected = self.project(message)
        except Exception:
            # Fail open: a bug in the projection must never cost the editor a frame.
            fail_open("project an ACP frame")
            projected = message
        if diagnostics.enabled:
            diagnostics.display_pair("acp", message, projected)
        await self.inner.send(projected)

    async def receive(self) -> dict[str, Any] | None:
        return await self.inner.receive()

    async def close(self) -> None:
        await self.inner.close()


class NdjsonStreamTransport:
    """Newline-delimited JSON over asyncio streams, written as compact UTF-8: exactly what the
    projection measured (``acp``'s ASCII escaping would grow a frame up to threefold), and
    read in lines of any length."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        # One frame at a time: concurrent sends must not interleave or share a drain.
        self._lock = asyncio.Lock()
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("Transport closed")
        data = dumps_faithful(message) + b"\n"
        async with self._lock:
            self._writer.write(data)
            await self._writer.drain()
        if diagnostics.enabled:
            diagnostics.display_wire("acp", message, data)

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if not line:
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = loads_exact(line)
            except ValueError:
                logger.warning("dropping a line that is not JSON (%d bytes)", len(line))
                continue
            if isinstance(message, dict):
                return message
            logger.warning("dropping a JSON line that is not an object")

    async def close(self) -> None:
        # The stream stays open, as with acp's own sender: it usually is stdout.
        self._closed = True

    async def _read_line(self) -> bytes:
        chunks: list[bytes] = []
        try:
            while True:
                try:
                    chunks.append(await self._reader.readuntil(b"\n"))
                    return b"".join(chunks)
                except asyncio.LimitOverrunError as exc:
                    # Longer than the reader's buffer: take what is buffered and go on.
                    chunks.append(await self._reader.readexactly(exc.consumed))
        except asyncio.IncompleteReadError as exc:
            chunks.append(exc.partial)
            return b"".join(chunks)


async def stdio_transport(
    *, budget: int = FIELD_BUDGET, limit: int = DEFAULT_READ_LIMIT
) -> ProjectingTransport:
    """A projecting transport over this process's stdin and stdout, for ``acp.run_agent``."""
    acp = _require_acp()
    reader, writer = await acp.stdio_streams(limit=limit)
    return ProjectingTransport(NdjsonStreamTransport(reader, writer), budget=budget)


async def run_agent(
    agent: Agent, *, budget: int = FIELD_BUDGET, limit: int = DEFAULT_READ_LIMIT, **kwargs: Any
) -> None:
    """``acp.run_agent`` over stdio, with tool output bounded: a drop-in replacement."""
    acp = _require_acp()
    transport = await stdio_transport(budget=budget, limit=limit)
    await acp.run_agent(agent, transport, **kwargs)
