"""Re-serializing paths of the wire layer change nothing but tool text."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from budgetware.core.config import BudgetConfig
from budgetware.core.jsonio import loads
from budgetware.wire.body import finalize_body
from budgetware.wire.payload import bound_payload
from budgetware.wire.splice import SpliceError, patch_json

BIG = "x" * 3_000
CHAT = "https://api.example.com/v1/chat/completions"


def _config(tmp_path: Path) -> BudgetConfig:
    return BudgetConfig(batch_budget=1_000, artifact_dir=tmp_path, raise_errors=True)


def test_bound_payload_keeps_every_value_outside_the_tool_results(tmp_path: Path) -> None:
    # What the anthropic middleware and the litellm callback hand over: a decoded dict.
    metadata = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf, "small": 1e-300}
    payload = {
        "model": "m",
        "metadata": metadata,
        "messages": [{"role": "user", "content": [{"type": "tool_result", "content": BIG}]}],
    }
    out = bound_payload("/v1/messages", payload, config=_config(tmp_path))
    assert out is not payload
    assert len(out["messages"][0]["content"][0]["content"]) <= 1_000
    assert math.isnan(out["metadata"]["nan"])
    assert out["metadata"]["inf"] == math.inf
    assert out["metadata"]["ninf"] == -math.inf
    assert out["metadata"]["small"] == 1e-300


@pytest.mark.parametrize("beside", [math.nan, None, "text"])
def test_bound_payload_keeps_big_integers_beside_nan(tmp_path: Path, beside: object) -> None:
    # 2**70 + 1 is no float (2**70 is one, and compared equal after a round trip through
    # orjson 3.13, which reads integers beyond 64 bits as floats).
    payload = {
        "seed": 2**70 + 1,
        "ids": [123456789012345678901234567891, -(2**64) - 3],
        "beside": beside,
        "messages": [{"role": "tool", "tool_call_id": "a", "content": BIG}],
    }
    out = bound_payload(CHAT, payload, config=_config(tmp_path))
    assert out is not payload
    assert len(out["messages"][0]["content"]) <= 1_000
    assert type(out["seed"]) is int
    assert out["seed"] == 2**70 + 1
    assert out["ids"] == [123456789012345678901234567891, -(2**64) - 3]
    assert all(type(i) is int for i in out["ids"])


def test_a_key_with_raw_surrogate_bytes_still_gets_its_body_bounded(tmp_path: Path) -> None:
    # CESU-8: a surrogate written as raw bytes inside a key. The parser accepts it; the
    # splice used to fail on it, and the whole body went out unbounded.
    body = (
        b'{"model":"m","metadata":{"k\xed\xa0\x80ey":1},"messages":'
        b'[{"role":"tool","tool_call_id":"a","content":"' + BIG.encode() + b'"}]}'
    )
    out = finalize_body(CHAT, body, config=_config(tmp_path))
    assert len(out) < len(body)
    assert out.startswith(b'{"model":"m","metadata":{"k\xed\xa0\x80ey":1},"messages":')
    assert len(loads(out)["messages"][0]["content"]) <= 1_000


@pytest.mark.parametrize(
    "body",
    [
        b'{"a": 1e400, "b": [NaN, 123456789012345678901234567890, {"t": "old", "x": -0.0}]}',
        b'{ "a" : 1e400 ,"b":[ NaN , 123456789012345678901234567890,{ "t" : "old","x":-0.0 } ] }',
    ],
)
def test_patch_json_writes_only_what_changed(body: bytes) -> None:
    old = loads(body)
    new = {**old, "b": [*old["b"][:2], {**old["b"][2], "t": "new"}], "added": {"k": [1]}}
    out = patch_json(body, old, new)
    assert out is not None
    assert out == body.replace(b'"old"', b'"new"')[: body.rindex(b"}")] + b',"added":{"k":[1]}}'
    assert json.loads(out)["b"][2]["t"] == "new"


def test_patch_json_writes_a_value_whole_when_its_shape_changes() -> None:
    body = b'{"keep": 1e400, "content": [{"text": "a"}, {"text": "b"}], "drop": {"x": 1, "y": 2}}'
    old = loads(body)
    new = {**old, "content": [{"text": "marker"}], "drop": {"x": 1}}
    assert patch_json(body, old, new) == (
        b'{"keep": 1e400, "content": [{"text":"marker"}], "drop": {"x":1}}'
    )


def test_patch_json_returns_none_when_the_bytes_do_not_match() -> None:
    assert patch_json(b'{"a": "x"', {"a": "x"}, {"a": "y"}) is None


# A changed string whose token the splicer cannot find (every path is read from the same
# bytes, so only a broken splicer gets there): the body goes out as it came, and it is said.
NUMBER_BODY = (
    b'{"model":"m","temperature":1.50,"seed":123456789012345678901234567891,'
    b'"messages":[{"role":"tool","tool_call_id":"a","content":"' + BIG.encode() + b'"}]}'
)


def test_a_body_that_cannot_be_spliced_goes_out_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from budgetware.wire import body as body_module

    monkeypatch.setattr(body_module, "replace_values", lambda body, root, changes: None)
    config = BudgetConfig(batch_budget=1_000, artifact_dir=tmp_path)
    assert finalize_body(CHAT, NUMBER_BODY, config=config) is NUMBER_BODY
    assert "SpliceError" in caplog.text
    with pytest.raises(SpliceError):
        finalize_body(CHAT, NUMBER_BODY, config=_config(tmp_path))
