"""Packaging: the built wheel holds every module of the tree, integrations/ included.

An editable install hides a package the build forgets; a wheel built from the tree does
not. The wheel is built once per session, without dependencies or build isolation (the
test environment already has setuptools).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TREES = {"budgetware": "budgetware", "integrations": "budgetware/integrations"}


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    out = tmp_path_factory.mktemp("wheel")
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run([*build, "-w", str(out), str(ROOT)], check=True, capture_output=True)
    (wheel,) = out.glob("budgetware-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def tree_files(pattern: str) -> set[str]:
    """Every file of the source trees matching ``pattern``, by its path inside the wheel."""
    found = set()
    for folder, inside in TREES.items():
        for path in (ROOT / folder).rglob(pattern):
            if "__pycache__" not in path.parts:
                found.add(f"{inside}/{path.relative_to(ROOT / folder).as_posix()}")
    return found


def test_every_module_of_the_tree_is_in_the_wheel(wheel_names: set[str]) -> None:
    modules = tree_files("*.py")
    assert len(modules) > 50
    assert not sorted(modules - wheel_names)


def test_the_wheel_marks_the_package_typed(wheel_names: set[str]) -> None:
    assert "budgetware/py.typed" in wheel_names


def test_the_wheel_holds_nothing_but_the_package(wheel_names: set[str]) -> None:
    tops = {name.split("/")[0] for name in wheel_names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"budgetware"}
