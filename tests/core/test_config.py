"""Configuration: one validated model, environment variables, and per-request overrides."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from budgetware import BudgetConfig, ConfigError, ToolPolicy, budget
from budgetware.core.config import (
    current_overrides,
    environment_settings,
    resolve_config,
)


def test_defaults() -> None:
    config = BudgetConfig()
    assert config.batch_budget == 200_000
    assert config.unit == "chars"
    assert config.persist is True
    assert config.max_artifact_bytes == 50 * 1024 * 1024
    assert config.max_store_bytes == 500 * 1024 * 1024


def setenv(monkeypatch: pytest.MonkeyPatch, variables: dict[str, str]) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


def test_environment_variables_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    setenv(
        monkeypatch,
        {
            "BUDGETWARE_BATCH_BUDGET": "1234",
            "BUDGETWARE_UNIT": "utf8_bytes",
            "BUDGETWARE_PERSIST": "false",
            "BUDGETWARE_ARTIFACT_DIR": "/tmp/bw",
        },
    )
    config = BudgetConfig.from_env()
    assert (config.batch_budget, config.unit, config.persist) == (1234, "utf8_bytes", False)
    assert config.artifact_dir == Path("/tmp/bw")
    assert resolve_config() == config


def test_an_invalid_environment_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUDGETWARE_BATCH_BUDGET", "lots")
    with pytest.raises(ConfigError, match=r"batch_budget \(BUDGETWARE_BATCH_BUDGET\)"):
        BudgetConfig.from_env()
    with pytest.raises(ConfigError, match=r"batch_budget \(BUDGETWARE_BATCH_BUDGET\)"):
        resolve_config()


def test_an_invalid_value_fails_at_construction_naming_the_setting() -> None:
    with pytest.raises(ValidationError, match="unit"):
        BudgetConfig(unit="words")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="max_artifact_bytes"):
        BudgetConfig(max_artifact_bytes=0)
    with pytest.raises(ValidationError, match="batch_budgt"):
        BudgetConfig(batch_budgt=1)  # type: ignore[call-arg]


def test_default_artifact_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg/cache")
    assert BudgetConfig().store_location().path == "/xdg/cache/budgetware/artifacts"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    default = Path.home() / ".cache" / "budgetware" / "artifacts"
    assert BudgetConfig().store_location().path == str(default)


def test_precedence_is_env_then_config_then_budget_block_then_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    setenv(monkeypatch, {"BUDGETWARE_BATCH_BUDGET": "10", "BUDGETWARE_UNIT": "utf8_bytes"})
    base = BudgetConfig(batch_budget=20)
    assert resolve_config(base).batch_budget == 20
    assert resolve_config(base).unit == "utf8_bytes"  # not set on base
    with budget(batch_budget=30):
        assert resolve_config(base).batch_budget == 30
        assert resolve_config(base, request_overrides={"batch_budget": 40}).batch_budget == 40
    monkeypatch.delenv("BUDGETWARE_BATCH_BUDGET")
    assert resolve_config(None).batch_budget == 200_000


def test_budget_blocks_nest_and_restore() -> None:
    with budget(batch_budget=5, persist=False):
        with budget(batch_budget=7):
            config = resolve_config()
            assert (config.batch_budget, config.persist) == (7, False)
        assert resolve_config().batch_budget == 5
    assert resolve_config().batch_budget == 200_000


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
            seen[name] = resolve_config().batch_budget

    threads = [threading.Thread(target=worker, args=(n, v)) for n, v in (("a", 1), ("b", 2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"a": 1, "b": 2}


# Read after the block ended, with no entry point in the process: it warns (rightly, at exit).
@pytest.mark.filterwarnings("ignore:budgetware. a budget.. block ended")
def test_budget_follows_copied_context_into_a_thread() -> None:
    seen: list[int] = []
    with budget(batch_budget=99):
        ctx = contextvars.copy_context()
    thread = threading.Thread(
        target=ctx.run, args=(lambda: seen.append(resolve_config().batch_budget),)
    )
    thread.start()
    thread.join()
    assert seen == [99]


async def test_budget_is_per_asyncio_task() -> None:
    async def job(value: int) -> int:
        with budget(batch_budget=value):
            await asyncio.sleep(0.01)
            return resolve_config().batch_budget

    assert await asyncio.gather(job(1), job(2), job(3)) == [1, 2, 3]


def test_store_settings_take_durations_and_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    setenv(
        monkeypatch,
        {
            "BUDGETWARE_ARTIFACT_MAX_AGE": "14d",
            "BUDGETWARE_ARTIFACT_MIN_AGE": "2h",
            "BUDGETWARE_ARTIFACT_SWEEP_INTERVAL": "5m",
            "BUDGETWARE_ARTIFACT_STORE_TIMEOUT": "1.5",
            "BUDGETWARE_ARTIFACT_STORE": "s3://my-bucket/agents/prod/",
        },
    )
    config = BudgetConfig.from_env()
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
def test_a_bad_store_setting_names_its_variable(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=variable):
        BudgetConfig.from_env()


def test_max_age_below_min_age_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    setenv(monkeypatch, {"BUDGETWARE_ARTIFACT_MAX_AGE": "1h", "BUDGETWARE_ARTIFACT_MIN_AGE": "2h"})
    with pytest.raises(ConfigError, match=r"artifact_max_age \(BUDGETWARE_ARTIFACT_MAX_AGE\)"):
        BudgetConfig.from_env()
    # While calls are in flight, the bad one is left out and the rest applies.
    assert resolve_config(lenient=True).artifact_min_age == 7200


def test_the_environment_is_read_again_when_a_variable_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BUDGETWARE_BATCH_BUDGET", "1234")
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", "/tmp/caf\u00e9-\udcff")  # not UTF-8 on disk
    monkeypatch.delenv("BUDGETWARE_UNIT", raising=False)
    seen = environment_settings()
    assert seen is environment_settings()  # unchanged: not read again
    assert seen["batch_budget"] == "1234"
    assert "unit" not in seen
    assert seen["artifact_dir"] == "/tmp/caf\u00e9-\udcff"
    assert resolve_config().artifact_dir == Path("/tmp/caf\u00e9-\udcff")
    monkeypatch.setenv("BUDGETWARE_UNIT", "utf8_bytes")
    monkeypatch.delenv("BUDGETWARE_BATCH_BUDGET")
    seen = environment_settings()
    assert seen["unit"] == "utf8_bytes"
    assert "batch_budget" not in seen
    config = resolve_config()
    assert (config.unit, config.batch_budget) == ("utf8_bytes", 200_000)


def _number_fields() -> list[tuple[type[BaseModel], str]]:
    # Every int or float field of every configuration model, nested ones included: a new
    # number setting is covered here without a change.
    from budgetware.core.config import McpServerBudget, McpToolPolicy

    found = []
    for model in (BudgetConfig, ToolPolicy, McpServerBudget, McpToolPolicy):
        for name, field in model.model_fields.items():
            types = typing.get_args(field.annotation) or (field.annotation,)
            # Optional[Annotated[int, ...]] keeps the Annotated inside the union.
            types = tuple(
                typing.get_args(t)[0] if typing.get_origin(t) is typing.Annotated else t
                for t in types
            )
            if {int, float} & set(types):
                found.append((model, name))
    return found


NUMBER_FIELDS = _number_fields()


def test_every_number_setting_is_found() -> None:
    names = {name for model, name in NUMBER_FIELDS if model is BudgetConfig}
    assert names == {
        "batch_budget",
        "max_artifact_bytes",
        "max_store_bytes",
        "artifact_max_age",
        "artifact_min_age",
        "artifact_sweep_interval",
        "artifact_store_timeout",
        "preview_salient_percent",
        "mcp_result_budget",
        "mcp_max_message_bytes",
        "history_budget",
        "history_keep_batches",
        "history_step",
    }
    assert len(NUMBER_FIELDS) == len(names) + 4  # 3 min_room and result_budget of the others


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize(
    ("model", "name"), NUMBER_FIELDS, ids=[f"{m.__name__}.{n}" for m, n in NUMBER_FIELDS]
)
def test_a_number_setting_refuses_true_and_false(
    model: type[BaseModel], name: str, flag: bool
) -> None:
    # pydantic's lax int and float take True and False as 1 and 0.
    with pytest.raises(ValidationError, match=r"a number, not True/False"):
        model.model_validate({name: flag})


@pytest.mark.parametrize("flag", [True, False])
def test_budget_refuses_a_boolean_budget_where_written(flag: bool) -> None:
    with (
        pytest.raises(ConfigError, match=r"batch_budget: a number, not True/False"),
        budget(batch_budget=flag),
    ):
        pass  # pragma: no cover
    with (
        pytest.raises(ConfigError, match=r"tool_policies.t.min_room: a number, not True/False"),
        budget(tool_policies={"t": {"min_room": flag}}),
    ):
        pass  # pragma: no cover
    with pytest.raises(ConfigError, match="artifact_max_age"):
        BudgetConfig.from_env(artifact_max_age=flag)
    assert current_overrides() == {}


def test_mcp_number_settings_refuse_booleans_as_config_errors() -> None:
    for overrides in (
        {"mcp_result_budget": True},
        {"mcp_max_message_bytes": False},
        {"mcp_tools": {"t": True}},
        {"mcp_tools": {"t": {"min_room": True}}},
        {"mcp_servers": {"s": {"result_budget": True}}},
    ):
        with pytest.raises(ConfigError, match="a number, not True/False"):
            BudgetConfig.from_env(**overrides)


def test_numbers_and_their_strings_still_validate(monkeypatch: pytest.MonkeyPatch) -> None:
    setenv(
        monkeypatch,
        {
            "BUDGETWARE_BATCH_BUDGET": "5000",
            "BUDGETWARE_MAX_STORE_BYTES": "1000000",
            "BUDGETWARE_ARTIFACT_MAX_AGE": "30d",
            "BUDGETWARE_ARTIFACT_STORE_TIMEOUT": "0.5",
            "BUDGETWARE_MCP_RESULT_BUDGET": "10",
        },
    )
    config = BudgetConfig.from_env()
    assert (config.batch_budget, config.max_store_bytes) == (5000, 1_000_000)
    assert (config.artifact_max_age, config.artifact_store_timeout) == (30 * 86400, 0.5)
    assert config.mcp_result_budget == 10
    monkeypatch.setenv("BUDGETWARE_BATCH_BUDGET", "inf")
    assert BudgetConfig.from_env().batch_budget == 0
    assert BudgetConfig(batch_budget=float("inf")).batch_budget == 0
    config = BudgetConfig(batch_budget=7, artifact_max_age=7200, artifact_store_timeout=1)
    assert (config.batch_budget, config.artifact_max_age) == (7, 7200.0)
    with budget(batch_budget=123, tool_policies={"t": {"min_room": 5}}):
        assert resolve_config().batch_budget == 123


VARIABLES = (
    "BUDGETWARE_BATCH_BUDGET",
    "BUDGETWARE_PERSIST",
    "BUDGETWARE_UNIT",
    "BUDGETWARE_MCP_RESULT_BUDGET",
    "BUDGETWARE_MCP_MAX_MESSAGE_BYTES",
    "BUDGETWARE_MCP_TOOLS",
    "BUDGETWARE_MCP_SERVERS",
)


@pytest.mark.parametrize("value", ["", " ", "\t \n"])
def test_an_empty_environment_variable_is_unset(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `export BUDGETWARE_BATCH_BUDGET=` clears a setting.
    setenv(monkeypatch, dict.fromkeys(VARIABLES, value))
    names = {variable.removeprefix("BUDGETWARE_").lower() for variable in VARIABLES}
    assert not names & set(environment_settings())
    config = BudgetConfig.from_env()
    assert {name: getattr(config, name) for name in names} == {
        name: getattr(BudgetConfig(), name) for name in names
    }
    assert resolve_config().batch_budget == 200_000
    with budget(batch_budget=9):  # checks the environment too: no error
        assert resolve_config().batch_budget == 9


NO_SUCH_USER = "~budgetware-no-such-user/artifacts"


def test_a_home_directory_of_no_user_is_a_config_error_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # It was a bare RuntimeError from Path.expanduser, out of instrument() too.
    from budgetware.http.instrument import instrument

    with pytest.raises(ValidationError, match="artifact_dir"):
        BudgetConfig(artifact_dir=NO_SUCH_USER)
    with pytest.raises(ValidationError, match="artifact_store"):
        BudgetConfig(artifact_store=NO_SUCH_USER)
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", NO_SUCH_USER)
    with pytest.raises(ConfigError, match=r"artifact_dir \(BUDGETWARE_ARTIFACT_DIR\)"):
        instrument()


@pytest.mark.parametrize(
    ("word", "value"),
    [(w, True) for w in ("1", "true", "yes", "on", "TRUE")]
    + [(w, False) for w in ("0", "false", "no", "off", "Off")],
)
def test_a_boolean_variable_takes_the_usual_words(
    word: str, value: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUDGETWARE_PERSIST", word)
    monkeypatch.setenv("BUDGETWARE_PREVIEW_TOOL_HINT", word)
    config = resolve_config()
    assert (config.persist, config.preview_tool_hint) == (value, value)


def test_a_typo_in_an_mcp_variable_gets_a_did_you_mean() -> None:
    from budgetware.core.environment import ignored_variables

    assert ignored_variables(["BUDGETWARE_MCP_TOOL", "BUDGETWARE_MCP_TOOLS"]) == [
        "ignoring BUDGETWARE_MCP_TOOL: not a budgetware setting "
        "(did you mean BUDGETWARE_MCP_TOOLS?)"
    ]
