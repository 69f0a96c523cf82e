"""Packaging: every integrations/ folder ships as a budgetware.integrations subpackage."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent


def test_every_integration_folder_is_a_listed_package() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(pyproject["tool"]["setuptools"]["packages"])
    folders = {
        f"budgetware.integrations.{p.name}"
        for p in (ROOT / "integrations").iterdir()
        if p.is_dir() and not p.name.startswith((".", "_"))
    }
    assert folders <= listed
    for name in {n for n in listed if n.startswith("budgetware.integrations.")}:
        folder = ROOT / "integrations" / name.removeprefix("budgetware.integrations.")
        assert (folder / "__init__.py").is_file(), f"{name} has no __init__.py"
