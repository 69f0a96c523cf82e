"""Putting bounded text back: only the changed string tokens are rewritten, in their style."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgetware.core.config import BudgetConfig
from budgetware.core.measure import measure
from budgetware.wire.body import finalize_body
from budgetware.wire.splice import encode_string, replace_values, value_spans

URL = "https://api.openai.com/v1/chat/completions"


def _config(tmp_path: Path, budget: int = 1_000) -> BudgetConfig:
    return BudgetConfig(batch_budget=budget, artifact_dir=tmp_path, raise_errors=True)


def _body(content: str, **dumps: object) -> bytes:
    value = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "héllo ☃"},
            {"role": "tool", "tool_call_id": "a", "content": content},
        ],
        "temperature": 0.70,
    }
    return json.dumps(value, **dumps).encode("utf-8", "surrogatepass")  # type: ignore[arg-type]


def _prefix_and_suffix(body: bytes) -> tuple[bytes, bytes]:
    marker = body.index(b'"content"', body.index(b'"tool"'))
    start = body.index(b'"', marker + len(b'"content"') + 1)
    # The tool message is the last one: its content token ends right before its "}".
    return body[:start], body[body.rindex(b"}", 0, body.rindex(b"]")) :]


@pytest.mark.parametrize(
    "dumps",
    [
        {"ensure_ascii": False, "separators": (",", ":")},
        {"ensure_ascii": True},
        {"ensure_ascii": False, "indent": 2},
    ],
    ids=["compact_utf8", "ascii_spaced", "indented"],
)
def test_every_byte_outside_the_changed_token_is_kept(
    dumps: dict[str, object], tmp_path: Path
) -> None:
    body = _body("é" * 4_000 + "TAIL", **dumps)
    out = finalize_body(URL, body, config=_config(tmp_path))
    before, after = _prefix_and_suffix(body)
    assert out.startswith(before)
    assert out.endswith(after)
    assert json.loads(out)["messages"][1]["content"].endswith("TAIL")


def test_an_escaped_token_is_written_back_escaped(tmp_path: Path) -> None:
    body = _body("é" * 4_000, ensure_ascii=True)
    out = finalize_body(URL, body, config=_config(tmp_path))
    assert out.isascii()
    assert "\\u00e9" in out.decode()


def test_a_raw_utf8_token_is_written_back_raw(tmp_path: Path) -> None:
    body = _body("é" * 4_000, ensure_ascii=False)
    out = finalize_body(URL, body, config=_config(tmp_path))
    assert "é".encode() * 10 in out
    assert b"\\u00e9" not in out


def test_lone_surrogates_in_a_result_stay_escaped_and_valid_utf8(tmp_path: Path) -> None:
    body = _body("\ud800" + "x" * 3_000 + "\udfff", ensure_ascii=False)
    out = finalize_body(URL, body, config=_config(tmp_path))
    out.decode("utf-8")  # strict: no raw surrogate bytes
    content = json.loads(out)["messages"][1]["content"]
    assert len(content) <= 1_000
    assert content.endswith("\udfff")


def test_escape_heavy_results_are_located_exactly(tmp_path: Path) -> None:
    text = 'say "hi"\\n\t' * 600 + '"END"'
    body = _body(text, separators=(",", ":"))
    out = finalize_body(URL, body, config=_config(tmp_path))
    decoded = json.loads(out)
    assert decoded["messages"][0]["content"] == "héllo ☃"
    assert decoded["messages"][1]["content"].endswith('"END"')
    assert decoded["temperature"] == 0.70


def test_equal_strings_elsewhere_do_not_confuse_the_location() -> None:
    text = "same " * 100
    value = {"a": text, "messages": [{"content": text}], "b": [text, {"content": text}]}
    body = json.dumps(value).encode()
    spans = value_spans(body, value, {("messages", 0, "content"), ("b", 1, "content")}, set())[0]
    for start, end in spans.values():
        assert json.loads(body[start:end]) == text
    first = spans[("messages", 0, "content")][0]
    assert body[:first].endswith(b'"messages": [{"content": ')
    assert body[: spans[("b", 1, "content")][0]].endswith(
        b'"b": ["' + text.encode() + b'", {"content": '
    )


def test_a_slot_path_that_is_missing_from_the_bytes_is_reported() -> None:
    value = {"a": "x"}
    assert replace_values(b'{"a":"x"}', value, {("b",): ("x", "y")}) is None


def test_escaped_keys_are_decoded_before_matching() -> None:
    body = b'{"con\\u0074ent": "' + b"v" * 300 + b'"}'
    value = json.loads(body)
    out = replace_values(body, value, {("content",): ("v" * 300, "short")})
    assert out == b'{"con\\u0074ent": "short"}'


@pytest.mark.parametrize("text", ["plain", "é☃\U0001f600", "\ud800x", 'q"\\\n\x00'])
@pytest.mark.parametrize("ascii_only", [True, False])
def test_encode_string_round_trips(text: str, ascii_only: bool) -> None:
    encoded = encode_string(text, ascii_only=ascii_only)
    encoded.decode("utf-8")
    assert json.loads(encoded) == text
    if ascii_only:
        assert encoded.isascii()


def test_numbers_and_literals_between_tokens_are_skipped() -> None:
    body = b'{"n": [1, -2.5e3, true, null, {"content": "' + b"z" * 400 + b'"}], "k": false}'
    value = json.loads(body)
    out = replace_values(body, value, {("n", 4, "content"): ("z" * 400, "ok")})
    assert out == b'{"n": [1, -2.5e3, true, null, {"content": "ok"}], "k": false}'
    assert re.search(rb"z", out) is None


@given(st.text(st.characters(), max_size=60), st.booleans())
def test_a_string_never_measures_more_than_its_json_bytes(text: str, ascii_only: bool) -> None:
    # Why finalize_body may return a body no longer than the budget without parsing it.
    token = encode_string(text, ascii_only=ascii_only)
    for unit in ("chars", "utf8_bytes"):
        assert measure(text, unit) <= len(token) - 2  # type: ignore[arg-type]


@pytest.mark.parametrize("ensure_ascii", [False, True], ids=["raw_utf8", "ascii"])
@pytest.mark.parametrize("slashes", [False, True], ids=["as_json_writes", "slashes_escaped"])
def test_a_long_escape_heavy_string_is_located_exactly(ensure_ascii: bool, slashes: bool) -> None:
    # Longer than a piece of the comparison, an escaped quote every few characters: its end
    # is found by comparing its encodings a piece at a time, or by a scan when the writer
    # escaped otherwise ("\/").
    text = '{"k": "v/é ☃", "q": "\\"x\\"", "n": "\\u0001"}\n' * 4_000
    value = {"messages": [{"content": text, "after": "z"}], "tail": [1]}
    body = json.dumps(value, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass")
    if slashes:
        body = body.replace(b"/", b"\\/")
    path = ("messages", 0, "content")
    spans = value_spans(body, json.loads(body), {path}, set())[0]
    start, end = spans[path]
    assert json.loads(body[start:end]) == text
    assert body[end:].startswith(b', "after": "z"}')
