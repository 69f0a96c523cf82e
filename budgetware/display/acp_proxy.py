"""The ACP stdio proxy's streams (``budgetware acp-proxy``): editor stdin passed through,
each agent stdout line that is a ``tool_call_update`` projected in place (every other byte
kept), every other line forwarded byte for byte."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from typing import IO, Any

from budgetware.core.errors import fail_open
from budgetware.core.jsonio import dumps_faithful, loads_exact
from budgetware.diagnostics import events as diagnostics
from budgetware.display.projection import FIELD_BUDGET, project_acp_frame
from budgetware.wire.splice import patch_json

__all__ = ["CHUNK", "pump_stdin", "pump_stdout", "rewrite_line"]

CHUNK = 64 * 1024
# Cheap byte tests before parsing: only these lines can need a rewrite.
_NEEDLES = (b"session/update", b"tool_call_update")


def rewrite_line(line: bytes, budget: int = FIELD_BUDGET) -> bytes:
    """The bytes to send the editor for one line of agent stdout: the line itself when
    nothing changes, else the line with the projected fields spliced in."""
    return _rewrite(line, budget)[0]


def _rewrite(line: bytes, budget: int) -> tuple[bytes, dict[str, Any] | None]:
    """``rewrite_line``'s bytes and the frame they carry (None: not a tool update)."""
    if not all(needle in line for needle in _NEEDLES):
        return line, None
    body = line.rstrip(b"\r\n")
    try:
        frame = loads_exact(body)
    except (ValueError, RecursionError):
        return line, None  # not JSON (or nested beyond the parser): not ours to touch
    if not isinstance(frame, dict):
        return line, None
    projected = project_acp_frame(frame, budget)
    if diagnostics.enabled:
        diagnostics.display_pair("acp", frame, projected)
    if projected is frame:
        return line, frame
    # Splice, so number spellings stay (orjson would write NaN, Infinity and 1e400 as null).
    patched = patch_json(body, frame, projected)
    out = patched if patched is not None else dumps_faithful(projected)
    return out + line[len(body) :], projected


def pump_stdin(source_fd: int, child_stdin: IO[bytes]) -> None:
    """Copy the editor's input to the agent.

    Plain descriptors: this daemon thread may be blocked in a read at exit, holding no io lock.
    """
    target_fd = child_stdin.fileno()
    try:
        with contextlib.suppress(OSError):  # the agent is gone; its exit code tells
            while data := os.read(source_fd, CHUNK):
                view = memoryview(data)
                while view:
                    view = view[os.write(target_fd, view) :]
    finally:
        with contextlib.suppress(OSError):
            child_stdin.close()


def pump_stdout(chunks: Iterable[bytes], sink: IO[bytes], budget: int) -> None:
    """Write each line of the agent's stdout (``chunks`` as read, of any size) to ``sink``,
    projected; a last line with no newline is written as it is when ``chunks`` end."""
    sink_open = True
    pending: list[bytes] = []  # the start of a line that has no newline yet
    for chunk in chunks:
        start = 0
        while end := chunk.find(b"\n", start) + 1:
            line = chunk[start:end]
            if pending:
                pending.append(line)
                line = b"".join(pending)
                pending.clear()
            # Once the sink is gone, keep draining so that the agent never blocks on a pipe.
            sink_open = sink_open and _forward(line, sink, budget)
            start = end
        if start < len(chunk):
            pending.append(chunk[start:])
    if pending and sink_open:
        _forward(b"".join(pending), sink, budget)


def _forward(line: bytes, sink: IO[bytes], budget: int) -> bool:
    """Write one line to the editor; False when the sink is gone."""
    try:
        out, frame = _rewrite(line, budget)
    except Exception:
        fail_open("project an ACP frame")
        out, frame = line, None
    try:
        sink.write(out)
        sink.flush()
        if frame is not None and diagnostics.enabled:
            diagnostics.display_wire("acp", frame, out)
    except (BrokenPipeError, ValueError, OSError):
        return False
    return True
