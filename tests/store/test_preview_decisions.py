"""Which texts can carry a producer's decision: the contract that lets the finalizer skip
the decision lookup (a round trip on S3) for every other text.

Every preview budgetware makes carries one of ``core/notice.PREVIEW_PHRASES`` (or is a
start of the minimal form), and the MCP boundary records decisions only for such texts;
a shape it records is found downstream whichever way an agent hands it to the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetware import BudgetConfig
from budgetware.core.artifacts import text_key
from budgetware.core.finalize import preview_options
from budgetware.core.fit import DEFAULT_PREVIEW, PreviewOptions, fit_text
from budgetware.core.jsonio import dumps_bytes
from budgetware.core.notice import DEFAULT_WORDING, PREVIEW_PHRASES, may_be_preview
from budgetware.finalizer import LocalArtifactStore, ToolResult, finalize_batch
from budgetware.mcp.bound import bound_tool_result

# The file APIs of the local store do not matter here: run each test once.
TOUCHES_NO_FILES = True

REF = "/tmp/budgetware-artifacts/" + "ab" * 32 + ".txt"
LOG = "".join(
    f"line {i}: " + ("error: disk quota exceeded\n" if i % 97 == 0 else "all well so far\n")
    for i in range(2000)
)
TEXTS = {
    "plain": "x" * 20_000,
    "log": LOG,
    "unicode": "汉字 and émoji 🎉 " * 1500,
    "json object": json.dumps({"rows": [{"id": i, "name": f"n{i}"} for i in range(800)]}),
    "json array": json.dumps([f"item {i}" for i in range(2000)]),
}
OPTIONS = {
    "default": DEFAULT_PREVIEW,
    "tool hint": preview_options(BudgetConfig(preview_tool_hint=True)),
    "no salient": PreviewOptions(salient_percent=0),
}
ROOMS = [*range(64), *range(64, 400, 7), *range(400, 6000, 211)]


@pytest.mark.parametrize("unit", ["chars", "utf8_bytes", "tokens"])
@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_every_preview_form_is_recognised(unit: Any, options: PreviewOptions) -> None:
    openings: set[str] = set()
    for text in TEXTS.values():
        for room in ROOMS:
            for refs in ((), (REF,)):
                preview = fit_text(text, room, refs=refs, unit=unit, options=options)
                if preview == text:
                    continue  # it fits (a room in tokens holds more)
                assert may_be_preview(preview), (room, refs, preview[:80])
                openings.add(_form(preview))
    # Every form was met (so the test holds each of them to the contract).
    expected = {"notice", "compact", "minimal", "tiny", "json notice", "compact json"}
    assert expected <= openings, openings


def _form(preview: str) -> str:
    if len(preview) < len(DEFAULT_WORDING.minimal()):
        return "tiny"
    if preview.startswith("[Tool output truncated: ") and " of JSON, " in preview.split("\n")[0]:
        return "json notice"
    if preview.startswith("[Tool output truncated: "):
        return "notice"
    if preview.startswith("[JSON of "):
        return "compact json"
    if preview.startswith("[...]"):
        return "minimal"
    return "compact"


@settings(max_examples=75, deadline=None)
@given(
    text=st.text(min_size=1, max_size=3000),
    room=st.integers(min_value=0, max_value=3500),
    unit=st.sampled_from(["chars", "utf8_bytes", "tokens"]),
    json_text=st.booleans(),
)
def test_any_text_cut_to_any_room_is_recognised(
    text: str, room: int, unit: Any, json_text: bool
) -> None:
    if json_text:
        text = json.dumps({"v": text, "w": [text[:50]] * 20})
    preview = fit_text(text, room, refs=(REF,), unit=unit)
    if preview != text:
        assert may_be_preview(preview)
        if len(preview) >= len(DEFAULT_WORDING.minimal()):
            # And wherever it lands: inside JSON (structured content), joined with others.
            assert may_be_preview(json.dumps(preview))
            assert may_be_preview(json.dumps({"k": preview}, ensure_ascii=False))
            assert may_be_preview("before" + preview + "after")


def test_plain_outputs_are_not_previews() -> None:
    for text in [*TEXTS.values(), "", "[INFO] started\n" * 100, "[1, 2, 3]", "see [..]"]:
        if text and text != "":
            assert not may_be_preview(text), text[:40]
    # Quoting a phrase is a false positive: it costs a decision lookup, nothing else.
    assert may_be_preview("the docs say [...] here")
    assert all(may_be_preview(phrase) for phrase in PREVIEW_PHRASES)


class RecordingStore(LocalArtifactStore):
    """A local store that remembers the key of every decision recorded in it."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.recorded: list[str] = []

    def record_decision(self, key: str, refs: tuple[str, ...]) -> None:
        self.recorded.append(key)
        super().record_decision(key, refs)


