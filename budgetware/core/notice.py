"""The words of every preview, in one place: notice lines, markers, and how references read.

A preview talks to the model in a few fixed phrases. They all come from one `Wording`, so a
new way of naming where the full output is (a retrieval tool, say) is a change to
`Wording.references` and reaches every form at once: the full notice, the compact notice of
small rooms and the JSON notice. Every phrase is one line, deterministic, and ASCII, so it
measures the same in every unit but tokens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "DEFAULT_WORDING",
    "MASKED_PREFIX",
    "PREVIEW_PHRASES",
    "TOOL_HINT",
    "TOOL_HINT_WORDING",
    "Wording",
    "is_masked",
    "may_be_preview",
    "unit_word",
]

_UNIT_WORD = {"chars": "chars", "utf8_bytes": "bytes"}
_UNIT_ONE = {"chars": "char", "utf8_bytes": "byte"}


def unit_word(unit: str, count: int = 2) -> str:
    """How a unit reads in a notice after ``count``: ``chars``, ``bytes``, or ``tokens``
    (estimated or exact); ``char``, ``byte``, ``token`` after 1."""
    if count == 1:
        return _UNIT_ONE.get(unit, "token")
    return _UNIT_WORD.get(unit, "tokens")


@dataclass(frozen=True)
class Wording:
    """Every phrase a preview uses. Subclass or extend here; nowhere else writes them.

    ``tool_hint`` (``preview_tool_hint``, docs/retrieval.md) names the read_tool_output
    tool after the references, in every notice form; nothing changes with no reference.
    """

    tool_hint: bool = False

    def references(self, refs: Sequence[str]) -> str:
        """The clause naming where the full output is (empty when nothing is named)."""
        if not refs:
            return ""
        return " Full output: " + ", ".join(refs) + (TOOL_HINT if self.tool_hint else "")

    def notice(self, total: int, omitted: int, unit: str, refs: Sequence[str]) -> str:
        """The first line of a preview: original size, amount omitted, where the rest is."""
        return (
            f"[Tool output truncated: {total:,} {unit_word(unit, total)}, {omitted:,} omitted."
            f"{self.references(refs)}]"
        )

    def compact_notice(self, total: int, omitted: int, unit: str, refs: Sequence[str]) -> str:
        """The first line of a preview in a small room: the same facts in fewer characters."""
        return (
            f"[{omitted:,} of {total:,} {unit_word(unit, total)} omitted.{self.references(refs)}]"
        )

    def json_notice(self, total: int, unit: str, refs: Sequence[str]) -> str:
        """The first line of a JSON preview: the JSON that follows is valid and shortened."""
        return (
            f"[Tool output truncated: {total:,} {unit_word(unit, total)} of JSON, shortened to "
            f"valid JSON below.{self.references(refs)}]"
        )

    def compact_json_notice(self, total: int, unit: str, refs: Sequence[str]) -> str:
        """The first line of a JSON preview in a small room."""
        return f"[JSON of {total:,} {unit_word(unit, total)}, shortened.{self.references(refs)}]"

    def marker(self, omitted: int, unit: str) -> str:
        """Between the head and the tail: how much of the middle is omitted."""
        return f"\n[... {omitted:,} {unit_word(unit, omitted)} omitted ...]\n"

    def salient_marker(self, omitted: int, unit: str, shown: int) -> str:
        """Between the head and the salient lines picked from the omitted middle."""
        lines, follow = ("line", "follows") if shown == 1 else ("lines", "follow")
        return (
            f"\n[... {omitted:,} {unit_word(unit, omitted)} omitted; {shown} matching {lines} "
            f"from it {follow}, with line numbers ...]\n"
        )

    def salient_line(self, number: int, line: str) -> str:
        """One salient line from the omitted middle, with its 1-based line number."""
        return f"{number}: {line}\n"

    def salient_end(self) -> str:
        """After the salient lines, before the tail."""
        return "[...]\n"

    def line_cut(self) -> str:
        """Appended to a salient line cut to its share of the room."""
        return " [...]"

    def compact_marker(self) -> str:
        """Between the head and the tail of a compact preview (the notice gave the numbers)."""
        return "\n[...]\n"

    def minimal(self) -> str:
        """All there is room for before the tail when even a compact notice does not fit."""
        return "[...]"

    def digest(self, digest: str) -> str:
        """After the notice of a preview that names no reference: a short digest of the
        output, so that distinct outputs never read the same."""
        return f" #{digest}"

    def minimal_digest(self, digest: str) -> str:
        """The minimal form's mark with the output's short digest, where the room holds it."""
        return f"[... #{digest}]"

    def json_items_omitted(self, count: int) -> str:
        """The marker element standing for the omitted elements of a long array."""
        return f"... {count:,} items omitted ..."

    def json_keys_omitted(self, count: int) -> str:
        """The marker value standing for the omitted members of a large object."""
        return f"... {count:,} more keys omitted ..."

    def json_string_cut(self, omitted: int) -> str:
        """Between the head and the tail of a long string value."""
        return f" [... {omitted:,} chars omitted ...] "

    def json_summary(self, kind: str, size: int) -> str:
        """A value nested too deep for the room: what it was."""
        if kind == "object":
            return f"{{... object with {size:,} keys ...}}"
        return f"[... array of {size:,} items ...]"

    def masked(self, size: int, unit: str, chars: int, refs: Sequence[str]) -> str:
        """The one line an older tool result becomes when the request is over its history
        budget (``history_budget``): its size, and where its full output is."""
        amount = f"{size:,} {unit_word(unit, size)}"
        if unit != "chars":
            amount += f" ({chars:,} {unit_word('chars', chars)})"
        where = self.references(refs) if refs else " The full output is not stored."
        return f"{MASKED_PREFIX}{amount}.{where}]"


# After the references, when the agent has the read_tool_output tool: one fixed phrase,
# so the same batch still gives the same bytes.
TOOL_HINT = "; read_tool_output can page or search it"
DEFAULT_WORDING = Wording()
TOOL_HINT_WORDING = Wording(tool_hint=True)


# What every preview of the wordings above carries (``core/fit.py``'s forms): the full
# and JSON notices open with "[Tool output truncated: ", the compact JSON notice with
# "[JSON of "; the text forms have a "[..." marker, the minimal form is "[...", its digest
# and the tail. tests/store/test_preview_decisions.py holds every form to it.
PREVIEW_PHRASES = ("[Tool output truncated: ", "[JSON of ", "[...")

# How every masked result begins (``Wording.masked``).
MASKED_PREFIX = "[Earlier tool output masked (history budget): "
_MASKED = re.compile(
    re.escape(MASKED_PREFIX) + r"[0-9,]+ [a-z]+(?: \([0-9,]+ chars?\))?\. [^\n]*\]"
)


def is_masked(slots: Sequence[str]) -> bool:
    """Whether a result's slots are a masked result's: one stub line, the others empty."""
    return bool(slots) and _MASKED.fullmatch(slots[0]) is not None and not any(slots[1:])


_MINIMAL = DEFAULT_WORDING.minimal()
# One search finds any of them: they share the "[" the engine looks for first.
_ANY_PHRASE = re.compile("|".join(map(re.escape, PREVIEW_PHRASES)))


def may_be_preview(text: str) -> bool:
    """Whether ``text`` may be, or hold, a preview: it carries one of ``PREVIEW_PHRASES``
    or is a start of the minimal form (``""``, ``"["``, ...).

    Only such texts can have a producer's decision recorded (the MCP boundary records
    none for others), so the finalizer looks a decision up only for them; a text that
    merely quotes a phrase costs a lookup, nothing else.
    """
    if len(text) < len(_MINIMAL):
        return _MINIMAL.startswith(text)
    return _ANY_PHRASE.search(text) is not None
