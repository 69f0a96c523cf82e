"""A user's mistake is one line on stderr and a non-zero exit code, never a traceback.

Commands raise :class:`CliError` or :class:`UsageError`, parse with :class:`ArgumentParser`,
and let ``ConfigError`` and ``OSError`` escape: ``cli/main.py`` turns each into one line.
"""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
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


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors raise :class:`UsageError` (one line), sub-parsers too."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def describe_os_error(exc: OSError) -> str:
    """``PATH: No such file or directory``, as the shell's tools say it."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is not None:
        return f"{exc.filename}: {reason}"
    return reason
