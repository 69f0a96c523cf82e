"""``budgetware acp-proxy``: a real acp agent behind the proxy, and the pass-through rules."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from acp import spawn_agent_process

from budgetware.cli.main import main as cli
from budgetware.cli.process import ChildOutput
from budgetware.core.jsonio import dumps_bytes
from budgetware.core.measure import json_string_bytes
from budgetware.display.acp_proxy import rewrite_line
from budgetware.display.projection import ACP_MARKER, FIELD_BUDGET

from .acp_agent import BIG
from .acp_client import (
    AGENT_SCRIPT,
    ASYNCIO_DEFAULT_LIMIT,
    RecordingClient,
    child_env,
    drive_with_acp_client,
    proxy_command,
    raw_session,
)


def is_tool_call_update(line: bytes) -> bool:
    frame = json.loads(line)
    return frame.get("params", {}).get("update", {}).get("sessionUpdate") == "tool_call_update"


def run_proxy(
    *agent: str, stdin: bytes = b"", timeout: float = 20
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        proxy_command(*agent), input=stdin, capture_output=True, env=child_env(), timeout=timeout
    )


async def test_proxied_output_is_bounded_every_frame_parses_and_the_rest_is_as_sent() -> None:
    proxied, code = await raw_session(proxy_command(sys.executable, AGENT_SCRIPT, "plain"))
    assert code == 0
    (big,) = [line for line in proxied if is_tool_call_update(line)]
    update = json.loads(big)["params"]["update"]
    assert ASYNCIO_DEFAULT_LIMIT < len(big) < 256 * 1024
    assert len(dumps_bytes(update["content"])) <= FIELD_BUDGET
    assert json_string_bytes(update["rawOutput"]) <= FIELD_BUDGET
    assert ACP_MARKER in update["rawOutput"]
    assert update["rawOutput"].startswith("HEAD-")
    assert update["rawOutput"].endswith("-TAIL")
    # Every other frame is forwarded byte for byte.
    direct, _ = await raw_session([sys.executable, AGENT_SCRIPT, "plain"])
    assert len(direct) == len(proxied)
    # Without the proxy the frame is over a megabyte: the agent really sent it all.
    assert any(len(line) > 1_000_000 for line in direct)
    assert [line for line in direct if not is_tool_call_update(line)] == [
        line for line in proxied if not is_tool_call_update(line)
    ]


async def test_acp_client_helpers_talk_to_the_agent_through_the_proxy() -> None:
    client = RecordingClient()
    command = proxy_command(sys.executable, AGENT_SCRIPT, "plain")
    async with spawn_agent_process(client, *command, env=child_env()) as (conn, _process):
        await asyncio.wait_for(drive_with_acp_client(conn), timeout=20)
    (update,) = client.tool_call_updates()
    text = update["content"][0]["content"]["text"]
    assert ACP_MARKER in text
    assert update["rawOutput"] == text
    assert len(BIG) > FIELD_BUDGET


def test_stdin_and_unrelated_stdout_pass_byte_for_byte() -> None:
    # Invalid UTF-8, a long line, CRLF, no final newline: an echoing agent returns it as is.
    data = b"\xff\xfe not json\r\n" + b"y" * 300_000 + b"\n{broken session/update tool_call_update"
    echo = "import sys, shutil; shutil.copyfileobj(sys.stdin.buffer, sys.stdout.buffer)"
    result = run_proxy(sys.executable, "-c", echo, stdin=data)
    assert result.returncode == 0
    assert result.stdout == data


def test_agent_exit_code_is_returned_and_its_stderr_passes_through() -> None:
    agent = "import sys; sys.stderr.write('agent log\\n'); raise SystemExit(7)"
    result = run_proxy(sys.executable, "-c", agent)
    assert result.returncode == 7
    assert result.stderr == b"agent log\n"


GRANDCHILD_AGENT = """\
import json, subprocess, sys
# A grandchild that inherits the agent's stdout and outlives the agent by far.
child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"], stderr=subprocess.DEVNULL
)
with open(sys.argv[1], "w") as pid_file:
    pid_file.write(str(child.pid))
