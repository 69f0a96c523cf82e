"""When finalize_body must hand back the very same bytes object, and never raise."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from budgetware.core.config import BudgetConfig, budget
from budgetware.wire import body as _body
from budgetware.wire import detect
from budgetware.wire.body import finalize_body

from ._bodies import FORMATS

CHAT_URL = "https://api.openai.com/v1/chat/completions"
BIG = "x" * 5_000


def _config(tmp_path: Path, **overrides: Any) -> BudgetConfig:
    values: dict[str, Any] = {
        "batch_budget": 1_000,
        "artifact_dir": tmp_path / "artifacts",
        "raise_errors": True,
    }
    values.update(overrides)
    return BudgetConfig(**values)


def _chat_body(*results: str) -> bytes:
    body, _ = FORMATS[0].body([list(results)])
    return body


def test_an_oversized_chat_body_changes(tmp_path: Path) -> None:
    # The reference case the pass-through tests below differ from in one respect each.
    body = _chat_body(BIG)
    assert finalize_body(CHAT_URL, body, config=_config(tmp_path)) is not body


def test_a_body_no_longer_than_the_budget_is_returned_without_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_parse(data: bytes) -> Any:
        raise AssertionError("parsed")

    monkeypatch.setattr(detect, "loads", no_parse)
    body = _chat_body("y" * 500)
    config = _config(tmp_path, batch_budget=len(body))
    assert finalize_body(CHAT_URL, body, config=config) is body


def test_a_disabled_budget_returns_the_same_object(tmp_path: Path) -> None:
    body = _chat_body(BIG)
    for value in (0, -5):
        assert finalize_body(CHAT_URL, body, config=_config(tmp_path, batch_budget=value)) is body


def test_an_unknown_url_with_no_tool_result_shape_returns_the_same_object(tmp_path: Path) -> None:
    body = json.dumps({"documents": [BIG], "query": "q"}).encode()
    assert finalize_body("https://example.com/rerank", body, config=_config(tmp_path)) is body


def test_ollama_generate_is_never_rewritten(tmp_path: Path) -> None:
    body = _chat_body(BIG)
    url = "http://127.0.0.1:11434/api/generate"
    assert finalize_body(url, body, config=_config(tmp_path)) is body


def test_a_body_without_tool_results_returns_the_same_object(tmp_path: Path) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": BIG}]}).encode()
    assert finalize_body(CHAT_URL, body, config=_config(tmp_path)) is body


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "AWS4-HMAC-SHA256 Credential=AKIA/20250101/us-east-1/bedrock/aws4"},
        {"authorization": "aws4-hmac-sha256 Credential=x"},
        {"X-Amz-Date": "20250101T000000Z"},
        {"x-amz-content-sha256": "UNSIGNED-PAYLOAD"},
        {"X-AMZ-SECURITY-TOKEN": "token"},
    ],
)
def test_a_signed_request_returns_the_same_object(headers: dict[str, str], tmp_path: Path) -> None:
    body = _chat_body(BIG)
    assert finalize_body(CHAT_URL, body, headers=headers, config=_config(tmp_path)) is body


def test_signature_headers_given_as_bytes_are_recognized(tmp_path: Path) -> None:
    body = _chat_body(BIG)
    headers = {b"X-Amz-Date": b"20250101T000000Z"}
    assert finalize_body(CHAT_URL, body, headers=headers, config=_config(tmp_path)) is body  # type: ignore[arg-type]


def test_a_bearer_token_is_not_a_signature(tmp_path: Path) -> None:
    body = _chat_body(BIG)
    headers = {"Authorization": "Bearer sk-test"}
    assert finalize_body(CHAT_URL, body, headers=headers, config=_config(tmp_path)) is not body


def test_a_signed_request_is_reported_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _body._warn_signed.cache_clear()
    body = _chat_body(BIG)
    with caplog.at_level(logging.WARNING, logger="budgetware"):
        for _ in range(3):
            finalize_body(CHAT_URL, body, headers={"X-Amz-Date": "x"}, config=_config(tmp_path))
    assert len([r for r in caplog.records if "signed" in r.getMessage()]) == 1


def test_a_gzip_encoded_body_returns_the_same_object(tmp_path: Path) -> None:
    body = gzip.compress(_chat_body(BIG * 3))
    headers = {"Content-Encoding": "gzip"}
    assert finalize_body(CHAT_URL, body, headers=headers, config=_config(tmp_path)) is body


def test_an_encoded_plain_json_body_is_still_not_touched(tmp_path: Path) -> None:
    # The header, not a sniff of the bytes, decides: a mislabeled body is left alone.
    body = _chat_body(BIG)
    headers = {"content-encoding": "br"}
    assert finalize_body(CHAT_URL, body, headers=headers, config=_config(tmp_path)) is body


def test_identity_content_encoding_is_rewritten(tmp_path: Path) -> None:
    body = _chat_body(BIG)
    headers = {"Content-Encoding": "identity"}
    assert finalize_body(CHAT_URL, body, headers=headers, config=_config(tmp_path)) is not body


_DEEP = b'{"messages":' + b"[" * 10_000 + b"]" * 10_000 + b', "pad": "' + b"p" * 2_000 + b'"}'
_TOOL = b'{"role":"tool","tool_call_id":"a","content":"' + b"z" * 3_000 + b'"}'

ROBUST = {
    "empty": b"",
    "truncated": _chat_body(BIG)[:-40],
    "not_utf8": b'{"messages":[{"role":"tool","content":"\xff\xfe' + b"x" * 3_000 + b'"}]}',
    "array": b"[" + _TOOL + b"]",
    "scalar": b'"' + b"s" * 3_000 + b'"',
    "utf16": json.dumps({"messages": [json.loads(_TOOL)]}).encode("utf-16"),
    "deep": _DEEP,
    "huge_int_over_digit_limit": b'{"n":' + b"9" * 5_000 + b',"messages":[' + _TOOL + b"]}",
    "text": b"hello " * 1_000,
}


@pytest.mark.parametrize("name", sorted(ROBUST))
def test_robust_input_is_passed_through_without_error(name: str, tmp_path: Path) -> None:
    body = ROBUST[name]
    assert finalize_body(CHAT_URL, body, config=_config(tmp_path)) is body


@pytest.mark.parametrize(
    "extra",
    [
        b'"n":123456789012345678901234567890,',
        b'"nan":NaN,"inf":-Infinity,',
        b'"lone":"\\ud800 \\udfff",',
        b'"model":"a","model":"b",',
    ],
    ids=["huge_int", "nan", "lone_surrogates", "duplicate_keys"],
)
def test_unusual_json_under_budget_is_the_same_object(extra: bytes, tmp_path: Path) -> None:
    body = b"{" + extra + b'"messages":[' + _TOOL.replace(b"z" * 3_000, b"z" * 320) * 3 + b"]}"
    body = body.replace(b"}{", b"},{")
    assert len(body) > 1_000  # parsed and measured: 960 chars of tool text, within budget
    assert finalize_body(CHAT_URL, body, config=_config(tmp_path)) is body


@pytest.mark.parametrize(
    "extra",
    [
        b'"n":123456789012345678901234567890,',
        b'"nan":NaN,"inf":-Infinity,',
        b'"lone":"\\ud800 \\udfff",',
    ],
    ids=["huge_int", "nan", "lone_surrogates"],
)
def test_unusual_values_beside_an_oversized_result_keep_their_bytes(
    extra: bytes, tmp_path: Path
) -> None:
    body = b"{" + extra + b'"messages":[' + _TOOL + b"]}"
    out = finalize_body(CHAT_URL, body, config=_config(tmp_path))
    assert out.startswith(b"{" + extra + b'"messages":[{"role":"tool","tool_call_id":"a"')
    assert len(json.loads(out)["messages"][0]["content"]) <= 1_000


def test_with_duplicate_keys_the_value_decoders_keep_is_the_one_bounded(tmp_path: Path) -> None:
    tool = _TOOL.replace(b'"content":', b'"content":"first","content":')
    body = b'{"messages":[' + tool + b"]}"
    out = finalize_body(CHAT_URL, body, config=_config(tmp_path))
    assert b'"content":"first",' in out
    assert len(json.loads(out)["messages"][0]["content"]) <= 1_000


def test_internal_errors_raise_when_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(_body, "finalize_batch_written", broken)
    with pytest.raises(RuntimeError, match="boom"):
        finalize_body(CHAT_URL, _chat_body(BIG), config=_config(tmp_path))


def test_internal_errors_return_the_original_body_and_log_no_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret tool output")

    monkeypatch.setattr(_body, "finalize_batch_written", broken)
    body = _chat_body(BIG)
    with caplog.at_level(logging.ERROR, logger="budgetware"):
        out = finalize_body(CHAT_URL, body, config=_config(tmp_path, raise_errors=False))
    assert out is body
    assert [r.name for r in caplog.records] == ["budgetware"]
    assert "RuntimeError" in caplog.text
    assert "secret" not in caplog.text
    assert "x" * 20 not in caplog.text


def test_no_config_uses_the_environment_and_the_budget_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUDGETWARE_BATCH_BUDGET", "100000")
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", str(tmp_path))
    body = _chat_body(BIG)
    assert finalize_body(CHAT_URL, body) is body
    with budget(batch_budget=1_000):
        out = finalize_body(CHAT_URL, body)
    assert len(json.loads(out)["messages"][-1]["content"]) <= 1_000


@pytest.mark.filterwarnings("ignore:budgetware. a budget.. block ended")  # it did nothing
def test_a_given_config_is_used_as_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUDGETWARE_BATCH_BUDGET", "10")
    body = _chat_body(BIG)
    with budget(batch_budget=20):
        assert finalize_body(CHAT_URL, body, config=_config(tmp_path, batch_budget=0)) is body


def test_without_persistence_nothing_is_written(tmp_path: Path) -> None:
    body = _chat_body(BIG)
    out = finalize_body(CHAT_URL, body, config=_config(tmp_path, persist=False))
    assert len(json.loads(out)["messages"][-1]["content"]) <= 1_000
    assert not (tmp_path / "artifacts").exists()


def test_the_guard_runs_last_and_bounds_without_io(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A finalizer that bounds nothing: only the guard can make the body fit, and it must
    # do so without writing anything.
    monkeypatch.setattr(
        _body, "finalize_batch_written", lambda entries, **kwargs: (list(entries), ())
    )
    body = _chat_body(BIG, BIG)
    out = finalize_body(CHAT_URL, body, config=_config(tmp_path))
    contents = [m["content"] for m in json.loads(out)["messages"][-2:]]
    contents = [c if isinstance(c, str) else c[0]["text"] for c in contents]
    assert sum(len(c) for c in contents) <= 1_000
    assert not (tmp_path / "artifacts").exists()


def test_an_unknown_endpoint_without_tool_markers_is_never_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_parse(data: bytes) -> Any:
        raise AssertionError("parsed")

    monkeypatch.setattr(detect, "loads", no_parse)
    # A large JSON upload to some other API, seen by instrument(): no parse, same bytes.
    # Even with sniffing of unknown endpoints on.
    body = json.dumps({"records": [{"id": i, "text": "z" * 100} for i in range(5_000)]}).encode()
    for sniff in (False, True):
        config = _config(tmp_path, batch_budget=1_000, sniff_unknown_endpoints=sniff)
        assert finalize_body("https://storage.example.test/upload", body, config=config) is body


def test_an_unknown_endpoint_with_a_tool_shaped_body_is_bounded_only_when_sniffing(
    tmp_path: Path,
) -> None:
    body = _chat_body(BIG)
    url = "https://gateway.example.test/llm"
    assert finalize_body(url, body, config=_config(tmp_path)) is body
    out = finalize_body(url, body, config=_config(tmp_path, sniff_unknown_endpoints=True))
    assert len(out) < len(body)


@pytest.mark.parametrize("body", [None, "a str body", bytearray(b"{}"), memoryview(b"{}"), 12])
def test_a_body_that_is_not_bytes_is_returned_as_it_is(tmp_path: Path, body: Any) -> None:
    # None is what a request without content gives some callers; no type is an error here.
    assert finalize_body(CHAT_URL, body, config=_config(tmp_path, batch_budget=1)) is body
    assert finalize_body(CHAT_URL, body) is body
