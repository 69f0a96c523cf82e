"""Fitting one slot of text into its allocation: a truthful notice, the head and the tail."""

from __future__ import annotations

from collections.abc import Sequence

from budgetware.core.measure import Unit, cut_prefix, cut_suffix, measure

__all__ = ["HEAD_SHARE_PERCENT", "fit_text"]

# The tail gets four fifths of the room: errors, exit codes and summaries come last.
HEAD_SHARE_PERCENT = 20
_UNIT_WORD = {"chars": "chars", "utf8_bytes": "bytes", "tokens": "tokens"}


def _notice(total: int, omitted: int, unit: Unit, refs: Sequence[str]) -> str:
    word = _UNIT_WORD[unit]
    text = f"[Tool output truncated: {total:,} {word}, {omitted:,} omitted."
    if refs:
        text += " Full output: " + ", ".join(refs)
    return text + "]"


def _marker(omitted: int, unit: Unit) -> str:
    return f"\n[... {omitted:,} {_UNIT_WORD[unit]} omitted ...]\n"


def fit_text(text: str, allocation: int, *, refs: Sequence[str] = (), unit: Unit = "chars") -> str:
    """``text`` itself when it fits ``allocation``, else a preview that never exceeds it.

    The preview is a one-line notice (original size, amount omitted, the references when
    they fit whole), a blank line, the first fifth of the room, a marker naming what was
    omitted, and the last four fifths. The same input always gives the same preview.
    """
    if allocation < 0:
        raise ValueError("allocation must not be negative")
    total = measure(text, unit)
    if total <= allocation:
        return text
    # Try the notice with its references, then without; never cut a reference in half.
    for names in ((tuple(refs),) if refs else ()) + ((),):
        preview = _layout(text, total, allocation, names, unit)
        if preview is not None:
            return preview
    # Not even the bare notice fits with a marker: the (cut) notice is all there is room for.
    return cut_prefix(_notice(total, total, unit, ()), allocation, unit)


def _layout(text: str, total: int, allocation: int, refs: Sequence[str], unit: Unit) -> str | None:
    # The notice and marker print the omitted amount, which depends on how much room they
    # leave: iterate from a lower bound. Their size only grows with it, so this settles in
    # a few steps at the layout whose printed numbers are exact.
    omitted = max(total - allocation, 0)
    for _ in range(16):
        notice = _notice(total, omitted, unit, refs)
        marker = _marker(omitted, unit)
        fixed = measure(notice, unit) + 2 + measure(marker, unit)
        room = allocation - fixed
        if room < 0:
            return None
        head_room = room * HEAD_SHARE_PERCENT // 100
        head = cut_prefix(text, head_room, unit)
        tail = cut_suffix(text, room - head_room, unit)
        kept = measure(head, unit) + measure(tail, unit)
        actual = total - kept
        if actual == omitted:
            return f"{notice}\n\n{head}{marker}{tail}"
        omitted = actual
    return None  # pragma: no cover - the sizes settle long before
