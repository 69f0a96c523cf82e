"""Started by ``budgetware run``: ``instrument()`` before the program's first import.

Python imports ``sitecustomize`` at start-up; ``budgetware run`` puts this folder first on
``PYTHONPATH``, so this module runs in every Python process the command starts. It
instruments, then runs the ``sitecustomize`` it shadows (a virtualenv's, a distribution's,
opentelemetry-instrument's), under the same name, as Python would have. A Python without
budgetware runs unbounded (the program ``budgetware run`` started says so once); a bad
setting stops the program before it starts, with one line and exit code 2.
"""

import os
import sys


def _budgetware_run_start() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        from budgetware.cli.startup import start
    except ImportError:
        if os.environ.get("BUDGETWARE_RUN_MAIN") == str(os.getpid()):
            sys.stderr.write(
                f"budgetware run: budgetware is not installed for {sys.executable}; "
                "this program runs unbounded\n"
            )
    else:
        start()
    _chain(here)


def _chain(here: str) -> None:
    """Run the next ``sitecustomize`` on ``sys.path`` (after this folder), if there is one."""
    import importlib.machinery
    import importlib.util

    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module  # the program sees the one it would have had
    spec.loader.exec_module(module)


_budgetware_run_start()
