"""The ACP stdio proxy's streams (``budgetware acp-proxy``): editor stdin passed through,
each agent stdout line that is a ``tool_call_update`` projected in place (every other byte
kept), every other line forwarded byte for byte."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import IO

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
    if not all(needle in line for needle in _NEEDLES):
        return line
    body = line.rstrip(b"\r\n")
    ending = line[len(body) :]
    try:
        frame = loads_exact(body)
    except (ValueError, RecursionError):
        return line  # not JSON (or nested beyond the parser): not ours to touch
    if not isinstance(frame, dict):
        return line
    projected = project_acp_frame(frame, budget)
    if diagnostics.enabled:
        diagnostics.display_pair("acp", frame, projected)
    if projected is frame:
        return line
    # Splice, so number spellings stay (orjson would write NaN, Infinity and 1e400 as null).
    patched = patch_json(body, frame, projected)
    return (patched if patched is not None else dumps_faithful(projected)) + ending


def pump_stdin(source_fd: int, child_stdin: IO[bytes]) -> None:
    """Copy the editor's input to the agent.

    Plain descriptors: this daemon thread may be blocked in a read at exit, holding no io lock.
    """
    target_fd = child_stdin.fileno()
    try:
        while True:
            data = os.read(source_fd, CHUNK)
            if not data:
                break
            view = memoryview(data)
            while view:
                view = view[os.write(target_fd, view) :]
    except OSError:
        pass  # the agent is gone; its exit code tells
    finally:
        try:
            child_stdin.close()
        except OSError:
            pass


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
        out = rewrite_line(line, budget)
    except Exception:
        fail_open("project an ACP frame")
        out = line
    try:
        sink.write(out)
        sink.flush()
        if diagnostics.enabled:
            diagnostics.display_wire_bytes("acp", out)
    except (BrokenPipeError, ValueError, OSError):
        return False
    return True
