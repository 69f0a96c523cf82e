"""Presets for agents that send tool results as plain text in user messages.

smolagents sends a tool's result as a user message ``Observation:\\n<result>`` (its tool
calls as assistant text); aider sends a command's output as ``I ran this command: ...
And got this output: ...``; many ReAct agents do as smolagents does. Such results carry no
tool role, so no wire format sees them. With a preset on (the ``text_results`` setting),
a user message whose text starts with the preset's marker is one tool result: the text
after the marker is what may be cut (the marker stays), up to the first text the agent
writes after a result in the same message (smolagents joins consecutive user messages: the
next task, its final-answer prompt), and each such message is a batch of its own. No other
user message, and no other text of that one, is ever touched.

Pure data: ``wire/text_results.py`` finds the messages.
"""

from __future__ import annotations

import re

__all__ = ["TEXT_RESULT_PRESETS", "TextResultPreset"]


class TextResultPreset:
    """One agent's way of writing a tool result as user text."""

    def __init__(
        self,
        name: str,
        marker: str,
        tool_name: str,
        *,
        ends: tuple[str, ...] = (),
        after_assistant: bool = False,
    ) -> None:
        self.name = name
        self.marker = re.compile(marker, re.DOTALL)
        """Matches the start of such a message; the result is the text after the match."""
        self.tool_name = tool_name
        self.ends = ends
        """Texts the agent writes after a result in the same message (it joins consecutive
        messages of one role): the result ends at the first of them, and what follows (the
        user's next task, the agent's own prompt) is never cut."""
        self.after_assistant = after_assistant
        """Only a message right after an assistant message can be a result (the agent's tool
        call): a user's own first message that starts like one is left alone."""

    def split(self, text: str) -> tuple[str, str, str] | None:
        """``(kept prefix, result, kept suffix)`` when ``text`` is such a message, else None."""
        match = self.marker.match(text)
        if match is None:
            return None
        start = match.end()
        end = len(text)
        for marker in self.ends:
            found = text.find(marker, start)
            if found != -1 and found < end:
                end = found
        return text[:start], text[start:end], text[end:]


# What smolagents (1.x) writes after an observation in the same user message, since
# ``get_clean_message_list`` joins consecutive messages of one role with "\n": the next
# task of ``agent.run(task, reset=False)`` (``TaskStep``: "New task:\n<task>"), the final
# answer prompt once ``max_steps`` is reached (``final_answer.post_messages``), and a
# planning step's follow-up (``PlanningStep``).
SMOLAGENTS_ENDS = (
    "\nNew task:\n",
    "\nBased on the above, please provide an answer to the following user task:",
    "\nNow proceed and carry out this plan.",
)

TEXT_RESULT_PRESETS: dict[str, TextResultPreset] = {
    preset.name: preset
    for preset in (
        # smolagents (ToolCallingAgent, CodeAgent): "Observation:\n<result>", after the
        # assistant's "Calling tools: [...]".
        TextResultPreset(
            "smolagents",
            r"Observation:[ \t]*\n?",
            "observation",
            ends=SMOLAGENTS_ENDS,
            after_assistant=True,
        ),
        # The ReAct convention smolagents follows, for other ReAct agents.
        TextResultPreset("react", r"Observation:[ \t]*\n?", "observation", after_assistant=True),
        # aider's /run and /test output: its prompts.run_output.
        TextResultPreset(
            "aider",
            r"I ran this command:\n\n.*?\n\nAnd got this output:\n\n",
            "run",
        ),
    )
}
