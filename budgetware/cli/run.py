"""``budgetware run [options] -- <command ...>``: any Python program, bounded, unchanged.

Works the way ``opentelemetry-instrument`` does: the folder ``budgetware/cli/bootstrap``
goes first on the child's ``PYTHONPATH``; its ``sitecustomize`` calls ``instrument()``
before the program's first import (``python agent.py``, ``python -m pkg``, a console
script), then runs the ``sitecustomize`` it shadows. Options are settings: each
``--<setting> VALUE`` becomes ``BUDGETWARE_<SETTING>`` for the child, which resolves it
like any other setting (and rejects a bad one before the program starts). On POSIX the
command replaces this process (``exec``), so its exit code, its signals and its process id
are its own; elsewhere it runs as a child whose signals are forwarded and whose exit code
is returned.

This module imports nothing heavy: the command starts in milliseconds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile

from budgetware.cli.errors import CliError, UsageError
from budgetware.cli.startup import OPTIONS_VARIABLE

__all__ = ["BOOTSTRAP_DIR", "child_environment", "is_python_program", "main"]

BOOTSTRAP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap")
MAIN_VARIABLE = "BUDGETWARE_RUN_MAIN"
"""The process id of the program ``budgetware run`` started (POSIX: this one, after exec)."""

USAGE = """\
usage: budgetware run [options] -- <command> [args...]

Run a Python program with budgetware.instrument() active from its first line, without
changing its code: python agent.py, python -m package, or a console script.

options (any setting of docs/configuration.md, as --<setting> VALUE or --<setting>=VALUE):
  --batch-budget N        budget per batch of tool results (default 200000)
  --unit UNIT             chars, utf8_bytes or tokens
  --artifact-dir DIR      where full outputs are written
  --persist / --no-persist
  -h, --help              show this help

BUDGETWARE_* environment variables apply as well; options win over them.
"""

_PYTHON_NAME = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[tw]?(\.exe)?$", re.IGNORECASE)


def _setting_name(option: str) -> str:
    return option.replace("-", "_").lower()


def parse(argv: list[str]) -> tuple[dict[str, str], list[str]] | int:
    """``({setting: value}, command)``, or 0 after printing the help; raises UsageError."""
    settings: dict[str, str] = {}
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--":
            break
        if arg in ("-h", "--help"):
            print(USAGE, end="")
            return 0
        if not arg.startswith("--") or arg == "--":
            args.insert(0, arg)  # the command starts here (no "--" given)
            break
        name, equals, value = arg[2:].partition("=")
        if not name:
            raise UsageError(f"bad option {arg!r} (see 'budgetware run --help')")
        if equals:
            settings[_setting_name(name)] = value
        elif name.startswith("no-"):
            settings[_setting_name(name[3:])] = "false"
        elif args and not args[0].startswith("--"):
            settings[_setting_name(name)] = args.pop(0)
        else:  # a flag on its own: a boolean setting turned on
            settings[_setting_name(name)] = "true"
    if not args:
        raise UsageError("no command given (see 'budgetware run --help')")
    return settings, args


def child_environment(
    settings: dict[str, str], environ: dict[str, str] | None = None
) -> dict[str, str]:
    """The child's environment: the settings as variables, the start-up hook on PYTHONPATH."""
    env = dict(os.environ if environ is None else environ)
    for name, value in settings.items():
        env["BUDGETWARE_" + name.upper()] = value
    if settings:
        env[OPTIONS_VARIABLE] = ",".join(settings)
    else:
        env.pop(OPTIONS_VARIABLE, None)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != BOOTSTRAP_DIR]
    env["PYTHONPATH"] = os.pathsep.join([BOOTSTRAP_DIR, *paths])
    return env


def is_python_program(path: str) -> bool:
    """Whether the executable at ``path`` runs Python: an interpreter, a script whose
    ``#!`` line names one (console scripts), or a Windows launcher carrying a zipped script.
    """
    if _PYTHON_NAME.match(os.path.basename(path)):
        return True
    try:
        with open(path, "rb") as file:
            head = file.read(1024)
    except OSError:
        return False
    if head.startswith(b"#!"):
        # pip writes long interpreter paths as a /bin/sh line that execs python on line 2.
        return any(b"python" in line.lower() for line in head.split(b"\n")[:3])
    if head.startswith(b"MZ"):
        try:
            return zipfile.is_zipfile(path) and "__main__.py" in zipfile.ZipFile(path).namelist()
        except (OSError, zipfile.BadZipFile):
            return False
    return False


def main(argv: list[str]) -> int:
    """Run the command with budgetware started in it; returns its exit code."""
    parsed = parse(argv)
    if isinstance(parsed, int):
        return parsed
    settings, command = parsed
    env = child_environment(settings)
    executable = shutil.which(command[0], path=env.get("PATH"))
    if executable is None:
        raise CliError(f"command not found: {command[0]}", code=127)
    if not is_python_program(executable):
        print(
            f"budgetware run: {command[0]} is not a Python program; it runs unchanged "
            "(budgetware bounds the Python programs it starts)",
            file=sys.stderr,
        )
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        env[MAIN_VARIABLE] = str(os.getpid())
        try:
            os.execve(executable, command, env)
        except OSError as exc:  # not executable, bad format: as a shell reports it
            raise CliError(f"cannot run {command[0]}: {exc.strerror}", code=126) from None
    return _spawn(executable, command, env)  # pragma: no cover - Windows


def _spawn(executable: str, command: list[str], env: dict[str, str]) -> int:
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
