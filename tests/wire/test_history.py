"""The history budget on request bodies (wire/history.py): the bound in every wire format and
unit, the same prefix between steps, stubs that name a readable full output, ``auto``,
priorities, kept batches, provider-side editing, idempotence and the report."""

from __future__ import annotations

import importlib.util
import json
import logging
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from exact_tokens import needs_vocabulary

from budgetware.core.config import BudgetConfig
from budgetware.core.measure import Unit, measure
from budgetware.core.notice import MASKED_PREFIX, TOOL_HINT, is_masked
from budgetware.retrieval.read import read_artifact
from budgetware.tools import run_read_tool_output
from budgetware.wire import history as wire_history
from budgetware.wire.body import finalize_body, observed_finalize_body
from budgetware.wire.payload import bound_payload

from ._bodies import FORMAT_IDS, FORMATS, Fmt, get, openai_chat

# (unit, batch budget, history budget): two kept batches always fit a step's target.
UNITS: list[Any] = [
    ("chars", 6_000, 20_000),
    ("utf8_bytes", 7_000, 24_000),
    ("tokens", 1_800, 6_000),
    pytest.param("tokens:o200k_base", 1_800, 6_000, marks=needs_vocabulary),
]
UNIT_IDS = ["chars", "utf8_bytes", "tokens", "tokens:o200k_base"]
TURNS = 14
_WORDS = ("pass", "FAILED", "café", "données", "日本語", "🙂", "error:", "0x1f")


def output(turn: int, index: int, size: int) -> str:
    """A tool output of about ``size`` chars, unlike every other one, partly non-ASCII."""
    rng = random.Random(turn * 100 + index)
    lines = [f"$ run {turn}.{index}"]
    while sum(map(len, lines)) < size:
        lines.append(" ".join(rng.choice(_WORDS) for _ in range(8)) + f" {len(lines)}")
    return "\n".join(lines)[:size]


def conversation(turns: int = TURNS, seed: int = 7) -> list[list[str]]:
    rng = random.Random(seed)
    return [
        [output(t, i, rng.randint(300, 9_000)) for i in range(rng.randint(1, 3))]
        for t in range(turns)
    ]


def sent_slots(fmt: Fmt, body: bytes, paths: list[list[Any]]) -> list[list[str]]:
    decoded = json.loads(body)
    return [[get(decoded, path) for path in batch] for batch in paths]


def config_for(artifact_dir: Path, unit: Unit, batch: int, history: int | str, **more: Any) -> Any:
    return BudgetConfig(
        unit=unit,
        batch_budget=batch,
        history_budget=history,
        artifact_dir=artifact_dir,
        **more,
    )


@pytest.fixture
def artifact_dir(tmp_path: Path) -> Path:
    return tmp_path / "artifacts"


# --- the bound, the prefix, the stubs ---------------------------------------------------------


