"""The provider-neutral tool result that every layer hands to the core."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ToolResult"]


@dataclass(frozen=True)
class ToolResult:
    """One tool result of a batch, as the core sees it.

    ``slots``: the model-facing texts that may be shortened; ``parts``: everything else
    (media, structured values), never counted or changed. ``persisted_output_files``:
    ``None`` undecided (the finalizer may persist), ``()`` decided with no artifact,
    ``(ref, ...)`` already persisted (name these, never persist again).
    """

    call_id: str | None
    tool_name: str | None
    slots: tuple[str, ...]
    parts: tuple[object, ...] = ()
    persisted_output_files: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        slots: object = self.slots
        if not isinstance(slots, tuple):
            object.__setattr__(self, "slots", tuple(_as_seq(slots)))
        parts: object = self.parts
        if not isinstance(parts, tuple):
            object.__setattr__(self, "parts", tuple(_as_seq(parts)))
        files: object = self.persisted_output_files
        if files is not None and not isinstance(files, tuple):
            object.__setattr__(self, "persisted_output_files", tuple(_as_seq(files)))
        for slot in self.slots:
            if not isinstance(slot, str):
                raise TypeError(f"tool result slots must be str, not {type(slot).__name__}")

    @property
    def full_text(self) -> str:
        """The whole model-facing text: the slots joined by a blank line."""
        return "\n\n".join(self.slots)


def _as_seq(value: object) -> Sequence[object]:
    if isinstance(value, (str, bytes)):
        raise TypeError("expected a sequence of values, not a single string")
    if not isinstance(value, Sequence):
        raise TypeError(f"expected a sequence, not {type(value).__name__}")
    return value