def _shapes(result: dict[str, Any]) -> list[str]:
    """Every way an agent hands a tools/call result to the model (as the boundary's
    ``_record`` lists them): each text block, the blocks joined, the structured JSON."""
    texts = [b["text"] for b in result.get("content", []) if isinstance(b, dict) and "text" in b]
    shapes = list(texts)
    if len(texts) > 1:
        shapes += ["\n\n".join(texts), "\n".join(texts), "".join(texts)]
    structured = result.get("structuredContent")
    if structured is not None:
        shapes += [
            dumps_bytes(structured).decode(),
            json.dumps(structured, ensure_ascii=False),
            json.dumps(structured),
        ]
    structured_strings = _strings(structured) if structured is not None else []
    return shapes + structured_strings


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for item in items for s in _strings(item)]


LONG = "m" * 30_000
OTHER = "o" * 20_000
ROWS = {"rows": [f"row {i:05d}" for i in range(3000)]}  # short strings: not slots
RESULTS = {
    "one text block": {"content": [{"type": "text", "text": LONG}]},
    "blocks, one long": {
        "content": [
            {"type": "text", "text": "intro"},
            {"type": "text", "text": LONG},
            {"type": "text", "text": "outro"},
        ]
    },
    "blocks, two long": {
        "content": [{"type": "text", "text": LONG}, {"type": "text", "text": OTHER}]
    },
    "json text block": {"content": [{"type": "text", "text": json.dumps(ROWS)}]},
    "structured only": {"content": [], "structuredContent": {"log": LONG, "ok": True}},
    "text and structured repeating it": {
        "content": [{"type": "text", "text": LONG}],
        "structuredContent": {"result": LONG},
    },
    "long text, structured of short strings": {
        "content": [{"type": "text", "text": LONG}],
        "structuredContent": ROWS,
    },
    "short blocks, long structured string": {
        "content": [{"type": "text", "text": "a" * 40}, {"type": "text", "text": "b" * 40}],
        "structuredContent": {"log": LONG},
    },
}
# Budgets from roomy to a few characters a cut slot (the minimal form, "[...]" and the
# tail), in chars and in bytes; with and without the read_tool_output hint.
BOUNDS = [
    (5000, "chars", DEFAULT_PREVIEW),
    (600, "chars", OPTIONS["tool hint"]),
    (120, "utf8_bytes", DEFAULT_PREVIEW),
    (24, "chars", DEFAULT_PREVIEW),
]


@pytest.mark.parametrize("bound", BOUNDS, ids=[f"{b[0]} {b[1]}" for b in BOUNDS])
@pytest.mark.parametrize("result", RESULTS.values(), ids=RESULTS.keys())
def test_every_shape_the_mcp_boundary_decides_is_recognised_and_found(
    tmp_path: Path, result: dict[str, Any], bound: tuple[int, Any, PreviewOptions]
) -> None:
    budget, unit, options = bound
    store = RecordingStore(tmp_path / "store")
    outcome = bound_tool_result(result, budget=budget, store=store, unit=unit, options=options)
    assert outcome.refs
    before = set(_shapes(result))
    after = _shapes(outcome.result)
    # Each shape that holds a bounded text is recorded and recognised; one that the
    # boundary did not change (nothing of it was cut) is not the boundary's to decide.
    changed = [s for s in after if s not in before]
    assert changed
    for shape in changed:
        assert may_be_preview(shape), shape[:120]
        assert text_key(shape) in store.recorded, shape[:120]
    unchanged = {text_key(s) for s in after if s in before}
    assert not unchanged & set(store.recorded)
    # Downstream, in a process that has not seen any of it: the finalizer names the
    # boundary's artifacts for a shape it decided, and persists any other shape itself,
    # exactly as it reached the model (nothing lost).
    config = BudgetConfig(batch_budget=2000)
    for shape in dict.fromkeys(after):
        if len(shape) <= config.batch_budget:
            continue
        fresh = LocalArtifactStore(tmp_path / "store")
        (entry,) = finalize_batch([ToolResult("c", "t", (shape,))], config=config, store=fresh)
        if shape in changed:
            assert entry.persisted_output_files == outcome.refs, shape[:120]
        else:
            (ref,) = entry.persisted_output_files or ()
            assert Path(ref).read_text() == shape