@pytest.mark.parametrize(("unit", "batch", "history"), UNITS, ids=UNIT_IDS)
@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_every_request_of_a_conversation_is_within_the_history_budget(
    fmt: Fmt, unit: Unit, batch: int, history: int, artifact_dir: Path
) -> None:
    batches = conversation()
    config = config_for(artifact_dir, unit, batch, history)
    previous: list[list[str]] = []
    steps = 0
    for n in range(1, TURNS + 1):
        body, paths = fmt.body(batches[:n])
        new, report = observed_finalize_body(fmt.url, body, config=config)
        slots = sent_slots(fmt, new, paths)
        total = sum(measure(text, unit) for batch_slots in slots for text in batch_slots)
        assert total <= history
        masked = [
            (b, i)
            for b, batch_slots in enumerate(slots)
            for i, text in enumerate(batch_slots)
            if is_masked((text,))
        ]
        # Only older batches are masked; the newest two are as the per-batch finalizer sent them.
        assert all(b < n - 2 for b, _ in masked)
        if report.history is not None:
            assert report.history.after == total
            assert report.history.masked == len(masked)
            assert report.history.budget == history
            steps += report.history.new_step
        # The results sent before are sent again unchanged, but at a step.
        same = slots[: len(previous)] == previous
        new_step = report.history is not None and report.history.new_step
        assert same != new_step
        previous = slots
    assert steps >= 2  # the conversation outgrew the budget more than once


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_a_stub_names_the_full_output_and_it_reads_back(fmt: Fmt, artifact_dir: Path) -> None:
    batches = conversation()
    config = config_for(artifact_dir, "chars", 6_000, 20_000, preview_tool_hint=True)
    body, paths = fmt.body(batches)
    new = finalize_body(fmt.url, body, config=config)
    read = 0
    for originals, texts in zip(batches, sent_slots(fmt, new, paths)):
        for original, text in zip(originals, texts):
            if not is_masked((text,)):
                continue
            assert "\n" not in text
            assert text.startswith(f"{MASKED_PREFIX}{len(original):,} chars. Full output: ")
            assert text.endswith(TOOL_HINT + "]")
            ref = text.split("Full output: ")[1].split(";")[0]
            # Whether the per-batch finalizer cut it (its preview's artifact) or not
            # (persisted now), the reference holds the output as the agent sent it.
            assert read_artifact(ref, limit=len(original) + 1, config=config) == original
            answer = run_read_tool_output({"ref": ref, "pattern": "run"}, config=config)
            assert answer.splitlines()[1].endswith(original.splitlines()[0])
            read += 1
    assert read >= 5


def test_media_parts_stay_and_only_text_is_masked(artifact_dir: Path) -> None:
    fmt = next(f for f in FORMATS if f.name == "anthropic")
    batches = [[output(t, i, 4_000) for i in range(2)] for t in range(6)]
    body, _ = fmt.body(batches)
    new = json.loads(
        finalize_body(fmt.url, body, config=config_for(artifact_dir, "chars", 0, 10_000))
    )
    original = json.loads(body)
    # The second result of each turn carries an image after its text: it stays.
    first_turn = new["messages"][2]["content"]
    assert is_masked((first_turn[0]["content"],))
    assert is_masked((first_turn[1]["content"][0]["text"],))
    assert first_turn[1]["content"][1] == original["messages"][2]["content"][1]["content"][1]
    assert first_turn[1]["is_error"] is True
    assert first_turn[1]["cache_control"] == {"type": "ephemeral"}


def test_a_result_of_several_slots_keeps_the_stub_in_its_first(artifact_dir: Path) -> None:
    url = "https://api.openai.com/v1/responses"
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for t in range(5):
        items.append({"type": "shell_call", "call_id": f"c{t}", "action": {"commands": ["ls"]}})
        items.append(
            {
                "type": "shell_call_output",
                "call_id": f"c{t}",
                "output": [
                    {"stdout": output(t, 0, 3_000), "stderr": output(t, 1, 1_000), "outcome": {}}
                ],
            }
        )
        items.append({"type": "message", "role": "assistant", "content": "ok"})
    body = json.dumps({"model": "gpt-5", "input": items}).encode()
    config = config_for(artifact_dir, "chars", 0, 9_000)
    new, report = observed_finalize_body(url, body, config=config)
    chunk = json.loads(new)["input"][2]["output"][0]
    full = output(0, 0, 3_000) + "\n\n" + output(0, 1, 1_000)
    assert chunk["stdout"].startswith(f"{MASKED_PREFIX}{len(full) - 2:,} chars. Full output: ")
    assert chunk["stderr"] == ""
    assert chunk["outcome"] == {}
    ref = chunk["stdout"].split("Full output: ")[1].rstrip("]")
    assert read_artifact(ref, limit=10_000, config=config) == full
    assert report.history is not None
    assert report.history.masked >= 1


# --- the rule's knobs -----------------------------------------------------------------------


