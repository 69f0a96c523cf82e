"""Bounding one tools/call result: the pure part, its configuration and its failure modes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from budgetware.core.artifacts import ArtifactStoreError, text_key
from budgetware.core.config import BudgetConfig, ConfigError
from budgetware.core.jsonio import dumps_bytes
from budgetware.integrations.mcp import budget_http_client
from budgetware.mcp.bound import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_RESULT_BUDGET,
    META_ARTIFACTS,
    McpServerBudget,
    bound_tool_result,
    result_budget_for,
)
from budgetware.store.local import LocalArtifactStore


class FailingPutStore(LocalArtifactStore):
    def put(self, text: str, *, key: str | None = None) -> str:
        raise ArtifactStoreError(28, "disk full")


def text_result(text: str) -> dict[str, object]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def test_a_result_within_budget_is_the_same_object(store: LocalArtifactStore) -> None:
    result = text_result("x" * 1_000)
    outcome = bound_tool_result(result, budget=1_000, store=store)
    assert outcome.result is result
    assert outcome.refs is None


@pytest.mark.parametrize(("chars", "handed_over"), [(5_000, 0), (300_000, 3)])
def test_only_a_large_result_hands_the_gil_to_a_waiting_thread_between_its_passes(
    store: LocalArtifactStore, monkeypatch: pytest.MonkeyPatch, chars: int, handed_over: int
) -> None:
    # An event loop waits for one pass over a large result, not for the switch interval;
    # a small one never gives the GIL away (another thread could keep it for 5 ms).
    from budgetware.mcp import bound

    calls: list[None] = []
    monkeypatch.setattr(bound, "give_way", lambda: calls.append(None))
    outcome = bound_tool_result(text_result("x" * chars), budget=1_000, store=store)
    assert outcome.refs is not None
    assert len(calls) == handed_over


def test_input_result_is_never_modified(store: LocalArtifactStore) -> None:
    result = {"content": [{"type": "text", "text": "x" * 5_000}], "structuredContent": {}}
    before = dumps_bytes(result)
    bound_tool_result(result, budget=100, store=store)
    assert dumps_bytes(result) == before


def test_failed_persistence_bounds_without_a_reference_and_records_decided(
    tmp_path: Path,
) -> None:
    store = FailingPutStore(tmp_path)
    outcome = bound_tool_result(text_result("x" * 5_000), budget=500, store=store)
    text = outcome.result["content"][0]["text"]
    assert len(text) <= 500
    assert outcome.refs == ()
    assert outcome.result["_meta"][META_ARTIFACTS] == []
    assert store.lookup_decision(text_key(text)) == ()


def test_persist_disabled_writes_no_artifact_and_records_decided(
    store: LocalArtifactStore,
) -> None:
    outcome = bound_tool_result(text_result("x" * 5_000), budget=500, store=store, persist=False)
    assert outcome.refs == ()
    assert not list(store.directory.glob("*.txt"))
    assert store.lookup_decision(text_key(outcome.result["content"][0]["text"])) == ()


def test_escape_heavy_text_is_still_brought_under_the_message_limit(
    store: LocalArtifactStore,
) -> None:
    # Control characters take six bytes each in JSON: chars alone would overshoot.
    result = text_result("\x01" * 400_000)
    outcome = bound_tool_result(result, budget=0, store=store)
    assert len(dumps_bytes(outcome.result)) <= DEFAULT_MAX_MESSAGE_BYTES


def test_media_alone_over_the_limit_becomes_an_error_result_naming_the_whole(
    store: LocalArtifactStore,
) -> None:
    image = {"type": "image", "data": "A" * 2_000_000, "mimeType": "image/png"}
    outcome = bound_tool_result({"content": [image]}, budget=10_000, store=store)
    assert len(dumps_bytes(outcome.result)) <= DEFAULT_MAX_MESSAGE_BYTES
    assert outcome.result["isError"] is True
    (ref,) = outcome.refs
    assert ref in outcome.result["content"][0]["text"]
    assert Path(ref).read_bytes() == dumps_bytes({"content": [image]})


def test_nested_structured_strings_are_cut_and_keys_and_types_kept(
    store: LocalArtifactStore,
) -> None:
    structured = {"rows": [{"id": "r1", "body": "b" * 50_000}], "total": 1, "ok": True}
    result = {"content": [], "structuredContent": structured}
    outcome = bound_tool_result(result, budget=2_000, store=store)
    new = outcome.result["structuredContent"]
    assert new["total"] == 1
    assert new["ok"] is True
    assert new["rows"][0]["id"] == "r1"
    assert len(new["rows"][0]["body"]) <= 2_000


def test_budget_for_prefers_server_tool_then_server_then_tool_then_default() -> None:
    config = BudgetConfig(
        mcp_result_budget=100,
        mcp_tools={"t": 200, "db_*": 250},
        mcp_servers={"s": McpServerBudget(result_budget=300, tools={"t": 400})},
    )
    assert result_budget_for(config, "s", "t") == 400
    assert result_budget_for(config, "s", "u") == 300
    assert result_budget_for(config, "other", "t") == 200
    assert result_budget_for(config, None, "db_query") == 250
    assert result_budget_for(config, None, None) == 100


def test_defaults_are_documented_values() -> None:
    config = BudgetConfig()
    assert config.mcp_result_budget == DEFAULT_RESULT_BUDGET == 100_000
    assert config.mcp_max_message_bytes == DEFAULT_MAX_MESSAGE_BYTES == 1024 * 1024


def test_budget_reads_the_environment() -> None:
    env = {
        "BUDGETWARE_MCP_RESULT_BUDGET": "5000",
        "BUDGETWARE_MCP_TOOLS": '{"big": 10}',
        "BUDGETWARE_MCP_SERVERS": '{"srv": {"result_budget": 20}}',
    }
    config = BudgetConfig.from_env(env)
    assert result_budget_for(config, None, None) == 5_000
    assert result_budget_for(config, None, "big") == 10
    assert result_budget_for(config, "srv", None) == 20


def test_a_bad_environment_value_names_the_setting() -> None:
    with pytest.raises(ConfigError, match=r"mcp_tools \(BUDGETWARE_MCP_TOOLS\)"):
        BudgetConfig.from_env({"BUDGETWARE_MCP_TOOLS": "{not json"})


def test_importing_budgetware_and_the_mcp_integration_pulls_in_no_sdk() -> None:
    code = (
        "import sys, budgetware, budgetware.http.hooks, budgetware.integrations.mcp\n"
        "print(','.join(m for m in ('httpx', 'httpx2', 'mcp') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""


def test_a_missing_sdk_raises_an_import_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "httpx2", None)
    with pytest.raises(ImportError, match=r'pip install "budgetware\[mcp\]"'):
        budget_http_client()
