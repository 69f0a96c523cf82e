"""docs/configuration.md lists every setting and environment variable, as the models say.

Its tables are generated (scripts/gen-config-docs); these tests fail when a field, a
description or a default changed without regenerating, and when the code reads a
``BUDGETWARE_*`` variable that no model and no registry entry accounts for.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import Field

from budgetware.core.config import BudgetConfig
from budgetware.core.environment import STANDALONE

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "configuration.md"
REGENERATE = "run scripts/gen-config-docs"
# A variable name as code writes it; not a prefix (BUDGETWARE_MCP_*) or a placeholder.
VARIABLE = re.compile(r"\bBUDGETWARE_[A-Z0-9_]+(?![A-Z0-9_*<])")


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("config_docs", ROOT / "scripts/config_docs.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_matches_the_models(generator: ModuleType) -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert generator.render(page) == page, (
        f"docs/configuration.md is out of date with the configuration models: {REGENERATE}"
    )


def test_every_field_and_variable_has_a_row() -> None:
    page = PAGE.read_text(encoding="utf-8")
    for name in BudgetConfig.model_fields:
        assert f"| `{name}` | `BUDGETWARE_{name.upper()}` |" in page, REGENERATE
    for variable in STANDALONE:
        assert f"| `{variable.name}` |" in page, REGENERATE
    assert len(BudgetConfig.model_fields) + len(STANDALONE) >= 14


def _documented() -> set[str]:
    return set(VARIABLE.findall(PAGE.read_text(encoding="utf-8")))


def _used_in_code() -> dict[str, set[str]]:
    """Every ``BUDGETWARE_*`` name written in the package's source -> files using it."""
    used: dict[str, set[str]] = {}
    for folder in ("budgetware", "integrations"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "environment.py" and path.parent.name == "core":
                continue  # the registry itself
            for name in VARIABLE.findall(path.read_text(encoding="utf-8")):
                used.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return used


def test_every_variable_the_code_names_is_documented() -> None:
    missing = {
        name: sorted(files) for name, files in _used_in_code().items() if name not in _documented()
    }
    assert not missing, (
        f"{missing}: a variable read outside BudgetConfig goes in STANDALONE "
        f"in budgetware/core/environment.py; then {REGENERATE}"
    )


def test_every_registered_variable_is_used() -> None:
    used = _used_in_code()
    stale = [variable.name for variable in STANDALONE if variable.name not in used]
    assert not stale, f"{stale} are in budgetware/core/environment.py but no code reads them"
    for variable in STANDALONE:
        assert (ROOT / "docs" / variable.docs).is_file(), variable


def test_a_new_field_is_picked_up_without_touching_the_generator(
    generator: ModuleType,
) -> None:
    class Extended(BudgetConfig):
        retention_days: int = Field(30, description="Delete artifacts unused this long.")
        store_url: str | None = Field(None, description="Where | to store.")

    table = generator.model_table(Extended, "BUDGETWARE_")
    assert (
        "| `retention_days` | `BUDGETWARE_RETENTION_DAYS` | integer | `30` "
        "| Delete artifacts unused this long. |" in table
    )
    assert "| `store_url` | `BUDGETWARE_STORE_URL` | text | unset | Where \\| to store. |" in table
    assert table.count("\n") == len(Extended.model_fields) + 1


def test_a_stale_page_is_reported_with_the_command(generator: ModuleType) -> None:
    page = PAGE.read_text(encoding="utf-8")
    stale = page.replace("`BUDGETWARE_BATCH_BUDGET`", "`BUDGETWARE_OLD_NAME`", 1)
    assert generator.render(stale) == page
    with pytest.raises(SystemExit, match="no '<!-- BEGIN budget-config -->'"):
        generator.render(page.replace("<!-- END budget-config -->", ""))
