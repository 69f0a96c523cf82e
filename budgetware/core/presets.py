"""Presets for agents that send tool results as plain text in user messages.

smolagents sends a tool's result as a user message ``Observation:\\n<result>`` (its tool
calls as assistant text); aider sends a command's output as ``I ran this command: ...
And got this output: ...``; many ReAct agents do as smolagents does. Such results carry no
tool role, so no wire format sees them. With a preset on (the ``text_results`` setting),
a user message whose text starts with the preset's marker is one tool result: the text
after the marker is what may be cut (the marker stays), and each such message is a batch
of its own. No other user message is ever touched.

Pure data: ``wire/text_results.py`` finds the messages.
"""

from __future__ import annotations

import re

__all__ = ["TEXT_RESULT_PRESETS", "TextResultPreset"]


class TextResultPreset:
    """One agent's way of writing a tool result as user text."""

    def __init__(self, name: str, marker: str, tool_name: str) -> None:
        self.name = name
        self.marker = re.compile(marker, re.DOTALL)
        """Matches the start of such a message; the result is the text after the match."""
        self.tool_name = tool_name

    def split(self, text: str) -> tuple[str, str] | None:
        """``(kept prefix, result)`` when ``text`` is such a message, else None."""
        match = self.marker.match(text)
        if match is None:
            return None
        return text[: match.end()], text[match.end() :]


TEXT_RESULT_PRESETS: dict[str, TextResultPreset] = {
    preset.name: preset
    for preset in (
        # smolagents (ToolCallingAgent, CodeAgent): "Observation:\n<result>".
        TextResultPreset("smolagents", r"Observation:[ \t]*\n?", "observation"),
        # The ReAct convention smolagents follows, for other ReAct agents.
        TextResultPreset("react", r"Observation:[ \t]*\n?", "observation"),
        # aider's /run and /test output: its prompts.run_output.
        TextResultPreset(
            "aider",
            r"I ran this command:\n\n.*?\n\nAnd got this output:\n\n",
            "run",
        ),
    )
}
