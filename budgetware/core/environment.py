"""The registry of ``BUDGETWARE_*`` environment variables that are not settings.

Most variables need no entry here: every ``BudgetConfig`` field ``name`` is read from
``BUDGETWARE_<NAME>``, and docs/configuration.md lists them from the model. A variable
that a module reads on its own (a switch for diagnostics, say) is listed here instead,
once; ``scripts/gen-config-docs`` writes the table of docs/configuration.md from this list,
and a test fails on any ``BUDGETWARE_*`` name in the code that neither the model nor this
list accounts for. ``instrument()`` and ``budgetware run`` warn about any other
``BUDGETWARE_*`` variable they find set (``unknown_variables``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "PREFIX",
    "STANDALONE",
    "EnvironmentVariable",
    "ignored_variables",
    "unknown_variables",
]

PREFIX = "BUDGETWARE_"


@dataclass(frozen=True)
class EnvironmentVariable:
    """One environment variable read outside the configuration models."""

    name: str
    default: str
    meaning: str
    docs: str
    """The docs page (under docs/) that explains it."""


STANDALONE: tuple[EnvironmentVariable, ...] = (
    EnvironmentVariable(
        "BUDGETWARE_DEBUG_LOG_FILE",
        "off",
        "Write privacy-safe boundary events (sizes and keyed hashes, never content) to this "
        "file; '', '0', 'false', 'off' and 'no' mean off. Read back with "
        "`budgetware diagnose`.",
        "diagnostics.md",
    ),
    EnvironmentVariable(
        "BUDGETWARE_RECORD_DIR",
        "off",
        "Record the finalized tool-result text of every submitted request in this directory "
        "(it holds tool output in full: keep it private); '', '0', 'false', 'off' and 'no' "
        "mean off.",
        "diagnostics.md",
    ),
    EnvironmentVariable(
        "BUDGETWARE_MCP_SERVER_TOKEN",
        "unset",
        "`budgetware mcp-server --http`: every request must carry `Authorization: Bearer "
        "<token>` with this token (401 otherwise). Set it whenever the server is reachable "
        "from anything but this machine.",
        "retrieval.md",
    ),
    EnvironmentVariable(
        "BUDGETWARE_RUN_MAIN",
        "unset",
        "Set by `budgetware run`: the process id of the program it started, the one that "
        "says so when its Python has no budgetware. Not for users.",
        "run.md",
    ),
)


def _named() -> frozenset[str]:
    """Every variable named by ``BudgetConfig`` or this registry."""
    from budgetware.core.config import BudgetConfig

    fields = (PREFIX + name.upper() for name in BudgetConfig.model_fields)
    return frozenset((*fields, *(variable.name for variable in STANDALONE)))


def unknown_variables(names: Iterable[str]) -> list[tuple[str, str | None]]:
    """The ``BUDGETWARE_*`` names among ``names`` that budgetware does not read (none of
    ``BudgetConfig``'s or this registry's), sorted, each with the known variable closest to
    it (what a typo likely meant) or None. Imports pydantic."""
    known = _named()
    unknown = sorted(
        name for name in set(names) if name.startswith(PREFIX) and name.upper() not in known
    )
    if not unknown:
        return []
    import difflib  # only for a mistake: not on every start-up

    # Compared without the prefix they all share, or any name would be close to every one.
    choices = sorted(name[len(PREFIX) :] for name in known)
    found: list[tuple[str, str | None]] = []
    for name in unknown:
        close = difflib.get_close_matches(name[len(PREFIX) :].upper(), choices, n=1)
        found.append((name, PREFIX + close[0] if close else None))
    return found


def ignored_variables(names: Iterable[str]) -> list[str]:
    """What to say of each unknown ``BUDGETWARE_*`` name among ``names`` (``budgetware
    run`` and ``instrument()`` say the same): ``ignoring <name>: not a budgetware setting``,
    and ``(did you mean <closest variable>?)`` where one is close."""
    return [
        f"ignoring {name}: not a budgetware setting"
        + (f" (did you mean {close}?)" if close else "")
        for name, close in unknown_variables(names)
    ]
