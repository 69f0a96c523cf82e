"""The docs hold together: README links that work on the package index, a site navigation
that is the README's Documentation list, a changelog others can add to, and Python blocks
that run.

The blocks themselves run in the docs run (tests/docs_run.py: Sybil, against the fake
provider); these tests hold the run to every block. The site itself is built with
``mkdocs build --strict`` by scripts/docs (CI runs it).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import re
import shlex
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPOSITORY = "https://github.com/budgetware/budgetware"
LINK = re.compile(r"\]\(([^)\s]+)\)")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# A fence opening (possibly inside a list item or a quote) and its info string.
FENCE = re.compile(r"^(?P<indent>[ \t]*(?:[-*+>]|\d+[.)])?[ \t]*)```(?P<info>[^`\n]*)$", re.M)
SKIP = re.compile(r"<!--+\s*skip:\s*(?P<action>\w+)(?P<rest>.*?)--+>", re.S)


def blocks(page: Path, languages: tuple[str, ...]) -> list[tuple[int, str]]:
    """(line, source) of every fenced block a page marks as one of ``languages``."""
    text = page.read_text(encoding="utf-8")
    found = []
    opening = None
    for match in FENCE.finditer(text):
        if opening is None:
            opening = match
            continue
        if opening.group("info").strip() in languages:
            body = text[opening.end() + 1 : match.start()]
            indent = len(opening.group("indent"))
            source = "\n".join(line[indent:] for line in body.splitlines())
            found.append((text.count("\n", 0, opening.start()) + 1, source))
        opening = None
    return found


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """(line, source) of every fenced block a page marks as Python."""
    return blocks(page, ("python", "py", "python3", "pycon"))


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


def test_the_docs_run_is_part_of_the_suite() -> None:
    # pytest with no arguments (scripts/test, .ci/run) collects the pages, and Sybil, which
    # runs them, is a test dependency.
    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'testpaths = ["tests", "README.md", "docs"]' in project
    assert '"sybil>=' in project
    assert 'PAGES = ("README.md", "docs/*.md")' in (ROOT / "tests/docs_run.py").read_text()
    assert '"docs_run"]' in (ROOT / "tests/conftest.py").read_text()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_python_block_is_python_the_run_collects(page: Path) -> None:
    # The run collects blocks fenced as ```python: another spelling would be left out of it
    # without a word. And a block the run skips must still be Python (top-level await
    # allowed, as in the run).
    for line, source in python_blocks(page):
        fence = page.read_text(encoding="utf-8").splitlines()[line - 1].strip()
        assert fence == "```python", f"{page.name}:{line}: write ```python, not {fence}"
        try:
            compile(source, f"{page.name}:{line}", "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        except SyntaxError as error:
            raise AssertionError(f"{page.name}:{line}: not Python: {error}") from None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_block_the_run_skips_says_why(page: Path) -> None:
    # <!-- skip: next "reason" --> (Sybil's marker): the reader sees the reason beside the
    # block, and the run reports it.
    for match in SKIP.finditer(page.read_text(encoding="utf-8")):
        if match.group("action") in ("next", "start"):
            reason = match.group("rest").strip()
            assert re.fullmatch(r'"[^"]{10,}"', reason), (
                f"{page.name}: {match.group(0)!r} needs its reason, in double quotes"
            )


def budgetware_commands() -> list[tuple[str, list[str]]]:
    """Every ``budgetware ...`` command line of the pages' shell blocks: (where, arguments)."""
    found = []
    for page in PAGES:
        for line, source in blocks(page, ("sh", "console", "bash", "shell")):
            # A line continued with a backslash is one command.
            for offset, text in enumerate(source.replace("\\\n", " ").splitlines(), start=1):
                words = shlex.split(text, comments=True)
                # The command word itself (after VAR=value assignments), not an argument
                # such as `pip install budgetware`.
                while words and (words[0] == "$" or ("=" in words[0] and words[0][0] != "-")):
                    words = words[1:]
                if words[:1] == ["budgetware"]:
                    found.append((f"{page.name}:{line + offset}", words[1:]))
    return found


def _help(argv: list[str]) -> str:
    from budgetware.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = main([*argv, "--help"])
        except SystemExit as done:  # argparse's own --help
            code = done.code
    assert code == 0, argv
    return out.getvalue()


@pytest.mark.parametrize(("where", "arguments"), budgetware_commands(), ids=lambda x: str(x))
def test_the_budgetware_commands_the_pages_show_exist(where: str, arguments: list[str]) -> None:
    # Each command a page shows is a command, and each option it gives budgetware (before
    # "--", after which the program's own begin) is one that command's --help lists.
    from budgetware.cli.main import COMMANDS

    own = arguments[: arguments.index("--")] if "--" in arguments else arguments
    assert own, f"{where}: no command"
    assert own[0] in COMMANDS, f"{where}: no command {own[0]!r}"
    helps = [_help(own[:1])]
    # A command with subcommands (budgetware artifacts) lists them as {a,b,...}.
    subcommands = re.search(r"\{([\w,-]+)\}", helps[0])
    for word in own[1:]:
        if subcommands and word in subcommands.group(1).split(","):
            helps.append(_help([own[0], word]))
    if own[0] == "run":  # any setting, as --<setting> (its --help lists the common ones)
        from budgetware import BudgetConfig

        helps += [f"--{name.replace('_', '-')}" for name in BudgetConfig.model_fields]
    for word in own[1:]:
        if word.startswith("--"):
            option = re.compile(re.escape(word.split("=", 1)[0]) + r"(?![\w-])")
            assert any(option.search(text) for text in helps), f"{where}: {own[0]}: {word}?"
