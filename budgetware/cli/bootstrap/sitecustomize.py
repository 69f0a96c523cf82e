"""Run by Python at start-up in every process ``budgetware run`` starts: ``instrument()``
before the program's first import, then the ``sitecustomize`` this one shadows.

A failure to start is one line on stderr and the program runs unbounded; budgetware starts
once per process, and other copies of this hook on ``PYTHONPATH`` are skipped.
"""

import os
import sys

# Marks a budgetware start-up hook (this file, or a copy of it): ``_chain`` skips them.
_MARK = b"_budgetware_run_start"
_STARTED = "_budgetware_run_started"  # set on ``sys``: one start per process


def _budgetware_run_start() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    if not getattr(sys, _STARTED, False):
        setattr(sys, _STARTED, True)
        _start()
    _chain(here)


def _start() -> None:
    try:
        from budgetware.cli.startup import start
    except ImportError:
        if os.environ.get("BUDGETWARE_RUN_MAIN") == str(os.getpid()):
            sys.stderr.write(
                f"budgetware run: budgetware is not installed for {sys.executable}; "
                "this program runs unbounded\n"
            )
        return
    try:
        start()
    except Exception as exc:
        sys.stderr.write(
            f"budgetware run: budgetware could not start ({type(exc).__name__}); "
            "this program runs unbounded\n"
        )


def _same(path: str, folder: str) -> bool:
    try:
        return os.path.realpath(path or os.curdir) == folder
    except (OSError, ValueError):
        return False


def _is_bootstrap(origin: str) -> bool:
    try:
        with open(origin, "rb") as file:
            return _MARK in file.read(65536)
    except OSError:
        return False


def _chain(here: str) -> None:
    """Run the next ``sitecustomize`` on ``sys.path`` that is not a budgetware hook."""
    import importlib.machinery
    import importlib.util

    skip = {os.path.realpath(here)}
    for _ in range(len(sys.path) + 1):
        path = [p for p in sys.path if not any(_same(p, folder) for folder in skip)]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
        if spec is None or spec.loader is None:
            return
        if spec.origin is not None and _is_bootstrap(spec.origin):
            skip.add(os.path.realpath(os.path.dirname(spec.origin)))
            continue
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module  # the program sees the one it would have had
        spec.loader.exec_module(module)
        return


_budgetware_run_start()