def _masked_results(new: bytes, paths: Sequence[Sequence[Any]]) -> set[tuple[int, int]]:
    decoded = json.loads(new)
    return {
        (b, i)
        for b, batch in enumerate(paths)
        for i, path in enumerate(batch)
        if is_masked((get(decoded, path),))
    }


def test_keep_batches_and_step_and_priorities(artifact_dir: Path) -> None:
    fmt = FORMATS[0]  # openai_chat: tool_0, tool_1 in every turn
    batches = [[output(t, 0, 1_000), output(t, 1, 1_000)] for t in range(8)]
    body, paths = fmt.body(batches)

    def masked(**settings: Any) -> set[tuple[int, int]]:
        config = config_for(artifact_dir, "chars", 0, settings.pop("history", 10_000), **settings)
        return _masked_results(finalize_body(fmt.url, body, config=config), paths)

    # 16,000 chars over 10,000. Keep 2: up to 6 batches may be masked.
    default = masked()
    assert default
    assert all(b < 6 for b, _ in default)
    assert all(b < 3 for b, _ in masked(history_keep_batches=5))
    assert masked(history_keep_batches=8) == set()
    # A bigger step masks more at once, so the conversation takes fewer steps.

    def steps(step: float) -> int:
        config = config_for(artifact_dir, "chars", 0, 10_000, history_step=step)
        report = observed_finalize_body(fmt.url, body, config=config)[1].history
        assert report is not None
        assert report.after <= 10_000
        return report.steps

    assert steps(0.9) < steps(0.25) < steps(0.05)
    # A high-priority tool's results go after the others: a tool_0 result is masked only
    # once every tool_1 result of its turn and before is.
    high = masked(tool_policies={"tool_0": "high"}, history=12_000)
    assert high != masked(history=12_000)
    for b, i in high:
        if i == 0:
            assert {(earlier, 1) for earlier in range(b + 1)} <= high
    assert all(b < 6 for b, _ in high)
    assert masked(tool_policies={"tool_*": "high"}) == default  # all high: as if none


def test_the_store_failing_gives_a_stub_that_names_nothing(
    artifact_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fmt = FORMATS[0]
    batches = [[output(t, 0, 3_000)] for t in range(8)]
    body, paths = fmt.body(batches)
    artifact_dir.parent.mkdir(parents=True, exist_ok=True)
    artifact_dir.write_text("a file, not a directory")  # every write fails
    config = config_for(artifact_dir, "chars", 0, 10_000)
    with caplog.at_level(logging.WARNING, logger="budgetware"):
        new, report = observed_finalize_body(fmt.url, body, config=config)
    texts = [t for batch in sent_slots(fmt, new, paths) for t in batch]
    stubs = [t for t in texts if is_masked((t,))]
    assert stubs
    assert all(t.endswith("chars. The full output is not stored.]") for t in stubs)
    assert sum(map(len, texts)) <= 10_000
    assert report.history is not None
    assert report.history.written == ()
    # Without persistence, the same words, and nothing is looked up.
    off = config_for(artifact_dir, "chars", 0, 10_000, persist=False)
    assert finalize_body(fmt.url, body, config=off) == new


def test_masking_a_masked_request_changes_nothing(artifact_dir: Path) -> None:
    fmt = FORMATS[0]
    body, paths = fmt.body(conversation())
    config = config_for(artifact_dir, "chars", 6_000, 20_000)
    once = finalize_body(fmt.url, body, config=config)
    assert finalize_body(fmt.url, once, config=config) is once
    # A second budgetware with a tighter history budget masks more, but never a stub again
    # (its text is not an output: nothing is persisted for it).
    again, report = observed_finalize_body(
        fmt.url, once, config=config_for(artifact_dir, "chars", 6_000, 15_000)
    )
    assert report.history is not None
    old, new = sent_slots(fmt, once, paths), sent_slots(fmt, again, paths)
    for old_batch, new_batch in zip(old, new):
        for before, after in zip(old_batch, new_batch):
            if is_masked((before,)):
                assert after == before
    assert all(
        not path.read_text(encoding="utf-8").startswith(MASKED_PREFIX)
        for path in artifact_dir.glob("*.txt")
    )


# --- provider-side editing --------------------------------------------------------------------


def test_anthropic_context_management_is_left_to_the_provider(artifact_dir: Path) -> None:
    fmt = next(f for f in FORMATS if f.name == "anthropic")
    decoded, paths = fmt.build(conversation())
    config = config_for(artifact_dir, "chars", 6_000, 20_000)
    decoded["context_management"] = {
        "edits": [{"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": 3}}]
    }
    body = fmt.encode(decoded)
    new, report = observed_finalize_body(fmt.url, body, config=config)
    assert report.history is not None
    assert report.history.skipped == "context_management"
    assert report.history.masked == 0
    assert not _masked_results(new, paths)
    # The per-batch budget still applies.
    assert all(batch.size_after <= batch.budget for batch in report.batches)
    assert new != body
    # An edit that clears only thinking blocks leaves the tool results to budgetware.
    decoded["context_management"] = {"edits": [{"type": "clear_thinking_20251015"}]}
    new, report = observed_finalize_body(fmt.url, fmt.encode(decoded), config=config)
    assert report.history is not None
    assert report.history.skipped is None
    assert _masked_results(new, paths)


