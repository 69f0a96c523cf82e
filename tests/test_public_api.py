"""The public namespace is flat, sorted and exactly the documented names."""

from __future__ import annotations

import subprocess
import sys

import budgetware


def test_all_is_sorted() -> None:
    assert budgetware.__all__ == sorted(budgetware.__all__)


def test_all_is_exactly_the_public_names() -> None:
    budgetware.instrument  # noqa: B018  (the first public name loads them all)
    public = {name for name in vars(budgetware) if not name.startswith("_")}
    # Submodules imported as attributes are not API, except the documented `testing` helper.
    modules = {name for name in public if type(getattr(budgetware, name)).__name__ == "module"}
    assert set(budgetware.__all__) - {"__version__"} == public - modules


def test_every_exported_name_resolves() -> None:
    for name in budgetware.__all__:
        assert getattr(budgetware, name) is not None


def test_import_pulls_in_no_sdk_and_no_http_library() -> None:
    code = (
        "import sys, budgetware\n"
        "bad = [m for m in ('httpx', 'httpx2', 'openai', 'anthropic', 'google.genai', 'litellm',"
        " 'mcp', 'acp', 'mistralai', 'ollama', 'cohere', 'aiohttp') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""


def test_import_alone_loads_no_public_name_and_no_pydantic() -> None:
    # `budgetware run` and the CLI start fast: the names load on first use.
    code = (
        "import sys, budgetware\n"
        "print(sorted(m for m in ('pydantic', 'budgetware._api', 'budgetware.core.config')"
        " if m in sys.modules))\n"
        "budgetware.finalize_body\n"
        "print('budgetware._api' in sys.modules, 'budgetware.mcp.http' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[:2] == ["[]", "True True"]


def test_dir_lists_every_public_name() -> None:
    assert set(budgetware.__all__) <= set(dir(budgetware))
