"""The docs hold together: README links that work on the package index, a site navigation
that is the README's Documentation list, a changelog others can add to.

The site itself is built with ``mkdocs build --strict`` by scripts/docs (CI runs it).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPOSITORY = "https://github.com/budgetware/budgetware"
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.fixture(scope="module")
def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "scripts/mkdocs_hooks.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_links_work_on_the_package_index() -> None:
    # The package index renders the README without the repository around it: a relative
    # link there leads nowhere. Links into this repository must name existing files.
    for target in LINK.findall((ROOT / "README.md").read_text(encoding="utf-8")):
        assert target.startswith(("https://", "http://", "#")), (
            f"README.md links to {target!r}: write {REPOSITORY}/blob/main/{target} "
            "(relative links break on the package index)"
        )
        for kind in ("blob", "tree"):
            prefix = f"{REPOSITORY}/{kind}/main/"
            if target.startswith(prefix):
                path = target[len(prefix) :].split("#", 1)[0]
                assert (ROOT / path).exists(), f"README.md links to a missing {path}"


def test_every_docs_page_is_in_the_readme_list_once(hooks: ModuleType) -> None:
    listed = hooks.pages(hooks.navigation(hooks.readme()))
    assert len(listed) == len(set(listed)), listed
    on_disk = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert sorted(listed) == on_disk, (
        "the README's Documentation list is the docs site's navigation: "
        f"list {sorted(set(on_disk) - set(listed))}, drop {sorted(set(listed) - set(on_disk))}"
    )


def test_the_navigation_follows_the_readme_order(hooks: ModuleType) -> None:
    readme = """# x

## Documentation

1. [Quickstart](https://github.com/budgetware/budgetware/blob/main/docs/quickstart.md): go
2. SDKs: [each SDK](docs/sdks.md), [MCP](docs/mcp.md#usage),
   [ACP](docs/acp.md)
3. [Display projection](docs/projection.md), [diagnostics](docs/diagnostics.md)

## Development
"""
    assert hooks.navigation(readme) == [
        {"Quickstart": "quickstart.md"},
        {"SDKs": [{"Each SDK": "sdks.md"}, {"MCP": "mcp.md"}, {"ACP": "acp.md"}]},
        {"Display projection": "projection.md"},
        {"Diagnostics": "diagnostics.md"},
    ]
    home = hooks.home_page(readme)
    assert "](quickstart.md)" in home
    assert REPOSITORY not in home


def test_the_changelog_has_an_unreleased_section() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "https://keepachangelog.com/" in text
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert headings[0] == "[Unreleased]"
    for heading in headings[1:]:
        assert re.fullmatch(r"\[\d+\.\d+\.\d+\] - \d{4}-\d{2}-\d{2}", heading), heading


def test_the_license_is_mit_as_declared() -> None:
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert 'license = "MIT"' in (ROOT / "pyproject.toml").read_text()
