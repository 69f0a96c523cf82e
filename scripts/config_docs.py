"""Write the settings tables of docs/configuration.md from the configuration models.

Run it as ``scripts/gen-config-docs`` (``--check``: only say whether the page is current).

The tables sit between ``<!-- BEGIN name ... -->`` and ``<!-- END name -->`` markers; the
prose around them is written by hand. Sources: every field of ``BudgetConfig``
(``BUDGETWARE_<FIELD>``), and the registry of other variables,
``budgetware.core.environment.STANDALONE``. A new field
appears here with no change to this script: its type, default and ``description`` make
its row, so write the description for the reader of the docs.
"""

from __future__ import annotations

import argparse
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from budgetware.core.config import ENV_PREFIX, BudgetConfig
from budgetware.core.environment import STANDALONE

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "configuration.md"
COMMAND = "scripts/gen-config-docs"
MIB = 1024 * 1024
# Fields whose names end so are in seconds: their defaults also show as 30d, 1h, 10m.
SECONDS = ("_age", "_interval", "_timeout", "_seconds")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def describe_type(annotation: Any) -> str:
    """A reader's name for a field's type: ``integer``, ``path``, ```a`, `b```, ..."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:  # Count, Number: the type with its validators
        return describe_type(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return ", ".join(f"`{value}`" for value in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        # Optional[X] is X that may be left unset.
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return " or ".join(describe_type(a) for a in args)
    if origin in (dict, typing.Mapping) or annotation is dict:
        return "JSON object"
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple):
        return "JSON array"
    names = {bool: "boolean", int: "integer", float: "number", str: "text", Path: "path"}
    if annotation in names:
        return names[annotation]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "JSON object"
    return f"`{getattr(annotation, '__name__', annotation)}`"


def describe_default(name: str, field: FieldInfo) -> str:
    """The default as one would write it in the environment, sizes also in MiB."""
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    else:
        value = field.default
    if value is None or value == {} or value == [] or value == ():
        return "unset"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and "bytes" in name and value >= MIB and value % MIB == 0:
        return f"`{value}` ({value // MIB} MiB)"
    if isinstance(value, int) and name.endswith(SECONDS) and value >= 60:
        return f"`{value}` ({_duration(value)})"
    return f"`{value}`"


def _duration(seconds: int) -> str:
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def model_table(model: type[BaseModel], prefix: str) -> str:
    rows = [
        "| setting | environment variable | type | default | meaning |",
        "|---|---|---|---|---|",
    ]
    for name, field in model.model_fields.items():
        rows.append(
            f"| `{name}` | `{prefix}{name.upper()}` | {_cell(describe_type(field.annotation))} "
            f"| {_cell(describe_default(name, field))} | {_cell(field.description or '')} |"
        )
    return "\n".join(rows)


def standalone_table() -> str:
    rows = ["| environment variable | default | meaning |", "|---|---|---|"]
    for variable in sorted(STANDALONE, key=lambda v: v.name):
        meaning = f"{variable.meaning} See [{variable.docs}]({variable.docs})."
        rows.append(f"| `{variable.name}` | {variable.default} | {_cell(meaning)} |")
    return "\n".join(rows)


def sections() -> dict[str, tuple[str, str]]:
    """``name -> (source, generated markdown)`` for every generated part of the page."""
    return {
        "budget-config": ("budgetware.BudgetConfig", model_table(BudgetConfig, ENV_PREFIX)),
        "environment": ("budgetware/core/environment.py", standalone_table()),
    }


def _block(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"<!-- BEGIN {re.escape(name)}\b[^\n]*-->\n(?:.*?\n)?(<!-- END {re.escape(name)} -->)",
        re.DOTALL,
    )


def render(page: str) -> str:
    """``page`` with every generated part rewritten from the models."""
    for name, (source, table) in sections().items():
        pattern = _block(name)
        if not pattern.search(page):
            raise SystemExit(
                f"{PAGE.relative_to(ROOT)} has no '<!-- BEGIN {name} -->' ... "
                f"'<!-- END {name} -->' block for the table generated from {source}"
            )
        begin = f"<!-- BEGIN {name}: generated by {COMMAND} from {source}; do not edit -->\n"
        page = pattern.sub(lambda m, b=begin, t=table: f"{b}{t}\n{m.group(1)}", page, count=1)
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    current = PAGE.read_text(encoding="utf-8")
    wanted = render(current)
    if args.check:
        if wanted != current:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    if wanted != current:
        PAGE.write_text(wanted, encoding="utf-8")
        print(f"updated {PAGE.relative_to(ROOT)}")
    else:
        print(f"{PAGE.relative_to(ROOT)} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
