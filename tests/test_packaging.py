"""Packaging: the sdist holds the sources, tests and docs; the wheel built from it holds
every module of the tree, integrations/ included, and true metadata.

An editable install hides a package the build forgets; a wheel does not. Both are built
once per module, as ``python -m build`` does (the sdist, then the wheel from the sdist),
without build isolation (the test environment has setuptools), from a copy of the tree so
that nothing is written into the checkout. scripts/ci-package goes further: an isolated
build, ``twine check --strict``, and the installed wheel run from outside the repository.
"""

from __future__ import annotations

import ast
import email
import email.message
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

# One worker builds the sdist and the wheel once for the whole module (scripts/test).
pytestmark = pytest.mark.xdist_group("packaging")

ROOT = Path(__file__).resolve().parent.parent
TREES = {"budgetware": "budgetware", "integrations": "budgetware/integrations"}
# What the build reads, and the folders the sdist carries (MANIFEST.in).
SHIPPED_FOLDERS = ("budgetware", "integrations", "tests", "docs", "examples", "benchmarks")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "results")


def _version() -> str:
    """``__version__`` as written in budgetware/__init__.py (the one place)."""
    tree = ast.parse((ROOT / "budgetware" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            assert isinstance(node.value, ast.Constant)
            return str(node.value.value)
    raise AssertionError("no __version__ in budgetware/__init__.py")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    source = tmp_path_factory.mktemp("source")
    for entry in ROOT.iterdir():
        if entry.is_dir() and entry.name in (*SHIPPED_FOLDERS, "scripts"):
            shutil.copytree(entry, source / entry.name, ignore=SKIP)
        elif entry.is_file() and not entry.name.startswith("."):
            shutil.copy2(entry, source / entry.name)
    out = tmp_path_factory.mktemp("dist")
    command = [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), "."]
    done = subprocess.run(command, cwd=source, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (sdist,) = out.glob("budgetware-*.tar.gz")
    (wheel,) = out.glob("budgetware-*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture(scope="module")
def wheel_names(built: dict[str, Path]) -> set[str]:
    with zipfile.ZipFile(built["wheel"]) as archive:
        return set(archive.namelist())


@pytest.fixture(scope="module")
def metadata(built: dict[str, Path]) -> email.message.Message:
    with zipfile.ZipFile(built["wheel"]) as archive:
        name = f"budgetware-{_version()}.dist-info/METADATA"
        return email.message_from_bytes(archive.read(name))


@pytest.fixture(scope="module")
def sdist_names(built: dict[str, Path]) -> set[str]:
    with tarfile.open(built["sdist"]) as archive:
        prefix = f"budgetware-{_version()}/"
        return {m.name.removeprefix(prefix) for m in archive.getmembers() if m.isfile()}


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


def test_the_wheel_holds_the_inspectors_page(wheel_names: set[str]) -> None:
    # budgetware inspect and report --html serve these files, and nothing from a network.
    page = {f"budgetware/cli/static/inspect.{kind}" for kind in ("html", "css", "js")}
    assert page == tree_files("static/*") & page
    assert page <= wheel_names


def test_the_wheel_holds_nothing_but_the_package(wheel_names: set[str]) -> None:
    tops = {name.split("/")[0] for name in wheel_names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"budgetware"}
    assert f"budgetware-{_version()}.dist-info/licenses/LICENSE" in wheel_names


def test_the_sdist_holds_sources_tests_docs_and_license(sdist_names: set[str]) -> None:
    for name in ("LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml", "setup.py"):
        assert name in sdist_names
    for folder in SHIPPED_FOLDERS:
        files = {
            path.relative_to(ROOT).as_posix()
            for path in (ROOT / folder).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and "results" not in path.parts
        }
        assert files, folder
        assert not sorted(files - sdist_names), folder
    assert "scripts/test" in sdist_names
    assert not [n for n in sdist_names if "__pycache__" in n or n.startswith(".venv/")]


def test_the_metadata_is_true(metadata: email.message.Message) -> None:
    assert metadata["Version"] == _version()
    assert metadata["Requires-Python"] == ">=3.10"
    assert metadata["License-Expression"] == "MIT"
    assert metadata["License-File"] == "LICENSE"
    classifiers = set(metadata.get_all("Classifier") or [])
    # Every minor version from the floor up to the newest the CI matrix tests is claimed.
    for minor in range(10, 14):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    assert "Typing :: Typed" in classifiers
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL") or [])
    assert {"Homepage", "Documentation", "Source", "Issues", "Changelog"} <= set(urls)
    assert metadata["Description-Content-Type"] == "text/markdown"
    # google-genai 3 needs Python 3.11: its extra must not make 3.10 unresolvable.
    requires = metadata.get_all("Requires-Dist") or []
    (genai,) = [r for r in requires if r.startswith("google-genai")]
    assert 'python_version >= "3.11"' in genai
    # Exact token units need tiktoken alone; litellm's vocabulary files are used when present.
    assert [r.split(";")[0] for r in requires if r.endswith('extra == "tokens"')] == [
        "tiktoken>=0.7"
    ]


def test_the_wheel_registers_the_command_and_the_pytest_plugin(
    built: dict[str, Path], wheel_names: set[str]
) -> None:
    import configparser

    with zipfile.ZipFile(built["wheel"]) as archive:
        text = archive.read(f"budgetware-{_version()}.dist-info/entry_points.txt").decode()
    entry_points = configparser.ConfigParser()
    entry_points.read_string(text)
    assert dict(entry_points["console_scripts"]) == {"budgetware": "budgetware.__main__:main"}
    # Installing budgetware registers its pytest plugin (docs/pytest.md), from the wheel.
    assert dict(entry_points["pytest11"]) == {
        "budgetware": "budgetware.integrations.pytest_plugin"
    }
    assert "budgetware/integrations/pytest_plugin/__init__.py" in wheel_names


def test_the_wheels_testing_package_is_the_fake_provider_alone(
    built: dict[str, Path], wheel_names: set[str]
) -> None:
    # budgetware.testing ships what a user's tests import (docs/pytest.md): every module
    # under it is reached from its __init__; the suite's own helpers live in tests/.
    modules = {n for n in wheel_names if n.startswith("budgetware/testing/") and n.endswith(".py")}
    with zipfile.ZipFile(built["wheel"]) as archive:
        reached: set[str] = set()
        todo = ["budgetware/testing/__init__.py"]
        while todo:
            name = todo.pop()
            if name in reached:
                continue
            reached.add(name)
            for node in ast.walk(ast.parse(archive.read(name))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "budgetware.testing"
                ):
                    base = node.module.replace(".", "/")  # type: ignore[union-attr]
                    todo += [c for c in (f"{base}.py", f"{base}/__init__.py") if c in modules]
                    todo += [
                        f"{base}/{a.name}.py"
                        for a in node.names
                        if f"{base}/{a.name}.py" in modules
                    ]
    assert reached == modules
