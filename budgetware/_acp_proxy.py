"""``budgetware acp-proxy -- <agent>``: a stdio proxy that bounds an ACP agent's tool output.

It sits between an editor and an agent written in any language. Editor stdin goes to the
agent byte for byte and the agent's stderr is inherited. Each line of the agent's stdout
that is a ``session/update`` with a ``tool_call_update`` is projected and written back as
one compact JSON line; every other line, including lines that do not parse, is forwarded
byte for byte. Signals (SIGINT, SIGTERM) are forwarded to the agent, whose exit code is
returned. Only the standard library (and budgetware's own JSON codec) is used; blocking
threads over binary pipes read lines of any length.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import IO, Any

from budgetware import _diagnostics
from budgetware._errors import fail_open
from budgetware._json import dumps_bytes, loads
from budgetware._projection import FIELD_BUDGET, project_acp_frame

__all__ = ["main", "rewrite_line"]

USAGE = """\
usage: budgetware acp-proxy [--budget BYTES] -- <agent command> [args...]

Run an ACP agent over stdio and bound the text of its tool results (tool_call_update
content and rawOutput) to BYTES JSON bytes per field (default 65536) on the way to the
editor. Everything else passes through unchanged.
"""

_CHUNK = 64 * 1024
# Cheap byte tests before parsing: only these lines can need a rewrite.
_NEEDLES = (b"session/update", b"tool_call_update")


def rewrite_line(line: bytes, budget: int = FIELD_BUDGET) -> bytes:
    """The bytes to send to the editor for one line of agent stdout (newline included).

    This is the wire boundary of the proxy: the line itself when nothing changes, else the
    projected frame as compact JSON with the line's own ending.
    """
    if not all(needle in line for needle in _NEEDLES):
        return line
    body = line.rstrip(b"\r\n")
    ending = line[len(body) :]
    try:
        frame = loads(body)
    except (ValueError, RecursionError):
        return line  # not JSON (or nested beyond the parser): not ours to touch
    if not isinstance(frame, dict):
        return line
    projected = project_acp_frame(frame, budget)
    if _diagnostics.enabled:
        _diagnostics.display_pair("acp", frame, projected)
    if projected is frame:
        return line
    return dumps_bytes(projected) + ending


def _pump_stdin(source_fd: int, child_stdin: IO[bytes]) -> None:
    # Plain file descriptors, no buffered file objects: this daemon thread may still be
    # blocked in a read when the interpreter exits, and it must not hold an io lock then.
    target_fd = child_stdin.fileno()
    try:
        while True:
            data = os.read(source_fd, _CHUNK)
            if not data:
                break
            view = memoryview(data)
            while view:
                view = view[os.write(target_fd, view) :]
    except OSError:
        pass  # the agent is gone (broken pipe); its exit code tells the story
    finally:
        try:
            child_stdin.close()
        except OSError:
            pass


def _pump_stdout(child_stdout: IO[bytes], sink: IO[bytes], budget: int) -> None:
    # readline on a buffered binary file has no line-length limit.
    sink_open = True
    for line in iter(child_stdout.readline, b""):
        if not sink_open:
            continue  # keep draining so that the agent never blocks on a full pipe
        try:
            out = rewrite_line(line, budget)
        except Exception:
            # Fail open: a bug in the projection must never drop or corrupt a frame.
            fail_open("project an ACP frame")
            out = line
        try:
            sink.write(out)
            sink.flush()
            if _diagnostics.enabled:
                _diagnostics.display_wire_bytes("acp", out)
        except (BrokenPipeError, ValueError, OSError):
            sink_open = False


def _parse_args(argv: list[str]) -> tuple[int, list[str]] | int:
    budget = FIELD_BUDGET
    args = list(argv)
    while args and args[0] != "--":
        option = args.pop(0)
        if option in ("-h", "--help"):
            print(USAGE, end="")
            return 0
        if option == "--budget" and args:
            try:
                budget = int(args.pop(0))
            except ValueError:
                print("budgetware acp-proxy: --budget needs an integer", file=sys.stderr)
                return 2
            continue
        # No "--": the first word that is not an option starts the command.
        if not option.startswith("-"):
            args.insert(0, option)
            return budget, args
        print(f"budgetware acp-proxy: unknown option {option!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    command = args[1:]
    if not command:
        print(USAGE, end="", file=sys.stderr)
        return 2
    return budget, command


def _exit_code(returncode: int) -> int:
    # Killed by a signal: report it as a shell would (128 + signal number).
    return 128 - returncode if returncode < 0 else returncode


def main(argv: list[str]) -> int:
    """Run the proxy; returns the agent's exit code."""
    parsed = _parse_args(argv)
    if isinstance(parsed, int):
        return parsed
    budget, command = parsed
    try:
        # Unbuffered pipes: the stdin pump writes to the descriptor itself, and the stdout
        # pump gets its own buffered reader below.
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    except OSError as exc:
        print(f"budgetware acp-proxy: cannot run {command[0]!r}: {exc}", file=sys.stderr)
        return 127
    assert child.stdin is not None
    assert child.stdout is not None
    previous = _forward_signals(child)
    try:
        stdin_thread = threading.Thread(
            target=_pump_stdin, args=(sys.stdin.fileno(), child.stdin), daemon=True
        )
        stdout_thread = threading.Thread(
            target=_pump_stdout,
            args=(io.BufferedReader(child.stdout, _CHUNK), sys.stdout.buffer, budget),
            daemon=True,
        )
        stdin_thread.start()
        stdout_thread.start()
        returncode = child.wait()
        # Everything the agent wrote before exiting still reaches the editor.
        stdout_thread.join()
    finally:
        _restore_signals(previous)
    return _exit_code(returncode)


_Handler = Callable[[int, FrameType | None], Any] | int | None


def _forward_signals(child: subprocess.Popen[bytes]) -> dict[int, _Handler]:
    def forward(signum: int, frame: FrameType | None) -> None:
        try:
            child.send_signal(signum)
        except OSError:
            pass

    previous: dict[int, _Handler] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous  # signal handlers can only be set from the main thread
    signals = [signal.SIGINT, signal.SIGTERM]
    if os.name != "nt":
        signals.append(signal.SIGHUP)
    for signum in signals:
        previous[signum] = signal.signal(signum, forward)
    return previous


def _restore_signals(previous: dict[int, _Handler]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)
