"""How every command reports a user's mistake: one line on stderr and a non-zero exit code.

A command gets this for free when ``cli/main.py`` dispatches to it:

- raise :class:`CliError` (exit 1) or :class:`UsageError` (exit 2) with a message that
  says what is wrong and, where it helps, what to do instead;
- build its parser with :class:`ArgumentParser` (argparse, with errors as one line instead
  of the usage block: ``budgetware demo: argument --budget: invalid int value: 'x' (see
  'budgetware demo --help')``);
- let ``ConfigError`` (a bad setting or ``BUDGETWARE_*`` variable) and ``OSError`` (a
  missing, unreadable or wrong kind of file) escape: the dispatcher turns them into one
  line as well. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    import argparse
    from typing import NoReturn

__all__ = ["ArgumentParser", "CliError", "UsageError", "describe_os_error"]


class CliError(Exception):
    """A user's mistake: ``message`` goes to stderr as one line, then exit with ``code``."""

    code = 1

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class UsageError(CliError):
    """The command line itself is wrong (an unknown flag, a bad value): exit code 2."""

    code = 2


if TYPE_CHECKING:

    class ArgumentParser(argparse.ArgumentParser):
        """argparse whose errors raise :class:`UsageError` (one line) instead of printing
        usage. Sub-parsers made with ``add_subparsers`` are of this class too."""

        def error(self, message: str) -> NoReturn: ...


def _argument_parser() -> type:
    # Made on first use: argparse is not imported by the commands that need no parser
    # (``budgetware run`` starts in milliseconds).
    import argparse

    class ArgumentParser(argparse.ArgumentParser):
        """argparse whose errors raise :class:`UsageError` (one line) instead of printing
        usage. Sub-parsers made with ``add_subparsers`` are of this class too (argparse uses
        the parent's class)."""

        def error(self, message: str) -> NoReturn:
            raise UsageError(f"{message} (see '{self.prog} --help')")

    ArgumentParser.__module__ = __name__
    return ArgumentParser


def __getattr__(name: str) -> object:
    if name == "ArgumentParser":
        parser = globals()["ArgumentParser"] = _argument_parser()
        return parser
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def describe_os_error(exc: OSError) -> str:
    """``PATH: No such file or directory``, as the shell's tools say it."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is not None:
        return f"{exc.filename}: {reason}"
    return reason
