"""read_tool_output: its declaration for each API, and an executor that answers every call
with text whose first line says what it is, and every mistake with one line."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from budgetware.core.artifacts import text_key
from budgetware.finalizer import LocalArtifactStore
from budgetware.store.base import ContentStore
from budgetware.tools import (
    MAX_LIMIT,
    TOOL_NAME,
    arun_read_tool_output,
    read_tool_output_parameters,
    read_tool_output_schema,
    run_read_tool_output,
)

LOG = "\n".join(
    [f"PASSED tests/test_{i}.py::test_ok" for i in range(1, 3000)]
    + ["FAILED tests/test_cart.py::test_checkout_total - AssertionError"]
    + [f"PASSED tests/test_{i}.py::test_more" for i in range(3000, 6000)]
)


def test_a_window_starts_with_what_it_is(any_store: ContentStore) -> None:
    ref = any_store.put(LOG)
    answer = run_read_tool_output({"ref": ref, "offset": 20, "limit": 100}, store=any_store)
    head, _, body = answer.partition("\n")
    assert head == f"chars 20-120 of {len(LOG):,}; more with offset=120"
    assert body == LOG[20:120]


def test_the_last_window_says_nothing_more(any_store: ContentStore) -> None:
    ref = any_store.put("short output")
    assert run_read_tool_output({"ref": ref}, store=any_store) == "chars 0-12 of 12\nshort output"


def test_arguments_as_the_json_string_a_provider_sends(any_store: ContentStore) -> None:
    ref = any_store.put(LOG)
    answer = run_read_tool_output(json.dumps({"ref": ref, "limit": 6}), store=any_store)
    assert answer.endswith("\nPASSED")
    assert (
        run_read_tool_output(json.dumps({"ref": ref, "limit": 6}).encode(), store=any_store)
        == answer
    )
    # numbers as models sometimes send them
    assert (
        run_read_tool_output({"ref": ref, "limit": 6.0, "offset": "0"}, store=any_store) == answer
    )


def test_a_pattern_gives_the_matching_lines(any_store: ContentStore) -> None:
    ref = any_store.put(LOG)
    answer = run_read_tool_output({"ref": ref, "pattern": "FAILED"}, store=any_store)
    lines = answer.split("\n")
    assert lines[0].startswith("1 match ")
    offset = LOG.index("FAILED")
    assert (
        lines[1]
        == f"3000:{offset}: FAILED tests/test_cart.py::test_checkout_total - AssertionError"
    )


def test_context_lines_are_marked_apart_from_matches(any_store: ContentStore) -> None:
    ref = any_store.put("a\nb\nhit\nc\nd\ne\nf\nhit\ng")
    answer = run_read_tool_output({"ref": ref, "pattern": "hit", "context": 1}, store=any_store)
    assert answer.split("\n") == [
        "2 matches (line:offset: text; read around one with its offset)",
        "2-2- b",
        "3:4: hit",
        "4-8- c",
        "--",
        "7-14- f",
        "8:16: hit",
        "9-20- g",
    ]


def test_many_matches_stop_at_the_limit_and_say_so(any_store: ContentStore) -> None:
    ref = any_store.put(LOG)
    answer = run_read_tool_output({"ref": ref, "pattern": "PASSED", "limit": 500}, store=any_store)
    head, _, body = answer.partition("\n")
    shown = int(head.split()[0])
    assert head.startswith(f"{shown} matches shown (more follow: narrow the pattern)")
    assert len(body) <= 500
    assert len(body.split("\n")) == shown


def matching_lines_written(answer: str) -> list[str]:
    """The lines of an answer marked as matches (``N:offset: text``)."""
    return [line for line in answer.split("\n")[1:] if re.match(r"\d+:\d+: ", line)]


def test_the_head_counts_the_matching_lines_written(any_store: ContentStore) -> None:
    # The first match's context holds the second match; the second's context line is too
    # long for the limit. Both matching lines are written: the head says two, in grammar.
    ref = any_store.put("hit one\nhit two\n" + "x" * 400 + "\nhit three\n")
    answer = run_read_tool_output(
        {"ref": ref, "pattern": "hit", "context": 1, "limit": 40}, store=any_store
    )
    head = answer.split("\n")[0]
    assert head.startswith("2 matches shown (more follow: narrow the pattern)"), answer
    assert len(matching_lines_written(answer)) == 2
    # One match shown is one match.
    answer = run_read_tool_output({"ref": ref, "pattern": "hit|x", "limit": 10}, store=any_store)
    assert answer.startswith("1 match shown (more follow: narrow the pattern)"), answer


def test_a_match_past_the_match_limit_is_not_shown_as_context(any_store: ContentStore) -> None:
    from budgetware.tools import MAX_MATCHES

    ref = any_store.put("".join(f"hit {i}\n" for i in range(1, MAX_MATCHES + 6)) + "end\n")
    answer = run_read_tool_output({"ref": ref, "pattern": "hit", "context": 2}, store=any_store)
    head, _, body = answer.partition("\n")
    assert head.startswith(f"{MAX_MATCHES} matches shown (more follow: narrow the pattern)")
    assert len(matching_lines_written(answer)) == MAX_MATCHES
    # every line written that matches is marked as a match, and counted
    assert all(re.match(r"\d+:\d+: ", line) for line in body.split("\n") if "hit" in line)
    assert f"hit {MAX_MATCHES + 1}" not in body


def test_no_match(any_store: ContentStore) -> None:
    ref = any_store.put(LOG)
    assert run_read_tool_output({"ref": ref, "pattern": "ERROR"}, store=any_store) == "0 matches"


def test_the_limit_is_capped(any_store: ContentStore) -> None:
    ref = any_store.put("x" * (MAX_LIMIT + 50))
    answer = run_read_tool_output({"ref": ref, "limit": 10**9}, store=any_store)
    assert answer.startswith(f"chars 0-{MAX_LIMIT:,} of")


# -- bad input: one line for the model, never an exception -----------------------------------


def bad_calls(ref: str, directory: str) -> list[tuple[Any, str]]:
    return [
        ({}, "error: ref is required"),
        ("not json", "error: the arguments are not a JSON object"),
        ("[1, 2]", "error: the arguments are not a JSON object"),
        (None, "error: the arguments are not a JSON object"),
        ({"ref": 7}, "error: ref is required"),
        ({"ref": "/etc/passwd"}, "error: no such full output"),
        ({"ref": f"{directory}/../{Path(ref).name}"}, "error: no such full output"),
        ({"ref": directory}, "error: no such full output"),
        ({"ref": "f" * 64}, "error: no such full output"),
        ({"ref": ref, "offset": -5}, "error: offset must be 0 or more"),
        ({"ref": ref, "offset": 10**12}, "error: offset 1,000,000,000,000 is past the end"),
        ({"ref": ref, "limit": "lots"}, "error: limit must be a whole number"),
        # A window of nothing would say "more with offset=0" for ever.
        ({"ref": ref, "limit": 0}, "error: limit must be 1 or more (got 0)"),
        ({"ref": ref, "limit": -3}, "error: limit must be 1 or more (got -3)"),
        ({"ref": ref, "limit": 0, "pattern": "x"}, "error: limit must be 1 or more (got 0)"),
        ({"ref": ref, "pattern": "foo("}, "error: not a valid regular expression"),
        ({"ref": ref, "pattern": ["x"]}, "error: pattern must be a string"),
        ({"ref": ref, "pattern": "x", "context": -1}, "error: context must be 0 or more"),
    ]


def test_every_mistake_is_one_line_for_the_model(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put(LOG)
    for arguments, start in bad_calls(ref, str(tmp_path / "a")):
        answer = run_read_tool_output(arguments, store=store)
        assert answer.startswith(start), (arguments, answer)
        assert "\n" not in answer


@pytest.mark.parametrize("name", ["offset", "limit", "context"])
@pytest.mark.parametrize(
    "value",
    ["²", "9" * 5000, "-" + "9" * 5000, 10**5000, -(10**5000), 1e300, float("nan")],
    ids=["superscript", "digits", "negative-digits", "int", "negative-int", "1e300", "nan"],
)
def test_a_number_no_int_can_hold_is_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, value: object
) -> None:
    # Under the suite internal errors raise: an answer here is no internal error.
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put(LOG)
    arguments = {"ref": ref, name: value, **({"pattern": "FAILED"} if name == "context" else {})}
    answer = run_read_tool_output(arguments, store=store)
    assert re.fullmatch(rf"error: {name} must be (a whole number|1? ?[01] or more)\b.*", answer)
    assert len(answer) < 200
    assert "\n" not in answer
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


def test_an_evicted_artifact_is_one_line(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put(LOG)
    store.prune(max_total_bytes=0, now=1e12)
    answer = run_read_tool_output({"ref": ref}, store=store)
    assert answer.startswith("error: no such full output")
    assert "\n" not in answer


def test_a_truncated_artifact_is_one_line(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put(LOG)
    with open(ref, "r+b") as f:
        f.truncate(10)
    answer = run_read_tool_output({"ref": ref, "pattern": "FAILED"}, store=store)
    assert answer.startswith("error: no such full output")
    assert "\n" not in answer


def test_a_runaway_pattern_is_stopped_and_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import budgetware.tools as module

    monkeypatch.setattr(module, "SEARCH_SECONDS", 0.5)
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put(("a" * 64 + "b\n") * 10)
    started = time.monotonic()
    answer = run_read_tool_output({"ref": ref, "pattern": "^(a|aa)+$"}, store=store)
    assert answer.startswith("error: the search took longer than 0.5 s")
    assert time.monotonic() - started < 30


def test_an_internal_error_is_one_line_when_errors_do_not_raise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalArtifactStore(tmp_path / "a")
    ref = store.put(LOG)

    def broken(*args: object, **kw: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(store, "read_piece", broken)
    with pytest.raises(RuntimeError):  # under the suite internal errors raise
        run_read_tool_output({"ref": ref}, store=store)
    monkeypatch.setenv("BUDGETWARE_RAISE_ERRORS", "0")
    assert run_read_tool_output({"ref": ref}, store=store) == (
        "error: the full output cannot be read now (internal error)"
    )


async def test_the_async_executor_gives_the_same_answer(any_store: ContentStore) -> None:
    ref = any_store.put(LOG)
    args = {"ref": ref, "pattern": "FAILED", "context": 1}
    assert await arun_read_tool_output(args, store=any_store) == run_read_tool_output(
        args, store=any_store
    )


def test_a_ref_copied_with_the_notice_punctuation_works(any_store: ContentStore) -> None:
    ref = any_store.put(LOG)
    for near in (ref + "]", ref + ";", text_key(LOG).upper()):
        answer = run_read_tool_output({"ref": near, "limit": 6}, store=any_store)
        assert answer.endswith("\nPASSED"), answer
    answer = run_read_tool_output({"ref": "/elsewhere/" + text_key(LOG) + ".txt"}, store=any_store)
    assert answer.startswith("error: no such full output: ")
    assert "64-hex SHA-256 name" in answer  # what to pass instead


def test_the_bare_hash_works_as_a_ref(any_store: ContentStore) -> None:
    any_store.put(LOG)
    assert run_read_tool_output({"ref": text_key(LOG), "limit": 6}, store=any_store).endswith(
        "PASSED"
    )


# -- the declarations ------------------------------------------------------------------------


def test_the_parameters_are_a_json_schema_object() -> None:
    params = read_tool_output_parameters()
    assert params["required"] == ["ref"]
    assert set(params["properties"]) == {"ref", "offset", "limit", "pattern", "context"}


@pytest.mark.parametrize(
    ("api", "name_at"),
    [
        ("openai_chat", ("function", "name")),
        ("openai_responses", ("name",)),
        ("anthropic", ("name",)),
        ("gemini", ("name",)),
    ],
)
def test_each_api_gets_its_shape(api: str, name_at: tuple[str, ...]) -> None:
    schema: Any = read_tool_output_schema(api)
    for part in name_at:
        schema = schema[part]
    assert schema == TOOL_NAME


def test_the_responses_declaration_is_not_strict() -> None:
    # The Responses API reads a missing `strict` as strict mode, where every parameter is
    # required: offset, limit, pattern and context are optional.
    assert read_tool_output_schema("openai_responses")["strict"] is False
    # Chat Completions is not strict unless asked: the chat shape leaves it out.
    assert "strict" not in read_tool_output_schema("openai_chat")["function"]


def test_an_unknown_api_is_refused() -> None:
    with pytest.raises(ValueError, match="openai_chat"):
        read_tool_output_schema("cohere")
