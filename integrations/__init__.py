"""Per-SDK integrations of budgetware, each importing its client library lazily."""

import importlib
from typing import Any


def require(module: str, extra: str) -> Any:
    """``module``, imported; if it cannot be, an ImportError naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        hint = f'budgetware needs {module} here ({exc}): pip install "budgetware[{extra}]"'
        raise ImportError(hint, name=exc.name) from exc
