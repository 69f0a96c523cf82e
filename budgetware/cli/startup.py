"""The start-up hook's work in each process of ``budgetware run``: ``instrument()`` the
moment the program first imports ``httpx`` or ``httpx2``, so a process that sends no HTTP
loads nothing of budgetware's. Imports nothing heavy (the import hook is duck-typed)."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any

__all__ = ["HTTP_LIBRARIES", "start"]

HTTP_LIBRARIES = ("httpx", "httpx2")


def _instrument() -> None:
    try:
        from budgetware.http.instrument import instrument

        instrument()
    except Exception as exc:  # never break the program's own import of httpx
        detail = (str(exc).strip() or "no detail").splitlines()[0]
        sys.stderr.write(
            f"budgetware run: budgetware could not start ({type(exc).__name__}: "
            f"{detail}); this program runs unbounded\n"
        )


class _ChainedLoader:
    """The real loader of a watched module, then ``after()`` once the module is executed."""

    def __init__(self, loader: Any, after: Callable[[], None]) -> None:
        self._loader = loader
        self._after = after

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._after()

    def __getattr__(self, name: str) -> Any:  # create_module, resource readers, get_code, ...
        return getattr(self._loader, name)


class _FirstImport:
    """A ``sys.meta_path`` finder: calls ``after()`` right after the first of ``names`` is
    imported, then steps aside."""

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
        spec.loader = _ChainedLoader(spec.loader, self._fire)  # type: ignore[assignment]
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


def _log_to_stderr(level: str) -> None:
    """``budgetware run --log-level``: the budgetware logger's lines on stderr."""
    import logging

    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s: %(message)s"))
    logger = logging.getLogger("budgetware")
    logger.setLevel(level)
    logger.addHandler(handler)


def start() -> None:
    """Instrument now, or when an HTTP library is first imported."""
    level = os.environ.get("BUDGETWARE_RUN_LOG_LEVEL")
    if level:
        _log_to_stderr(level)
    if any(name in sys.modules for name in HTTP_LIBRARIES):
        _instrument()
        return
    sys.meta_path.insert(0, _FirstImport(HTTP_LIBRARIES, _instrument))
