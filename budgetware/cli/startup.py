"""What the start-up hook does in each Python process of ``budgetware run``.

Validates the settings (``BUDGETWARE_*``, which ``budgetware run`` sets from its options),
then calls ``instrument()``. A user mistake ends the program before it starts: one line on
stderr naming the option or variable, exit code 2.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

__all__ = ["OPTIONS_VARIABLE", "start"]

OPTIONS_VARIABLE = "BUDGETWARE_RUN_OPTIONS"
"""The settings given as options to ``budgetware run`` (comma-separated field names)."""


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"budgetware run: {message}\n")
    sys.stderr.flush()
    os._exit(2)  # before the program started: nothing of it to clean up


def start() -> None:
    from budgetware.core.config import BudgetConfig, ConfigError
    from budgetware.http.instrument import instrument

    fields = BudgetConfig.model_fields
    given = [name for name in os.environ.get(OPTIONS_VARIABLE, "").split(",") if name]
    unknown = [name for name in given if name not in fields]
    if unknown:
        options = ", ".join("--" + name.replace("_", "-") for name in unknown)
        valid = ", ".join("--" + name.replace("_", "-") for name in fields)
        _fail(f"unknown option {options} (settings: {valid})")
    try:
        BudgetConfig.from_env()
        instrument()
    except ConfigError as exc:
        message = str(exc)
        for name in given:  # name the option the user typed, not the variable it became
            message = message.replace(
                f"({'BUDGETWARE_' + name.upper()})", f"(--{name.replace('_', '-')})"
            )
        _fail(message)
