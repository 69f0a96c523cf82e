"""What the start-up hook does in each Python process of ``budgetware run``.

1. **Check the settings** (``BUDGETWARE_*``, which ``budgetware run`` sets from its
   options) when there are any: a user mistake ends the program before it starts, with one
   line on stderr naming the option or variable and exit code 2. A process whose settings
   were already checked by the process that started it (same values) skips this.
2. **Instrument when an HTTP library arrives**: ``instrument()`` runs the moment the
   program first imports ``httpx`` or ``httpx2``, before any client exists, exactly as it
   would have patched them from the first line. Until then nothing of budgetware's HTTP
   layer is loaded, so a Python process that sends no HTTP (a tool the agent runs, a build
   step) starts as fast as without budgetware.

Imports nothing heavy at module level.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any, NoReturn

__all__ = ["OPTIONS_VARIABLE", "VALIDATED_VARIABLE", "start"]

OPTIONS_VARIABLE = "BUDGETWARE_RUN_OPTIONS"
"""The settings given as options to ``budgetware run`` (comma-separated field names)."""
VALIDATED_VARIABLE = "BUDGETWARE_RUN_CHECKED"
"""The settings (as one string) a process already checked, for the processes it starts."""
_OWN = (OPTIONS_VARIABLE, VALIDATED_VARIABLE, "BUDGETWARE_RUN_MAIN")
HTTP_LIBRARIES = ("httpx", "httpx2")


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"budgetware run: {message}\n")
    sys.stderr.flush()
    os._exit(2)  # before the program started: nothing of it to clean up


def _settings_signature() -> str:
    settings = [
        f"{key}={value}"
        for key, value in sorted(os.environ.items())
        if key.startswith("BUDGETWARE_") and key not in _OWN
    ]
    if not settings:
        return ""
    import hashlib

    return hashlib.sha256("\0".join(settings).encode("utf-8", "surrogateescape")).hexdigest()


def check_settings() -> None:
    """Validate the settings in the environment, once per set of values (see module doc)."""
    signature = _settings_signature()
    if not signature or os.environ.get(VALIDATED_VARIABLE) == signature:
        return
    from budgetware.core.config import BudgetConfig, ConfigError

    fields = BudgetConfig.model_fields
    given = [name for name in os.environ.get(OPTIONS_VARIABLE, "").split(",") if name]
    unknown = [name for name in given if name not in fields]
    if unknown:
        options = ", ".join("--" + name.replace("_", "-") for name in unknown)
        valid = ", ".join("--" + name.replace("_", "-") for name in fields)
        _fail(f"unknown option {options} (settings: {valid})")
    try:
        BudgetConfig.from_env()
    except ConfigError as exc:
        message = str(exc)
        for name in given:  # name the option the user typed, not the variable it became
            message = message.replace(
                f"({'BUDGETWARE_' + name.upper()})", f"(--{name.replace('_', '-')})"
            )
        _fail(message)
    os.environ[VALIDATED_VARIABLE] = signature


def _instrument() -> None:
    try:
        from budgetware.http.instrument import instrument

        instrument()
    except Exception as exc:  # never break the program's own import of httpx
        sys.stderr.write(
            f"budgetware run: budgetware could not start ({type(exc).__name__}); "
            "this program runs unbounded\n"
        )


class _ChainedLoader(Loader):
    """The real loader of a watched module, then ``after()`` once the module is executed."""

    def __init__(self, loader: Loader, after: Callable[[], None]) -> None:
        self._loader = loader
        self._after = after

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._after()

    def __getattr__(self, name: str) -> Any:  # resource readers, get_code, ...
        return getattr(self._loader, name)


class _FirstImport(MetaPathFinder):
    """Calls ``after()`` right after the first of ``names`` is imported, then steps aside."""

    def __init__(self, names: Sequence[str], after: Callable[[], None]) -> None:
        self.names = frozenset(names)
        self._after = after
        self._busy = False
        self._done = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if self._busy or self._done or fullname not in self.names:
            return None
        import importlib.util

        self._busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _ChainedLoader(spec.loader, self._fire)
        return spec

    def _fire(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        self._after()


def start() -> None:
    """Check the settings, then instrument now or when an HTTP library is first imported."""
    check_settings()
    if any(name in sys.modules for name in HTTP_LIBRARIES):
        _instrument()
        return
    sys.meta_path.insert(0, _FirstImport(HTTP_LIBRARIES, _instrument))
