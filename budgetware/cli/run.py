"""``budgetware run [options] -- <command ...>``: any Python program, bounded, unchanged.

As ``opentelemetry-instrument`` does: ``cli/bootstrap`` goes first on the child's
``PYTHONPATH`` and its ``sitecustomize`` instruments. Each ``--<setting> VALUE`` becomes
``BUDGETWARE_<SETTING>``; the settings are validated once here, then the command replaces
this process (``exec``; elsewhere a child). Imports nothing heavy unless a case needs it.
"""

from __future__ import annotations

import os
import sys

from budgetware.cli.errors import CliError, UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import NoReturn


__all__ = [
    "BOOTSTRAP_DIR",
    "MAIN_VARIABLE",
    "check_settings",
    "child_environment",
    "is_python_program",
    "main",
    "python_flags_skipping_the_hook",
]

BOOTSTRAP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap")

USAGE = """\
usage: budgetware run [options] -- <command> [args...]

Run a Python program with budgetware.instrument() active from its first line, without
changing its code: python agent.py, python -m package, or a console script.

options (any setting of docs/configuration.md, as --<setting> VALUE or --<setting>=VALUE):
  --batch-budget N        budget per batch of tool results (default 200000)
  --unit UNIT             chars, utf8_bytes or tokens
  --artifact-dir DIR      where full outputs are written
  --persist / --no-persist  (booleans: --<setting>, --no-<setting>, --<setting>=false)
  --session-log off       no session log (on by default: see 'budgetware report')
  -h, --help              show this help

run's own options:
  --report                print 'budgetware report' of this run when the program exits
  --log-level LEVEL       write the budgetware logger's lines from LEVEL up (info, debug)
                          to stderr

BUDGETWARE_* environment variables apply as well; options win over them.
"""

# Words a boolean option takes as its value (``--persist false --``); any other word after
# it is the command (``--persist python agent.py``).
_BOOLEAN_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0"})
OTEL_INSTRUMENT = "opentelemetry-instrument"
_PREFIX = "BUDGETWARE_"
MAIN_VARIABLE = _PREFIX + "RUN_MAIN"
"""The process id of the program started: the one that says so when its Python lacks
budgetware."""
SESSION_VARIABLE = _PREFIX + "RUN_SESSION"  # the session log's id, shared by the processes
LOG_LEVEL_VARIABLE = _PREFIX + "RUN_LOG_LEVEL"
_LOG_LEVELS = ("debug", "info", "warning", "error")


class Parsed:
    """What ``parse_command_line`` found: the settings, the command, the option words as
    typed, and run's own options."""

    def __init__(self, settings: dict[str, str], command: list[str], options: list[str]):
        self.settings = settings
        self.command = command
        self.options = options
        self.report = False
        self.log_level: str | None = None


def parse_command_line(argv: list[str]) -> Parsed | int:
    """The settings, the command and the option words, or 0 after printing the help."""
    args = list(argv)
    parsed = Parsed({}, args, [])  # the command: what is left of args after the options
    settings, options = parsed.settings, parsed.options
    while args:
        arg = args.pop(0)
        if arg == "--":
            break
        if arg in ("-h", "--help"):
            print(USAGE, end="")
            return 0
        if not arg.startswith("--"):
            args.insert(0, arg)  # the command starts here (no "--" given)
            break
        options.append(arg)
        name, equals, value = arg[2:].partition("=")
        setting = name.replace("-", "_").lower()
        if not name:
            raise UsageError(f"bad option {arg!r} (see 'budgetware run --help')")
        if name == "report" and not equals:
            parsed.report = True
        elif name == "log-level":
            if not equals:
                if not args or args[0].startswith("--"):
                    raise UsageError(f"{arg} needs a value (see 'budgetware run --help')")
                value = args.pop(0)
                options.append(value)
            if value.lower() not in _LOG_LEVELS:
                raise UsageError(f"--log-level: one of {', '.join(_LOG_LEVELS)}, not {value!r}")
            parsed.log_level = value.upper()
        elif equals:
            settings[setting] = value
        elif setting.startswith("no_") and setting[3:] in _boolean_settings():
            settings[setting[3:]] = "false"
        elif setting in _boolean_settings():
            # A flag: on, unless a boolean word follows; never the command's first word.
            if args and args[0].lower() in _BOOLEAN_WORDS:
                options.append(args[0])
                settings[setting] = args.pop(0)
            else:
                settings[setting] = "true"
        elif setting.startswith("no_"):
            flag = setting[3:].replace("_", "-")
            _refuse(arg, setting[3:], f"{arg}: {flag} is not an on/off setting (--{flag} VALUE)")
        elif args and not args[0].startswith("--"):
            options.append(args[0])
            settings[setting] = args.pop(0)
        else:  # no value: only a boolean setting is a flag
            _refuse(arg, setting, f"{arg} needs a value")
    if not args:
        raise UsageError("no command given (see 'budgetware run --help')")
    return parsed


