"""Headless output writer: stream-json or JSON messages with tool results bounded for display."""

from __future__ import annotations

import io
from typing import IO, Any, Literal, cast

from budgetware.core.jsonio import dumps_faithful
from budgetware.diagnostics import events as diagnostics
from budgetware.display.projection import FIELD_BUDGET, project_headless_message

__all__ = ["HeadlessMode", "HeadlessWriter"]

HeadlessMode = Literal["stream-json", "json"]


class HeadlessWriter:
    """Write the messages of a non-interactive agent run, projecting tool results on the way.

    ``stream-json``: one compact JSON message per line, flushed as it goes; ``json``: one
    array, written incrementally and closed by :meth:`close`. ``stream`` may be binary or
    text. Messages passed in are never modified.
    """

    def __init__(
        self,
        stream: IO[bytes] | IO[str],
        mode: HeadlessMode = "stream-json",
        *,
        budget: int = FIELD_BUDGET,
    ) -> None:
        if mode not in ("stream-json", "json"):
            raise ValueError(f"mode must be 'stream-json' or 'json', not {mode!r}")
        self._stream = stream
        self._text = isinstance(stream, io.TextIOBase)
        self._mode = mode
        self._budget = budget
        self._count = 0
        self._closed = False

    def write(self, message: dict[str, Any]) -> None:
        """Project one message and write it as compact JSON; other values as ``json.dumps``
        writes them (big integers exact, ``NaN`` and ``Infinity`` kept)."""
        if self._closed:
            raise ValueError("write to a closed HeadlessWriter")
        projected = project_headless_message(message, self._budget)
        if diagnostics.enabled:
            diagnostics.display_pair("headless", message, projected)
        data = dumps_faithful(projected)
        if self._mode == "stream-json":
            data += b"\n"
        else:
            data = (b"[" if self._count == 0 else b",") + data
        self._emit(data)
        if diagnostics.enabled:
            diagnostics.display_wire("headless", projected, data)
        self._count += 1

    def close(self) -> None:
        """Finish the output (the closing bracket in ``json`` mode); the stream stays open."""
        if self._closed:
            return
        self._closed = True
        if self._mode == "json":
            self._emit(b"[]\n" if self._count == 0 else b"]\n")

    def __enter__(self) -> HeadlessWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _emit(self, data: bytes) -> None:
        if self._text:
            cast("IO[str]", self._stream).write(data.decode("utf-8"))
        else:
            cast("IO[bytes]", self._stream).write(data)
        self._stream.flush()
