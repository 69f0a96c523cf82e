"""Presets for agents that send tool results as user text (``text_results`` setting): a
user message starting with a preset's marker is one result, up to its end markers."""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["TEXT_RESULT_PRESETS", "TextResultPreset"]


class TextResultPreset(NamedTuple):
    """One agent's way of writing a tool result as user text."""

    name: str
    marker: str
    """A regular expression (dot matches all) matching the start of such a message; the
    result is the text after the match."""
    tool_name: str
    ends: tuple[str, ...] = ()
    """Texts the agent joins after a result in the same message: the result ends there."""
    after_assistant: bool = False
    """Only a message right after an assistant message (the tool call) can be a result."""

    def split(self, text: str) -> tuple[str, str, str] | None:
        """``(kept prefix, result, kept suffix)`` when ``text`` is such a message, else None."""
        match = re.match(self.marker, text, re.DOTALL)
        if match is None:
            return None
        start = match.end()
        end = len(text)
        for marker in self.ends:
            found = text.find(marker, start)
            if found != -1 and found < end:
                end = found
        return text[:start], text[start:end], text[end:]


# What smolagents 1.x joins after an observation: the next task (``TaskStep``), the final
# answer prompt (``final_answer.post_messages``), a planning step's follow-up.
SMOLAGENTS_ENDS = (
    "\nNew task:\n",
    "\nBased on the above, please provide an answer to the following user task:",
    "\nNow proceed and carry out this plan.",
)

TEXT_RESULT_PRESETS: dict[str, TextResultPreset] = {
    preset.name: preset
    for preset in (
        TextResultPreset(
            "smolagents",
            r"Observation:[ \t]*\n?",
            "observation",
            ends=SMOLAGENTS_ENDS,
            after_assistant=True,
        ),
        TextResultPreset("react", r"Observation:[ \t]*\n?", "observation", after_assistant=True),
        # aider's /run and /test output (prompts.run_output).
        TextResultPreset(
            "aider",
            r"I ran this command:\n\n.*?\n\nAnd got this output:\n\n",
            "run",
        ),
    )
}