# --- auto -------------------------------------------------------------------------------------

# The model windows come from litellm's model map; CI's lowest-versions run leaves litellm out.
needs_litellm = pytest.mark.skipif(
    importlib.util.find_spec("litellm") is None, reason="litellm is not installed"
)


@needs_litellm
def test_auto_is_half_the_input_window_of_the_model_in_the_unit(artifact_dir: Path) -> None:
    window = wire_history.input_window("gpt-4o-mini")
    assert window is not None
    assert window >= 100_000
    fmt = FORMATS[0]  # names gpt-4o-mini in its body
    batches = [[output(t, 0, 40_000)] for t in range(12)]
    body, paths = fmt.body(batches)
    for unit, per_token in (("tokens", 1), ("chars", 4), ("utf8_bytes", 4)):
        config = config_for(artifact_dir, unit, 0, "auto")
        new, report = observed_finalize_body(fmt.url, body, config=config)
        assert report.history is not None
        assert report.history.budget == window // 2 * per_token
        total = sum(measure(t, unit) for batch in sent_slots(fmt, new, paths) for t in batch)
        assert total <= report.history.budget < report.history.before


@needs_litellm
@pytest.mark.parametrize(
    ("url", "model"),
    [
        (
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
            "gemini-2.5-flash",
        ),
        (
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
            "us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse",
            "us.anthropic.claude-sonnet-4-20250514-v1:0",
        ),
        (
            "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/"
            "publishers/anthropic/models/claude-sonnet-4-5:rawPredict",
            "claude-sonnet-4-5",
        ),
    ],
)
def test_auto_reads_the_model_from_the_url(url: str, model: str) -> None:
    assert wire_history.model_of(url, {"contents": []}) == model
    assert wire_history.model_of(url, {"model": "gpt-4o-mini"}) == "gpt-4o-mini"
    assert wire_history.input_window(model) is not None


