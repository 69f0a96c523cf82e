"""The architecture holds: no import cycles, and every layer imports only the layers below it.

Reads the import statements of every module under ``budgetware/`` and ``integrations/``
(which ships as ``budgetware.integrations``), wherever they sit: at the top, inside a
function (lazy imports) or under ``TYPE_CHECKING``. docs/architecture.md documents the order.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# One worker reads the sources once (graph() below) for every test of the module.
pytestmark = pytest.mark.xdist_group("layers")

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {"budgetware": ROOT / "budgetware", "budgetware.integrations": ROOT / "integrations"}

# Lowest first. A layer may import the layers before it, never one after it or beside it
# (mcp and display share a rank: neither imports the other). ``testing`` (the fake
# provider) imports nothing of budgetware; the facade (budgetware/__init__.py and the public
# modules beside it) and __main__ sit above everything.
ORDER: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("store",),
    ("retrieval",),
    ("tools",),
    ("wire",),
    ("diagnostics",),
    ("http",),
    ("mcp", "display", "telemetry"),
    ("integrations",),
    ("cli",),
)
STANDALONE = {"testing"}
# The facade: the front door, its lazily loaded names, and the public modules beside it.
TOP = {
    "budgetware",
    "budgetware._api",
    "budgetware.__main__",
    "budgetware.finalizer",
    "budgetware.types",
}


def _module_name(package: str, root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def modules() -> dict[str, Path]:
    """Every module of the distribution, by its import name."""
    found: dict[str, Path] = {}
    for package, root in SOURCES.items():
        for path in sorted(root.rglob("*.py")):
            found[_module_name(package, root, path)] = path
    return found


def _imported(name: str, path: Path, known: set[str]) -> Iterator[str]:
    """The budgetware modules that ``name`` (at ``path``) imports."""
    is_package = path.name == "__init__.py"
    here = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            # `from package import module` imports the submodule; `from module import name`
            # imports the module.
            targets = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                for alias in node.names
            ]
        elif _is_dynamic_import(node):
            # importlib.import_module("budgetware.x") / __import__("budgetware.x"): a
            # dependency all the same (cli names integrations this way, for mypy).
            targets = [node.args[0].value]  # type: ignore[attr-defined]
        else:
            continue
        for target in targets:
            if target == "budgetware" or target.startswith("budgetware."):
                # `import budgetware.x.y` depends on the deepest module that exists.
                while target not in known and "." in target:
                    target = target.rpartition(".")[0]
                if target != name:
                    yield target


def _is_dynamic_import(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or not node.args:
        return False
    first = node.args[0]
    if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in ("__import__", "import_module")
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


@functools.cache
def graph() -> dict[str, set[str]]:
    """Every module's budgetware imports: the sources read once (the tests only read it)."""
    found = modules()
    known = set(found)
    return {name: set(_imported(name, path, known)) for name, path in found.items()}


def layer_of(module: str) -> str:
    if module in TOP:
        return "top"
    return module.split(".")[1]  # the folder; a loose module's own name is no layer


def _rank() -> dict[str, int]:
    return {layer: index for index, layers in enumerate(ORDER) for layer in layers}


def test_every_module_lives_in_a_layer() -> None:
    loose = [
        name
        for name in modules()
        if name not in TOP and layer_of(name) not in _rank() and layer_of(name) not in STANDALONE
    ]
    assert not loose, f"modules outside every layer folder (see docs/architecture.md): {loose}"


def test_there_are_no_import_cycles() -> None:
    edges = graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                cycles.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_each_layer_imports_only_the_layers_below_it() -> None:
    rank = _rank()
    wrong: list[str] = []
    for module, targets in graph().items():
        layer = layer_of(module)
        if layer == "top":
            continue
        for target in targets:
            other = layer_of(target)
            if other == layer:
                continue
            if layer in STANDALONE:
                allowed = False
            elif other in STANDALONE:
                allowed = layer == "cli"  # the demo runs against the fake provider
            elif other == "top":
                allowed = False  # the facade imports every layer: importing it is a cycle
            else:
                allowed = rank[other] < rank[layer]
            if not allowed:
                wrong.append(f"{module} ({layer}) imports {target} ({other})")
    assert not wrong, "imports against the layer order:\n" + "\n".join(sorted(wrong))


def test_the_http_layer_does_not_know_mcp() -> None:
    for module, targets in graph().items():
        if layer_of(module) == "http":
            assert not any(layer_of(t) == "mcp" for t in targets), module


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from budgetware.core import observe\n", {"budgetware.core.observe"}),
        ("from budgetware.core.config import BudgetConfig\n", {"budgetware.core.config"}),
        ("import budgetware.wire.body\n", {"budgetware.wire.body"}),
        ("def f():\n    from budgetware.http import hooks\n", {"budgetware.http.hooks"}),
        ("from . import _callback\n", {"budgetware.integrations.litellm._callback"}),
        ("from ..openai import x\n", {"budgetware.integrations.openai"}),
        (
            "import importlib\nimportlib.import_module('budgetware.wire.body')\n",
            {"budgetware.wire.body"},
        ),
        (
            "from importlib import import_module\nimport_module('budgetware.core')\n",
            {"budgetware.core"},
        ),
        ("__import__('budgetware.http.hooks')\n", {"budgetware.http.hooks"}),
    ],
)
def test_the_import_reader_sees_every_form(
    tmp_path: Path, source: str, expected: set[str]
) -> None:
    path = tmp_path / "proxy.py"
    path.write_text(source)
    found = set(_imported("budgetware.integrations.litellm.proxy", path, set(modules())))
    assert found == expected


def test_a_cycle_would_be_found(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = {"budgetware.core.a": {"budgetware.core.b"}, "budgetware.core.b": {"budgetware.core.a"}}
    monkeypatch.setattr(sys.modules[__name__], "graph", lambda: fake)
    with pytest.raises(AssertionError, match="import cycles"):
        test_there_are_no_import_cycles()


def test_an_import_against_the_order_would_be_found(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = {
        "budgetware.core.fit": {"budgetware.http.transport"},  # the core reaching up
        "budgetware.http.transport": {"budgetware.core.fit"},
    }
    monkeypatch.setattr(sys.modules[__name__], "graph", lambda: fake)
    with pytest.raises(AssertionError, match=r"core\.fit \(core\) imports .*transport \(http\)"):
        test_each_layer_imports_only_the_layers_below_it()


def test_the_order_is_the_one_docs_architecture_states() -> None:
    """The one-sentence rule in docs/architecture.md and ORDER above are the same order."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    rule = next(line for line in text.splitlines() if "core ← store" in line)
    stated = rule[rule.index("`") + 1 : rule.rindex("`")]
    ranks = tuple(tuple(part.strip() for part in rank.split("|")) for rank in stated.split("←"))
    assert ranks == ORDER, f"docs/architecture.md says {stated!r}"