frame = {
    "jsonrpc": "2.0",
    "method": "session/update",
    "params": {
        "sessionId": "s",
        "update": {"sessionUpdate": "tool_call_update", "rawOutput": "x" * 300_000},
    },
}
sys.stdout.write("y" * 200_000 + "\\n" + json.dumps(frame) + "\\nlast words")
sys.stdout.flush()
raise SystemExit(5)
"""


def test_the_proxy_exits_with_the_agent_while_a_grandchild_holds_its_stdout(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    start = time.monotonic()
    try:
        # The grandchild lives 60 s: waiting for it would hit the timeout.
        result = run_proxy(sys.executable, "-c", GRANDCHILD_AGENT, str(pid_file), timeout=30)
        elapsed = time.monotonic() - start
    finally:
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert result.returncode == 5
    assert elapsed < 20
    # Everything the agent wrote before it exited reached the editor, projected.
    first, frame, last = result.stdout.split(b"\n")
    assert first == b"y" * 200_000
    raw = json.loads(frame)["params"]["update"]["rawOutput"]
    assert ACP_MARKER in raw
    assert json_string_bytes(raw) <= FIELD_BUDGET
    assert last == b"last words"


@pytest.mark.skipif(sys.platform != "linux", reason="reads the pipe's capacity (Linux)")
def test_once_the_agent_exits_a_pipe_kept_full_is_read_no_further_than_it_held() -> None:
    # A grandchild writing without end into the agent's stdout, faster than the editor
    # reads: the proxy reads what the pipe can hold (all the agent can have left), then ends.
    read_fd, write_fd = os.pipe()
    capacity = fcntl.fcntl(write_fd, fcntl.F_GETPIPE_SZ)
    stop, full = threading.Event(), threading.Event()

    def flood() -> None:
        written = 0
        with contextlib.suppress(OSError):
            while not stop.is_set():
                written += os.write(write_fd, b"z" * 4096)
                if written >= capacity:
                    full.set()

    writer = threading.Thread(target=flood, daemon=True)
    writer.start()
    total = 0
    try:
        with open(read_fd, "rb", buffering=0) as pipe:
            output = ChildOutput(pipe)
            assert full.wait(10)
            output.child_exited()
            for chunk in output:
                total += len(chunk)
                time.sleep(0.002)  # a slow editor: the writer keeps the pipe full meanwhile
                if total > 50 * capacity:
                    break
            output.close()
    finally:
        stop.set()
        writer.join(10)
        os.close(write_fd)
    assert 0 < total < capacity + 64 * 1024


def test_sigterm_is_forwarded_to_the_agent() -> None:
    agent = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('got TERM', flush=True), sys.exit(3)))\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    process = subprocess.Popen(
        proxy_command(sys.executable, "-c", agent),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=child_env(),
    )
    assert process.stdout is not None
    try:
        assert process.stdout.readline() == b"ready\n"
        start = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.stdout.readline() == b"got TERM\n"
        assert process.wait(timeout=10) == 3
        assert time.monotonic() - start < 10
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        assert process.stdin is not None
        process.stdin.close()


def test_agent_killed_by_a_signal_exits_like_a_shell_reports_it() -> None:
    result = run_proxy(
        sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    )
    assert result.returncode == 128 + signal.SIGKILL


def test_missing_agent_command_is_a_usage_error() -> None:
    assert cli(["acp-proxy", "--"]) == 2


def test_unknown_agent_program_exits_127() -> None:
    assert cli(["acp-proxy", "--", "/nonexistent/budgetware-agent"]) == 127


def test_rewrite_line_keeps_the_line_ending() -> None:
    frame = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "s",
            "update": {"sessionUpdate": "tool_call_update", "rawOutput": BIG},
        },
    }
    out = rewrite_line(json.dumps(frame).encode() + b"\r\n")
    assert out.endswith(b"}\r\n")
    assert json_string_bytes(json.loads(out)["params"]["update"]["rawOutput"]) <= FIELD_BUDGET


def test_rewrite_line_leaves_a_fitting_tool_call_update_byte_for_byte() -> None:
    line = b'{ "method": "session/update", "params": {"update": {"sessionUpdate": '
    line += b'"tool_call_update"}}}\n'
    assert rewrite_line(line) is line


def test_rewrite_line_forwards_a_line_nested_beyond_the_parser_unchanged() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    line = b'{"method":"session/update","u":"tool_call_update","d":' + deep + b"}\n"
    assert rewrite_line(line) is line


def test_budget_option_bounds_each_field_to_the_given_bytes() -> None:
    frame = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "s",
            "update": {"sessionUpdate": "tool_call_update", "rawOutput": BIG},
        },
    }
    echo = "import sys, shutil; shutil.copyfileobj(sys.stdin.buffer, sys.stdout.buffer)"
    result = subprocess.run(
        [*proxy_command()[:-1], "--budget", "1000", "--", sys.executable, "-c", echo],
        input=json.dumps(frame).encode() + b"\n",
        capture_output=True,
        env=child_env(),
        timeout=20,
    )
    raw = json.loads(result.stdout)["params"]["update"]["rawOutput"]
    assert json_string_bytes(raw) == 1000


def test_budget_option_needs_an_integer() -> None:
    assert cli(["acp-proxy", "--budget", "lots", "--", "agent"]) == 2
