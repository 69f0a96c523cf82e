"""Configuration: one validated model, environment variables, and per-request overrides."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from pathlib import Path

import pytest
from pydantic import ValidationError

from budgetware import BudgetConfig, ConfigError, budget
from budgetware.core.config import default_artifact_dir, resolve_config


def test_defaults() -> None:
    config = BudgetConfig()
    assert config.batch_budget == 200_000
    assert config.unit == "chars"
    assert config.persist is True
    assert config.max_artifact_bytes == 50 * 1024 * 1024
    assert config.max_store_bytes == 500 * 1024 * 1024


def test_environment_variables_are_read() -> None:
    config = BudgetConfig.from_env(
        {
            "BUDGETWARE_BATCH_BUDGET": "1234",
            "BUDGETWARE_UNIT": "utf8_bytes",
            "BUDGETWARE_PERSIST": "false",
            "BUDGETWARE_ARTIFACT_DIR": "/tmp/bw",
        }
    )
    assert (config.batch_budget, config.unit, config.persist) == (1234, "utf8_bytes", False)
    assert config.artifact_dir == Path("/tmp/bw")


def test_an_invalid_environment_value_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="BUDGETWARE_BATCH_BUDGET"):
        BudgetConfig.from_env({"BUDGETWARE_BATCH_BUDGET": "lots"})


def test_an_invalid_value_fails_at_construction_naming_the_setting() -> None:
    with pytest.raises(ValidationError, match="unit"):
        BudgetConfig(unit="words")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="max_artifact_bytes"):
        BudgetConfig(max_artifact_bytes=0)
    with pytest.raises(ValidationError, match="batch_budgt"):
        BudgetConfig(batch_budgt=1)  # type: ignore[call-arg]


def test_default_artifact_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg/cache")
    assert default_artifact_dir() == Path("/xdg/cache/budgetware/artifacts")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert default_artifact_dir() == Path.home() / ".cache" / "budgetware" / "artifacts"


def test_precedence_is_env_then_config_then_budget_block_then_request() -> None:
    env = {"BUDGETWARE_BATCH_BUDGET": "10", "BUDGETWARE_UNIT": "utf8_bytes"}
    base = BudgetConfig(batch_budget=20)
    assert resolve_config(base, environ=env).batch_budget == 20
    assert resolve_config(base, environ=env).unit == "utf8_bytes"  # not set on base
    with budget(batch_budget=30):
        assert resolve_config(base, environ=env).batch_budget == 30
        assert (
            resolve_config(base, environ=env, request_overrides={"batch_budget": 40}).batch_budget
            == 40
        )
    assert resolve_config(None, environ={}).batch_budget == 200_000


def test_budget_blocks_nest_and_restore() -> None:
    with budget(batch_budget=5, persist=False):
        with budget(batch_budget=7):
            config = resolve_config(environ={})
            assert (config.batch_budget, config.persist) == (7, False)
        assert resolve_config(environ={}).batch_budget == 5
    assert resolve_config(environ={}).batch_budget == 200_000


def test_budget_rejects_unknown_or_invalid_settings_where_written() -> None:
    with pytest.raises(ConfigError, match="batch_budgt"), budget(batch_budgt=5):
        pass
    with pytest.raises(ConfigError, match="unit"), budget(unit="lines"):
        pass


def test_budget_stays_in_its_own_thread() -> None:
    seen: dict[str, int] = {}
    barrier = threading.Barrier(2)

    def worker(name: str, value: int) -> None:
        with budget(batch_budget=value):
            barrier.wait()
            seen[name] = resolve_config(environ={}).batch_budget

    threads = [threading.Thread(target=worker, args=(n, v)) for n, v in (("a", 1), ("b", 2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"a": 1, "b": 2}


def test_budget_follows_copied_context_into_a_thread() -> None:
    seen: list[int] = []
    with budget(batch_budget=99):
        ctx = contextvars.copy_context()
    thread = threading.Thread(
        target=ctx.run, args=(lambda: seen.append(resolve_config(environ={}).batch_budget),)
    )
    thread.start()
    thread.join()
    assert seen == [99]


async def test_budget_is_per_asyncio_task() -> None:
    async def job(value: int) -> int:
        with budget(batch_budget=value):
            await asyncio.sleep(0.01)
            return resolve_config(environ={}).batch_budget

    assert await asyncio.gather(job(1), job(2), job(3)) == [1, 2, 3]
