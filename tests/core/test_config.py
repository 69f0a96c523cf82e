"""Configuration: one validated model, environment variables, and per-request overrides."""

from __future__ import annotations

import asyncio
import contextvars
import os
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


def test_store_settings_take_durations_and_urls() -> None:
    config = BudgetConfig.from_env(
        {
            "BUDGETWARE_ARTIFACT_MAX_AGE": "14d",
            "BUDGETWARE_ARTIFACT_MIN_AGE": "2h",
            "BUDGETWARE_ARTIFACT_SWEEP_INTERVAL": "5m",
            "BUDGETWARE_ARTIFACT_STORE_TIMEOUT": "1.5",
            "BUDGETWARE_ARTIFACT_STORE": "s3://my-bucket/agents/prod/",
        }
    )
    assert config.artifact_max_age == 14 * 86400
    assert config.artifact_min_age == 7200
    assert config.artifact_sweep_interval == 300
    assert config.artifact_store_timeout == 1.5
    location = config.store_location()
    assert (location.scheme, location.bucket, location.prefix) == (
        "s3",
        "my-bucket",
        "agents/prod/",
    )


def test_store_defaults_keep_a_month_and_protect_an_hour() -> None:
    config = BudgetConfig()
    assert config.artifact_store is None
    assert config.artifact_max_age == 30 * 86400
    assert config.artifact_min_age == 3600
    assert config.artifact_sweep_interval == 600


@pytest.mark.parametrize(
    ("url", "path"),
    [("/srv/artifacts", "/srv/artifacts"), ("file:///srv/a%20b", "/srv/a b")],
)
def test_a_path_or_file_url_is_a_local_store(url: str, path: str) -> None:
    location = BudgetConfig(artifact_store=url).store_location()
    assert (location.scheme, location.path) == ("file", path)


def test_artifact_store_wins_over_artifact_dir(tmp_path: Path) -> None:
    config = BudgetConfig(artifact_dir=tmp_path / "dir", artifact_store=str(tmp_path / "url"))
    assert config.store_location().path == str(tmp_path / "url")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("BUDGETWARE_ARTIFACT_MAX_AGE", "a month"),
        ("BUDGETWARE_ARTIFACT_MIN_AGE", "-1"),
        ("BUDGETWARE_ARTIFACT_SWEEP_INTERVAL", "often"),
        ("BUDGETWARE_ARTIFACT_STORE", "gs://bucket/p"),
    ],
)
def test_a_bad_store_setting_names_its_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        BudgetConfig.from_env({variable: value})


def test_max_age_below_min_age_is_refused() -> None:
    with pytest.raises(ConfigError, match="artifact_max_age"):
        BudgetConfig.from_env(
            {"BUDGETWARE_ARTIFACT_MAX_AGE": "1h", "BUDGETWARE_ARTIFACT_MIN_AGE": "2h"}
        )


def test_settings_read_from_os_environ_are_what_a_plain_mapping_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # os.environ is read through its own store of encoded names (os.environ.get of a missing
    # name raises inside, for every field, on every request): the same values, at once.
    from budgetware.core.config import env_values

    monkeypatch.setenv("BUDGETWARE_BATCH_BUDGET", "1234")
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", "/tmp/caf\u00e9-\udcff")  # not UTF-8 on disk
    monkeypatch.delenv("BUDGETWARE_UNIT", raising=False)
    seen = env_values(os.environ)
    assert seen == env_values(dict(os.environ))
    assert seen["batch_budget"] == "1234"
    assert "unit" not in seen
    assert seen["artifact_dir"] == "/tmp/caf\u00e9-\udcff"
    monkeypatch.setenv("BUDGETWARE_UNIT", "chars")
    monkeypatch.delenv("BUDGETWARE_BATCH_BUDGET")
    seen = env_values(os.environ)
    assert seen["unit"] == "chars"
    assert "batch_budget" not in seen
    assert seen == env_values(dict(os.environ))