def _boolean_settings() -> frozenset[str]:
    """The on/off settings (``--persist`` alone turns one on); none without the model."""
    try:
        from budgetware.core.config import BudgetConfig
    except ImportError:
        return frozenset()
    fields = BudgetConfig.model_fields.items()
    return frozenset(name for name, field in fields if field.annotation is bool)


def unknown_options(options: Iterable[str]) -> str:
    """The message for options that name no setting."""
    from budgetware.core.config import BudgetConfig

    valid = ", ".join("--" + name.replace("_", "-") for name in BudgetConfig.model_fields)
    listed = ", ".join(options)
    return f"unknown option {listed} (settings: {valid}; see 'budgetware run --help')"


def _refuse(option: str, setting: str, message: str) -> NoReturn:
    """A UsageError: "unknown option" if ``setting`` is no setting, else ``message`` and
    where to look."""
    from budgetware.core.config import BudgetConfig

    if setting not in BudgetConfig.model_fields:
        raise UsageError(unknown_options([option]))
    raise UsageError(f"{message} (see 'budgetware run --help')")


def child_environment(settings: dict[str, str]) -> dict[str, str]:
    """The child's environment: the settings as variables, the start-up hook on PYTHONPATH."""
    env = _with_settings(settings)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != BOOTSTRAP_DIR]
    env["PYTHONPATH"] = os.pathsep.join([BOOTSTRAP_DIR, *paths])
    return env


