"""What the start-up hook does in each Python process of ``budgetware run``.

1. **Check the settings** (``BUDGETWARE_*``, which ``budgetware run`` sets from its
   options) when there are any: a user mistake ends the program before it starts, with one
   line on stderr naming the option or variable and exit code 2. Plain values of simple
   settings (``--batch-budget 50000``, ``--unit tokens``, ``--no-persist``, an artifact
   directory of this user's, or one yet to be made) are seen to be valid without loading
   pydantic; anything else is validated by ``BudgetConfig`` itself, which writes every
   error message, and a store on this machine by ``check_store``. A ``BUDGETWARE_*``
   variable budgetware does not read (a typo: ``BATCHBUDGET`` for ``BATCH_BUDGET``) gets
   one warning line, from the first process that checks, and the program runs. A process
   whose settings were already checked by the process that started it (same values) skips
   this.
2. **Instrument when an HTTP library arrives**: ``instrument()`` runs the moment the
   program first imports ``httpx`` or ``httpx2``, before any client exists, exactly as it
   would have patched them from the first line. Until then nothing of budgetware's HTTP
   layer is loaded, so a Python process that sends no HTTP (a tool the agent runs, a build
   step) starts as fast as without budgetware.

Imports nothing heavy at module level (not even ``typing`` or ``importlib.abc``: the finder
and the loader below are duck-typed, as ``sys.meta_path`` allows).
"""

from __future__ import annotations

import os
import sys

from budgetware.cli.variables import (
    BOOLEAN_SETTINGS,
    OPTIONS_VARIABLE,
    OWN_VARIABLES,
    VALIDATED_VARIABLE,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any, NoReturn

    from budgetware.core.config import BudgetConfig

__all__ = ["HTTP_LIBRARIES", "check_settings", "plainly_valid", "start", "unknown_options"]

HTTP_LIBRARIES = ("httpx", "httpx2")
_PREFIX = "BUDGETWARE_"


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"budgetware run: {message}\n")
    sys.stderr.flush()
    os._exit(2)  # before the program started: nothing of it to clean up


def _settings() -> list[tuple[str, str]]:
    return sorted(
        (key, value)
        for key, value in os.environ.items()
        if key.startswith(_PREFIX) and key not in OWN_VARIABLES
    )


def _signature(settings: list[tuple[str, str]]) -> str:
    import hashlib

    text = "\0".join(f"{key}={value}" for key, value in settings)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


# --- values that are surely valid, seen without pydantic ----------------------------------


def _digits(value: str, low: int, high: int | None = None) -> bool:
    text = value[1:] if value.startswith("-") else value
    if not (0 < len(text) <= 18 and text.isascii() and text.isdigit()):
        return False
    number = int(value)
    return number >= low and (high is None or number <= high)


def _private_directory(value: str) -> bool:
    """Whether ``store/select.check_store`` surely accepts ``value`` as the artifact
    directory (``store/files.plainly_private``, on the path as BudgetConfig resolves it).
    Anything else (a file, a directory another user owns or can write) goes to the full
    check, which names it."""
    if not value.strip():
        return False
    from budgetware.store.files import plainly_private  # no typing, no pydantic

    try:
        path = os.path.abspath(value)
    except ValueError:  # a NUL in the value
        return False
    return plainly_private(path)


_NO_LIMIT = -(10**18)
_BOOLEAN = ("true", "false", "1", "0").__contains__
_PLAIN: dict[str, Callable[[str], bool]] = {
    "batch_budget": lambda v: _digits(v, _NO_LIMIT),
    "unit": lambda v: v in ("chars", "utf8_bytes", "tokens"),
    "max_artifact_bytes": lambda v: _digits(v, 1),
    "max_store_bytes": lambda v: _digits(v, 1),
    "preview_salient_percent": lambda v: _digits(v, 0, 90),
    # Any path but one to expand (``~user`` may name no one): BudgetConfig decides those.
    # A place check_store surely accepts. ``~user`` may name no one: BudgetConfig decides.
    "artifact_dir": lambda v: not v.lstrip().startswith("~") and _private_directory(v),
    **dict.fromkeys(BOOLEAN_SETTINGS, _BOOLEAN),
}


