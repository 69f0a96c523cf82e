"""The ``BUDGETWARE_*`` variables that are not settings (docs/configuration.md lists them;
a test fails on any other name in the code), and warnings for unknown ones."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "PREFIX",
    "STANDALONE",
    "EnvironmentVariable",
    "ignored_variables",
    "version",
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
    EnvironmentVariable(
        "BUDGETWARE_RUN_SESSION",
        "unset",
        "Set by `budgetware run`: the session id its processes share in the session log "
        "(docs/inspect.md). Not for users.",
        "inspect.md",
    ),
    EnvironmentVariable(
        "BUDGETWARE_RUN_LOG_LEVEL",
        "unset",
        "Set by `budgetware run --log-level`: the level of the `budgetware` logger, written "
        "to stderr. Not for users.",
        "run.md",
    ),
)


def _named() -> frozenset[str]:
    """Every variable named by ``BudgetConfig`` or this registry."""
    from budgetware.core.config import BudgetConfig

    fields = (PREFIX + name.upper() for name in BudgetConfig.model_fields)
    return frozenset((*fields, *(variable.name for variable in STANDALONE)))


def ignored_variables(names: Iterable[str]) -> list[str]:
    """The warning for each ``BUDGETWARE_*`` name among ``names`` that budgetware does not
    read, sorted, naming the closest known variable (a likely typo) where there is one."""
    known = _named()
    unknown = sorted(
        name for name in set(names) if name.startswith(PREFIX) and name.upper() not in known
    )
    if not unknown:
        return []
    import difflib

    # Without the shared prefix, or every name would be close to every other.
    choices = sorted(name[len(PREFIX) :] for name in known)
    said = []
    for name in unknown:
        close = difflib.get_close_matches(name[len(PREFIX) :].upper(), choices, n=1)
        hint = f" (did you mean {PREFIX}{close[0]}?)" if close else ""
        said.append(f"ignoring {name}: not a budgetware setting{hint}")
    return said


def version() -> str:
    """The installed distribution's version (``budgetware/__init__.py`` is its source)."""
    from importlib import metadata

    try:
        return metadata.version("budgetware")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown (not installed)"
