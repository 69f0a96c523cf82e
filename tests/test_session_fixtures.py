"""Each session fixture is defined once: one server per worker, not one per module."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent


def _is_session_fixture(decorator: ast.expr) -> bool:
    if not isinstance(decorator, ast.Call):
        return False
    name = ast.unparse(decorator.func)
    return name.endswith("fixture") and any(
        k.arg == "scope" and isinstance(k.value, ast.Constant) and k.value.value == "session"
        for k in decorator.keywords
    )


def test_no_session_fixture_is_imported_into_another_module() -> None:
    # An imported fixture is a fixture of its own in each module or conftest that imports
    # it, and a session fixture is then set up once per importer: moto's server was
    # started 16 times a run that way. Register such fixtures once, as a plugin of the
    # root conftest (pytest_plugins), and let tests request them by name.
    texts = {path: path.read_text() for path in TESTS.rglob("*.py")}
    # Only files that name a session scope can define a session fixture (parsing every file
    # of the suite took more than a second).
    trees = {path: ast.parse(text) for path, text in texts.items() if "session" in text}
    fixtures: dict[str, set[str]] = {}
    for path, tree in trees.items():
        module = ".".join(path.relative_to(TESTS).with_suffix("").parts)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(
                _is_session_fixture(d) for d in node.decorator_list
            ):
                fixtures.setdefault(module, set()).add(node.name)
    assert "s3_server" in fixtures  # the check sees the fixtures it guards
    # Only files that name one of those modules can import from it.
    trees = {
        path: trees.get(path) or ast.parse(text)
        for path, text in texts.items()
        if any(module.rpartition(".")[2] in text for module in fixtures)
    }
    imported = sorted(
        f"{path.relative_to(TESTS)}: {alias.name} from {node.module}"
        for path, tree in trees.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module in fixtures
        for alias in node.names
        if alias.name in fixtures[node.module]
    )
    assert imported == []