def plainly_valid(settings: list[tuple[str, str]], given: list[str]) -> bool:
    """Whether every variable is a simple setting with a value ``BudgetConfig`` surely
    accepts (and every option given names one). Never decides that something is wrong:
    anything else goes to ``BudgetConfig``, so every error message is the model's own."""
    if any(name not in _PLAIN for name in given):
        return False
    for key, value in settings:
        check = _PLAIN.get(key[len(_PREFIX) :].lower())
        if check is None or not key[len(_PREFIX) :].isupper() or not check(value):
            return False
    return True


def unknown_options(options: Sequence[str], fields: Iterable[str]) -> str:
    """The message for options of ``budgetware run`` that name no setting (``fields``)."""
    valid = ", ".join("--" + name.replace("_", "-") for name in fields)
    listed = ", ".join(options)
    return f"unknown option {listed} (settings: {valid}; see 'budgetware run --help')"


def check_settings() -> None:
    """Validate the settings in the environment, once per set of values (see module doc)."""
    settings = _settings()
    if not settings:
        return
    given = [name for name in os.environ.get(OPTIONS_VARIABLE, "").split(",") if name]
    if plainly_valid(settings, given):
        return
    signature = _signature(settings)
    if os.environ.get(VALIDATED_VARIABLE) == signature:
        return
    from budgetware.core.config import BudgetConfig, ConfigError

    fields = BudgetConfig.model_fields
    unknown = ["--" + name.replace("_", "-") for name in given if name not in fields]
    if unknown:
        _fail(unknown_options(unknown, fields))
    try:
        _check_store(BudgetConfig.from_env())
    except ConfigError as exc:
        message = str(exc)
        for name in given:  # name the option the user typed, not the variable it became
            message = message.replace(
                f"({'BUDGETWARE_' + name.upper()})", f"(--{name.replace('_', '-')})"
            )
        _fail(message)
    if VALIDATED_VARIABLE not in os.environ:  # the first process to check: said once a run
        _warn_unknown(settings)
    os.environ[VALIDATED_VARIABLE] = signature


def _check_store(config: BudgetConfig) -> None:
    """``check_store`` for a store on this machine (an artifact directory, or an
    ``artifact_store`` path or ``file://`` URL): a file, or a directory another user owns or
    can write, ends the program before it starts. An ``s3://`` store is left to
    ``instrument()``: no network and no boto3 client at start-up."""
    from budgetware.store.files import plainly_accepted

    if plainly_accepted(config, s3_later=True):
        return
    from budgetware.store.select import check_store

    check_store(config)


def _warn_unknown(settings: list[tuple[str, str]]) -> None:
    """One line per ``BUDGETWARE_*`` variable budgetware does not read (a typo, most
    likely): it is ignored, and the program runs."""
    from budgetware.core.environment import ignored_variables

    for said in ignored_variables(key for key, _ in settings):
        sys.stderr.write(f"budgetware run: {said}\n")
    sys.stderr.flush()


def _instrument() -> None:
    try:
        from budgetware.http.instrument import instrument

        instrument()
    except Exception as exc:  # never break the program's own import of httpx
        sys.stderr.write(
            f"budgetware run: budgetware could not start ({type(exc).__name__}: "
            f"{_first_line(exc)}); this program runs unbounded\n"
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "no detail"


class _ChainedLoader:
    """The real loader of a watched module, then ``after()`` once the module is executed."""

    def __init__(self, loader: Any, after: Callable[[], None]) -> None:
        self._loader = loader
        self._after = after

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._after()

    def __getattr__(self, name: str) -> Any:  # resource readers, get_code, ...
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


def start() -> None:
    """Check the settings, then instrument now or when an HTTP library is first imported."""
    check_settings()
    if any(name in sys.modules for name in HTTP_LIBRARIES):
        _instrument()
        return
    sys.meta_path.insert(0, _FirstImport(HTTP_LIBRARIES, _instrument))