@needs_litellm
def test_auto_on_an_unknown_model_leaves_the_history_and_warns_once(
    artifact_dir: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire_history._warn_unknown.cache_clear()
    fmt = FORMATS[0]
    decoded, _paths = fmt.build([[output(t, 0, 3_000)] for t in range(10)])
    decoded["model"] = "our-own-finetune-7b"
    body = fmt.encode(decoded)
    config = config_for(artifact_dir, "chars", 0, "auto")
    with caplog.at_level(logging.WARNING, logger="budgetware"):
        for _ in range(3):
            new, report = observed_finalize_body(fmt.url, body, config=config)
            assert new == body
            assert report.history is not None
            assert report.history.skipped == "unknown_model"
    warnings = [r.getMessage() for r in caplog.records if "history_budget=auto" in r.getMessage()]
    assert len(warnings) == 1
    assert "'our-own-finetune-7b'" in warnings[0]
    assert "set history_budget to a number" in warnings[0]


def test_auto_without_litellm_leaves_every_history(
    artifact_dir: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire_history._warn_unknown.cache_clear()
    wire_history._windows.cache_clear()
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "litellm" else real(name, *a)
    )
    fmt = FORMATS[0]
    body, _ = fmt.body([[output(t, 0, 30_000)] for t in range(10)])
    config = config_for(artifact_dir, "chars", 0, "auto")
    with caplog.at_level(logging.WARNING, logger="budgetware"):
        assert finalize_body(fmt.url, body, config=config) is body
    assert wire_history.input_window("gpt-4o-mini") is None
    # No window anywhere: a body is not even read (nothing can be over a budget).
    assert not [r for r in caplog.records if "history_budget" in r.getMessage()]
    wire_history._windows.cache_clear()  # read again by the next test


# --- text-result presets and the payload entry point ---------------------------------------


def _preset_conversation(turns: int) -> tuple[dict[str, Any], list[tuple[int, str]]]:
    """An openai_chat conversation whose tool results are ReAct observations, with native
    tool messages between them: the batches' order is the conversation's."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the build."}]
    where: list[tuple[int, str]] = []
    for t in range(turns):
        if t % 3 == 2:
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"c{t}",
                            "type": "function",
                            "function": {"name": "sh", "arguments": "{}"},
                        }
                    ],
                }
            )
            messages.append(
                {"role": "tool", "tool_call_id": f"c{t}", "content": output(t, 0, 4_000)}
            )
            where.append((len(messages) - 1, "tool"))
        else:
            messages.append({"role": "assistant", "content": f"Thought: step {t}\nAction: run"})
            messages.append({"role": "user", "content": "Observation:\n" + output(t, 0, 4_000)})
            where.append((len(messages) - 1, "observation"))
    return {"model": "gpt-4o-mini", "messages": messages}, where


def test_text_result_presets_are_masked_in_conversation_order(artifact_dir: Path) -> None:
    url = "https://api.openai.com/v1/chat/completions"
    decoded, where = _preset_conversation(12)
    body = json.dumps(decoded).encode()
    config = config_for(artifact_dir, "chars", 0, 16_000, text_results=("react",))
    new, report = observed_finalize_body(url, body, config=config)
    messages = json.loads(new)["messages"]
    texts = [messages[index]["content"] for index, _ in where]
    flags = [is_masked((t.removeprefix("Observation:\n"),)) for t in texts]
    # Oldest first, whatever their kind, and never the last two.
    assert flags == sorted(flags, reverse=True)
    assert any(flags)
    assert not any(flags[-2:])
    for (_index, kind), text in zip(where, texts):
        if kind == "observation":
            assert text.startswith("Observation:\n")  # the preset's marker stays
    total = sum(len(t.removeprefix("Observation:\n")) for t in texts)
    assert report.history is not None
    assert total == report.history.after <= 16_000


def test_bound_payload_masks_the_same_as_a_body(artifact_dir: Path) -> None:
    decoded, paths = openai_chat(conversation())
    config = config_for(artifact_dir, "chars", 6_000, 20_000)
    url = "https://api.openai.com/v1/chat/completions"
    from_body = json.loads(finalize_body(url, json.dumps(decoded).encode(), config=config))
    from_payload = bound_payload(url, decoded, config=config)
    assert from_payload["messages"] == from_body["messages"]
    assert _masked_results(json.dumps(from_payload).encode(), paths)


def test_a_body_within_the_history_budget_is_not_read(
    artifact_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from budgetware.wire import body as wire_body

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("read")

    monkeypatch.setattr(wire_body, "read_body_as", never)
    fmt = FORMATS[0]
    body, _ = fmt.body([[output(0, 0, 2_000)]])
    config = config_for(artifact_dir, "chars", 0, len(body))
    assert finalize_body(fmt.url, body, config=config) is body
