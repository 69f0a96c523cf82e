"""``budgetware acp-proxy -- <agent>``: a stdio proxy that bounds an ACP agent's tool output.

It sits between an editor and an agent written in any language (see
``budgetware.display.acp_proxy`` for what it rewrites). Signals (SIGINT, SIGTERM, SIGHUP)
are forwarded to the agent, whose exit code is returned.
"""

from __future__ import annotations

import subprocess
import sys
import threading

from budgetware.cli.errors import CliError, UsageError
from budgetware.cli.process import ChildOutput, exit_code, forward_signals, restore_signals
from budgetware.display.acp_proxy import pump_stdin, pump_stdout
from budgetware.display.projection import FIELD_BUDGET

__all__ = ["main"]

USAGE = """\
usage: budgetware acp-proxy [--budget BYTES] -- <agent command> [args...]

Run an ACP agent over stdio and bound the text of its tool results (tool_call_update
content and rawOutput) to BYTES JSON bytes per field (default 65536) on the way to the
editor. Everything else passes through unchanged.
"""
SEE_HELP = "(see 'budgetware acp-proxy --help')"


def _parse_args(argv: list[str]) -> tuple[int, list[str]] | None:
    """``(budget, agent command)``, or None when help was printed."""
    budget = FIELD_BUDGET
    args = list(argv)
    while args and args[0] != "--":
        option = args.pop(0)
        if option in ("-h", "--help"):
            print(USAGE, end="")
            return None
        if option == "--budget":
            value = args.pop(0) if args else ""
            try:
                budget = int(value)
            except ValueError:
                raise UsageError(
                    f"--budget needs a whole number of bytes, not {value!r} {SEE_HELP}"
                ) from None
            if budget <= 0:
                raise UsageError(f"--budget must be positive, not {budget} {SEE_HELP}")
            continue
        # No "--": the first word that is not an option starts the command.
        if not option.startswith("-"):
            args.insert(0, option)
            return budget, args
        raise UsageError(f"unknown option {option!r} {SEE_HELP}")
    command = args[1:]
    if not command:
        raise UsageError(f"no agent command given {SEE_HELP}")
    return budget, command


def main(argv: list[str]) -> int:
    """Run the proxy; returns the agent's exit code."""
    parsed = _parse_args(argv)
    if parsed is None:
        return 0
    budget, command = parsed
    try:
        # Unbuffered: the pumps read and write the descriptors themselves.
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    except OSError as exc:
        raise CliError(f"cannot run {command[0]!r}: {exc.strerror or exc}", 127) from None
    assert child.stdin is not None
    assert child.stdout is not None
    output = ChildOutput(child.stdout)
    previous = forward_signals(child)
    try:
        stdin_thread = threading.Thread(
            target=pump_stdin, args=(sys.stdin.fileno(), child.stdin), daemon=True
        )
        stdout_thread = threading.Thread(
            target=pump_stdout, args=(output, sys.stdout.buffer, budget), daemon=True
        )
        stdin_thread.start()
        stdout_thread.start()
        returncode = child.wait()
        # What the agent wrote reaches the editor; a grandchild holding stdout is not awaited.
        output.child_exited()
        stdout_thread.join()
    finally:
        restore_signals(previous)
        output.close()
        child.stdout.close()
    return exit_code(returncode)
