"""The headless writer: stream-json lines and a JSON array, with tool results projected."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest

from budgetware.core.measure import json_string_bytes
from budgetware.display.headless import HeadlessWriter
from budgetware.display.projection import FIELD_BUDGET, HEADLESS_MARKER

BIG = "HEAD-" + "x" * 100_000 + "-TAIL"


def tool_result_message(content: str, is_error: bool = False) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "tu",
                    "is_error": is_error,
                    "content": content,
                }
            ],
        },
    }


ASSISTANT = {
    "type": "assistant",
    "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
}


def result_text(message: dict[str, Any]) -> str:
    text: str = message["message"]["content"][0]["content"]
    return text


def test_stream_json_writes_one_parseable_line_per_message() -> None:
    out = io.BytesIO()
    with HeadlessWriter(out, "stream-json") as writer:
        writer.write(ASSISTANT)
        writer.write(tool_result_message(BIG, is_error=True))
    lines = out.getvalue().split(b"\n")
    assert lines[-1] == b""
    parsed = [json.loads(line) for line in lines[:-1]]
    assert parsed[0] == ASSISTANT
    assert HEADLESS_MARKER in result_text(parsed[1])
    assert json_string_bytes(result_text(parsed[1])) <= FIELD_BUDGET
    assert parsed[1]["message"]["content"][0]["is_error"] is True


def test_stream_json_lines_are_compact() -> None:
    out = io.BytesIO()
    with HeadlessWriter(out, "stream-json") as writer:
        writer.write(ASSISTANT)
    assert out.getvalue() == json.dumps(ASSISTANT, separators=(",", ":")).encode() + b"\n"


def test_json_mode_writes_one_array_and_a_newline() -> None:
    out = io.BytesIO()
    with HeadlessWriter(out, "json") as writer:
        writer.write(ASSISTANT)
        writer.write(tool_result_message(BIG))
    data = out.getvalue()
    assert data.endswith(b"]\n")
    assert data.count(b"\n") == 1
    parsed = json.loads(data)
    assert len(parsed) == 2
    assert json_string_bytes(result_text(parsed[1])) <= FIELD_BUDGET


def test_json_mode_without_messages_writes_an_empty_array() -> None:
    out = io.BytesIO()
    HeadlessWriter(out, "json").close()
    assert out.getvalue() == b"[]\n"


def test_text_streams_receive_the_same_characters() -> None:
    text, binary = io.StringIO(), io.BytesIO()
    for stream in (text, binary):
        with HeadlessWriter(stream, "stream-json") as writer:  # type: ignore[arg-type]
            writer.write(tool_result_message("汉" * 30_000))
    assert text.getvalue().encode("utf-8") == binary.getvalue()


def test_lone_surrogates_are_written_as_escapes() -> None:
    out = io.BytesIO()
    with HeadlessWriter(out, "stream-json") as writer:
        writer.write(tool_result_message("\ud800" + "y" * 100_000))
    out.getvalue().decode("utf-8")  # valid UTF-8
    assert result_text(json.loads(out.getvalue())).startswith("\ud800")


def test_writer_never_mutates_the_message() -> None:
    message = tool_result_message(BIG)
    before = copy.deepcopy(message)
    with HeadlessWriter(io.BytesIO(), "stream-json") as writer:
        writer.write(message)
    assert message == before


def test_writing_after_close_is_an_error() -> None:
    writer = HeadlessWriter(io.BytesIO(), "json")
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.write(ASSISTANT)


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode"):
        HeadlessWriter(io.BytesIO(), "text")  # type: ignore[arg-type]