def _with_settings(settings: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    for name, value in settings.items():
        env[_PREFIX + name.upper()] = value
    return env


def check_settings(env: dict[str, str], options: Iterable[str] = ()) -> None:
    """Validate the program's settings in ``env`` and the store they name, as ``instrument()``
    will (an ``s3://`` store is left to the program: no network here): a ``UsageError``
    naming the bad option (of ``options``) or variable; then say which ``BUDGETWARE_*``
    variables nobody reads. No settings: one look at the default store."""
    from budgetware.store.files import default_plainly_private, plainly_accepted

    given = list(options)
    variables = {
        key: value
        for key, value in env.items()
        if key.startswith(_PREFIX) and not key.startswith(_PREFIX + "RUN_")
    }
    if not variables and default_plainly_private():
        return
    from budgetware.core.config import BudgetConfig, ConfigError
    from budgetware.core.config import check_settings as check
    from budgetware.core.environment import ignored_variables

    unknown = [
        f"--{name.replace('_', '-')}" for name in given if name not in BudgetConfig.model_fields
    ]
    if unknown:
        raise UsageError(unknown_options(unknown))
    # This process becomes the program (exec): its environment, read as the program will.
    for key in [key for key in os.environ if key.startswith(_PREFIX) and key not in env]:
        del os.environ[key]
    os.environ.update(variables)
    try:
        config = check()
        if not plainly_accepted(config, s3_later=True):
            from budgetware.store.select import check_store

            check_store(config)
    except ConfigError as exc:
        message = str(exc)
        for name in given:  # name the option the user typed, not the variable it became
            message = message.replace(
                f"({_PREFIX}{name.upper()})", f"(--{name.replace('_', '-')})"
            )
        raise UsageError(message) from None
    for said in ignored_variables(variables):
        print(f"budgetware run: {said}", file=sys.stderr)


def _is_python_name(path: str) -> bool:
    """``python``, ``python3``, ``python3.12``, ``pypy3``, ``python3.13t``, ``python.exe``."""
    name = os.path.basename(path).lower()
    if name.endswith(".exe"):
        name = name[:-4]
    for stem in ("python", "pypy"):
        if name.startswith(stem):
            rest = name[len(stem) :]
            if rest[-1:] in ("t", "w"):
                rest = rest[:-1]
            parts = rest.split(".") if rest else []
            return all(part.isdigit() and part.isascii() for part in parts)
    return False


def _head(path: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read(1024)
    except OSError:
        return b""


def is_python_program(path: str) -> bool:
    """Whether ``path`` runs Python: an interpreter, a ``#!`` script naming one, or a Windows
    launcher carrying a zipped script."""
    if _is_python_name(path):
        return True
    head = _head(path)
    if head.startswith(b"#!"):
        # pip writes long interpreter paths as a /bin/sh line that execs python on line 2.
        return any(b"python" in line.lower() for line in head.split(b"\n")[:3])
    if head.startswith(b"MZ"):
        import zipfile

        try:
            with zipfile.ZipFile(path) as archive:
                return "__main__.py" in archive.namelist()
        except (OSError, zipfile.BadZipFile):
            return False
    return False


# Python options that take a value (in the same word or the next), and the ones after which
# the rest of the command line is the program's.
_VALUE_OPTIONS = frozenset("WX")
_LAST_OPTIONS = frozenset("cm")
_SKIPPING = {
    "I": "-I (isolated mode), which ignores PYTHONPATH",
    "E": "-E, which ignores PYTHONPATH",
    "S": "-S, which skips sitecustomize",
}


def _skipping_reasons(flags: list[str]) -> str:
    """``-I (isolated mode), which ignores PYTHONPATH, and -S, which skips sitecustomize``."""
    reasons = [_SKIPPING[flag] for flag in flags]
    if len(reasons) == 1:
        return reasons[0]
    return ", ".join(reasons[:-1]) + ", and " + reasons[-1]


def python_flags_skipping_the_hook(args: list[str]) -> list[str]:
    """Which of ``-I``, ``-E``, ``-S`` (each keeps the start-up hook out) the interpreter
    arguments ``args`` carry."""
    found: list[str] = []
    words = iter(args)
    for word in words:
        if word == "--" or word == "-" or not word.startswith("-"):
            break  # the script: the program's own arguments follow
        if word.startswith("--"):
            if word == "--check-hash-based-pycs":
                next(words, None)
            continue
        letters = word[1:]
        for index, letter in enumerate(letters):
            if letter in _SKIPPING and letter not in found:
                found.append(letter)
            if letter in _LAST_OPTIONS:
                return found
            if letter in _VALUE_OPTIONS:
                if index == len(letters) - 1:
                    next(words, None)
                break
    return found


def _shebang_python_args(path: str) -> list[str] | None:
    """The interpreter options of a ``#!`` line that runs Python, None if it runs none."""
    head = _head(path)
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = words[1:]
        while words and words[0].startswith("-"):  # env -S, env -i, env -u NAME
            if words[0] in ("-u", "--unset", "-C", "--chdir"):
                words = words[1:]
            words = words[1:]
        while words and "=" in words[0]:  # env NAME=value python
            words = words[1:]
    if not words or not _is_python_name(words[0]):
        return None
    return words[1:]


def _which(name: str, path: str | None) -> tuple[str | None, str | None]:
    """A shell's lookup: ``(executable, None)``, ``(None, why it cannot run)`` or
    ``(None, None)`` when there is no such file."""
    import shutil

    found = shutil.which(name, path=path)
    if found is not None or not name:
        return found, None
    if "/" in name and os.path.isdir(name):
        return None, "Is a directory"
    folders = (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep)
    candidates = [name] if "/" in name else [os.path.join(d or ".", name) for d in folders]
    return None, "Permission denied" if any(map(os.path.isfile, candidates)) else None


def _reordered_for_otel(parsed: Parsed, executable: str) -> list[str] | None:
    """``opentelemetry-instrument [opts] budgetware run [options] -- <command>``: its
    ``sitecustomize`` does not chain to ours, ours chains to its."""
    if os.path.basename(parsed.command[0]) != OTEL_INSTRUMENT:
        return None
    rest = parsed.command[1:]
    own: list[str] = []
    while rest and rest[0].startswith("-"):
        word = rest.pop(0)
        own.append(word)
        if word in ("-h", "--help", "--version"):
            return None  # nothing to run: its own answer, unchanged
        if "=" not in word and rest:
            own.append(rest.pop(0))  # every other option of it takes a value
    if not rest:
        return None
    budgetware = [sys.executable, "-m", "budgetware"]
    return [executable, *own, *budgetware, "run", *parsed.options, "--", *rest]


def main(argv: list[str]) -> int:
    """Run the command with budgetware started in it; returns its exit code."""
    parsed = parse_command_line(argv)
    if isinstance(parsed, int):
        return parsed
    settings, command = parsed.settings, parsed.command
    env = child_environment(settings)
    if SESSION_VARIABLE not in env:  # a nested run joins the session of the outer one
        from budgetware.core.paths import new_session_id

        env[SESSION_VARIABLE] = new_session_id()
    if parsed.log_level is not None:
        env[LOG_LEVEL_VARIABLE] = parsed.log_level
    try:
        check_settings(env, settings)
    except ImportError as exc:  # a broken install: the program runs, without budgetware
        print(
            f"budgetware run: budgetware could not start ({type(exc).__name__}); "
            "this program runs unbounded",
            file=sys.stderr,
        )
        env = _with_settings(settings)
    executable, problem = _which(command[0], env.get("PATH"))
    if executable is None:
        if problem is not None:  # there, but not a program: exit code 126, as a shell says
            raise CliError(f"cannot run {command[0]}: {problem}", code=126)
        raise CliError(f"command not found: {command[0]}", code=127)
    reordered = _reordered_for_otel(parsed, executable)
    if reordered is not None:
        # OpenTelemetry's process gets no hook of ours; the inner budgetware run adds it.
        command = reordered
        env = dict(os.environ)
    elif not is_python_program(executable):
        print(
            f"budgetware run: {command[0]} is not a Python program; it runs unchanged "
            "(budgetware bounds the Python programs it starts)",
            file=sys.stderr,
        )
    else:
        python = command[1:] if _is_python_name(executable) else _shebang_python_args(executable)
        skipping = python_flags_skipping_the_hook(python or [])
        if skipping:
            print(
                f"budgetware run: {command[0]} runs Python with {_skipping_reasons(skipping)}, "
                "so budgetware's start-up hook never runs: this program runs unbounded",
                file=sys.stderr,
            )
    sys.stdout.flush()
    sys.stderr.flush()
    if parsed.report and reordered is None:
        # The program runs as a child, so that this process can report when it exits.
        from budgetware.core.config import BudgetConfig
        from budgetware.diagnostics.sessionlog import directory_for

        sessions = directory_for(BudgetConfig.from_env(env).session_log, env)
        if sessions is None:
            raise UsageError("--report reads the session log, which --session-log off turns off")
        code = _spawn(executable, command, env)
        from budgetware.cli.report import print_run_report

        print_run_report(sessions, env[SESSION_VARIABLE])
        return code
    if os.name == "posix":
        env[MAIN_VARIABLE] = str(os.getpid())
        try:
            os.execve(executable, command, env)
        except OSError as exc:  # not executable, bad format: as a shell reports it
            raise CliError(f"cannot run {command[0]}: {exc.strerror}", code=126) from None
    return _spawn(executable, command, env)  # pragma: no cover - Windows


def _spawn(executable: str, command: list[str], env: dict[str, str]) -> int:
    import subprocess

    from budgetware.cli.process import exit_code, forward_signals, restore_signals

    try:
        child = subprocess.Popen([executable, *command[1:]], env=env)
    except OSError as exc:
        raise CliError(f"cannot run {command[0]}: {exc.strerror}", code=126) from None
    previous = forward_signals(child)
    try:
        returncode = child.wait()
    finally:
        restore_signals(previous)
    return exit_code(returncode)
