"""``budgetware artifacts``: list, show and grep what the store holds; prune and sweep it,
with progress on a terminal; the store options before or after the subcommand."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from budgetware.cli.main import main as cli
from budgetware.finalizer import LocalArtifactStore

LOG = "\n".join(
    [f"PASSED tests/test_{i}.py::test_ok" for i in range(1, 3000)]
    + ["FAILED tests/test_cart.py::test_checkout_total - AssertionError: 汉字"]
    + [f"PASSED tests/test_{i}.py::test_more" for i in range(3000, 4000)]
)


@pytest.fixture
def store(tmp_path: Path) -> LocalArtifactStore:
    return LocalArtifactStore(tmp_path / "artifacts")


def put_aged(store: LocalArtifactStore, text: str, hours: float) -> str:
    """``text`` stored, last used ``hours`` ago."""
    ref = store.put(text)
    then = time.time() - hours * 3600  # now, not at import: a loaded machine collects slowly
    os.utime(ref, (then, then))
    return ref


def run(argv: list[str], capfd: pytest.CaptureFixture[str], code: int = 0) -> tuple[str, str]:
    assert cli(["artifacts", *argv]) == code
    out, err = capfd.readouterr()
    return out, err


def test_list_shows_newest_first_with_size_last_use_and_reference(
    store: LocalArtifactStore, capfd: pytest.CaptureFixture[str]
) -> None:
    old = put_aged(store, "old output " * 100, hours=50)
    new = put_aged(store, "new output", hours=2)
    middle = put_aged(store, LOG, hours=5)
    out, err = run(["list", "--dir", store.location], capfd)
    assert out.splitlines() == [
        f"    2.0h ago  {10:>11,} B  {new}",
        f"    5.0h ago  {len(LOG.encode()):>11,} B  {middle}",
        f"    2.1d ago  {1100:>11,} B  {old}",
    ]
    assert err == f"{store.location}: 3 artifacts, {1110 + len(LOG.encode()):,} bytes\n"
    assert "new output" not in out  # a listing never shows content


def test_show_prints_the_full_output_exactly(
    store: LocalArtifactStore, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    ref = store.put(LOG)
    name = Path(ref).name
    for given in (ref, name, name[:-4]):  # the reference, the file name, the bare SHA-256
        assert cli(["artifacts", "--dir", store.location, "show", given]) == 0
        out, err = capfdbinary.readouterr()
        assert out == LOG.encode()
        assert err == b""


def test_show_a_window_as_read_tool_output_takes_it(
    store: LocalArtifactStore, capfd: pytest.CaptureFixture[str]
) -> None:
    ref = store.put(LOG)
    out, err = run(
        ["show", ref, "--offset", "10", "--limit", "50", "--dir", store.location], capfd
    )
    assert out == LOG[10:60]
    assert err == f"chars 10-60 of {len(LOG):,}; more with --offset 60\n"
    out, err = run(["show", ref, "--offset", str(len(LOG) - 3), "--dir", store.location], capfd)
    assert out == LOG[-3:]
    assert err == f"chars {len(LOG) - 3:,}-{len(LOG):,} of {len(LOG):,}\n"


def test_grep_finds_lines_with_read_tool_outputs_limits(
    store: LocalArtifactStore, capfd: pytest.CaptureFixture[str]
) -> None:
    ref = store.put(LOG)
    out, err = run(["--dir", store.location, "grep", ref, "FAILED", "--context", "1"], capfd)
    offset = LOG.index("FAILED")
    before = LOG.rindex("\n", 0, offset - 1) + 1
    after = LOG.index("\n", offset) + 1
    assert out.splitlines() == [
        f"2999-{before}- PASSED tests/test_2999.py::test_ok",
        f"3000:{offset}: FAILED tests/test_cart.py::test_checkout_total - AssertionError: 汉字",
        f"3001-{after}- PASSED tests/test_3000.py::test_more",
    ]
    assert err == "1 match (line:offset: text; read around one with its offset)\n"
    _, err = run(["--dir", store.location, "grep", ref, "PASSED", "--context", "11"], capfd, 2)
    assert "context must be from 0 to 10" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["show", "f" * 64], "no such full output: "),
        (["show", "/etc/passwd"], "no such full output: "),
        (["grep", "f" * 64, "x"], "no such full output: "),
        (["grep", "REF", "foo("], "not a valid regular expression"),
        (["show", "REF", "--offset", "99999999"], "past the end of the output"),
        (["show", "REF", "--offset", "-1"], "--offset must be 0 or more"),
        (["show", "REF", "--limit", "0"], "--limit must be 1 or more"),
    ],
)
def test_a_bad_reference_or_window_is_one_line(
    store: LocalArtifactStore, capfd: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    ref = store.put(LOG)
    argv = [ref if arg == "REF" else arg for arg in argv]
    code = 2 if message.startswith("--") else 1
    _, err = run(["--dir", store.location, *argv], capfd, code)
    assert err.count("\n") == 1, err
    assert message in err


def test_prune_dry_run_says_what_would_be_left(
    store: LocalArtifactStore, capfd: pytest.CaptureFixture[str]
) -> None:
    for i, hours in enumerate((36, 20, 10)):
        put_aged(store, f"output {i} " + "z" * 1000, hours)
    out, _ = run(["--dir", store.location, "prune", "--max-size", "1k", "--dry-run"], capfd)
    assert out.splitlines() == [
        "would delete 2 artifacts, 2,018 bytes, last used 20.0h to 1.5d ago",
        "would leave: 1 artifact, 1,009 bytes, last used 10.0h ago",
    ]
    assert store.usage().count == 3


@pytest.mark.parametrize("command", ["where", "usage", "list", "sweep"])
def test_the_store_options_go_before_or_after_the_subcommand(
    store: LocalArtifactStore, capfd: pytest.CaptureFixture[str], command: str
) -> None:
    store.put(LOG)
    before, _ = run(["--dir", store.location, command], capfd)
    after, _ = run([command, "--dir", store.location], capfd)
    assert before == after
    assert store.location in before or command in ("list", "sweep")
    url = "file://" + store.location
    assert run([command, "--store", url], capfd) == run(["--store", url, command], capfd)


def test_two_store_options_on_either_side_are_one_line(
    store: LocalArtifactStore, capfd: pytest.CaptureFixture[str]
) -> None:
    _, err = run(["--dir", store.location, "usage", "--store", store.location], capfd, 2)
    assert "give one of --dir and --store" in err


def fill(directory: Path, count: int) -> None:
    """``count`` artifact files, written directly (the listing goes by their names)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    for i in range(count):
        (directory / f"{i:064x}.txt").write_bytes(b"x" * 100)
        os.utime(directory / f"{i:064x}.txt", (time.time() - 86400,) * 2)


def cli_env(**variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETWARE_")}
    return {**env, **variables}


def run_on_a_terminal(
    argv: list[str], env: dict[str, str], stream: str = "stderr"
) -> tuple[int, str, str]:
    """``budgetware artifacts argv`` with ``stream`` on a terminal: (exit code, the other
    stream, what the terminal shows)."""
    controller, terminal = pty.openpty()
    with tempfile.TemporaryFile() as rest:
        process = subprocess.Popen(
            [sys.executable, "-m", "budgetware", "artifacts", *argv],
            stdout=terminal if stream == "stdout" else rest,
            stderr=terminal if stream == "stderr" else rest,
            env=env,
        )
        os.close(terminal)
        shown = b""
        try:
            while True:  # read as it writes: a full terminal would block it
                try:
                    piece = os.read(controller, 65536)
                except OSError:  # every writer closed the terminal: all read
                    break
                if not piece:
                    break
                shown += piece
            code = process.wait(timeout=120)
        finally:
            os.close(controller)
            process.kill()
        rest.seek(0)
        other = rest.read().decode()
    return code, other, shown.decode().replace("\r\n", "\n")


def test_show_pages_on_a_terminal_and_a_quit_pager_ends_it_quietly(
    store: LocalArtifactStore,
) -> None:
    ref = store.put(LOG)
    pager = "echo PAGER-START; cat"
    code, err, shown = run_on_a_terminal(
        ["show", ref, "--dir", store.location], cli_env(PAGER=pager), "stdout"
    )
    assert (code, err) == (0, "")
    assert shown == "PAGER-START\n" + LOG
    # The reader quits after a few lines (q in less): no error, no traceback.
    code, err, shown = run_on_a_terminal(
        ["show", ref, "--dir", store.location], cli_env(PAGER="head -n 3"), "stdout"
    )
    assert (code, err) == (0, "")
    assert shown.splitlines() == LOG.splitlines()[:3]


@pytest.mark.parametrize(
    ("command", "deleted"),
    [(["prune", "--older-than", "1h"], "2,500"), (["sweep"], "2,492")],  # sweeps keep 80%
)
def test_a_long_prune_or_sweep_shows_progress_on_a_terminal(
    tmp_path: Path, command: list[str], deleted: str
) -> None:
    directory = tmp_path / "many"
    fill(directory, 2_500)
    env = cli_env(BUDGETWARE_MAX_STORE_BYTES="1000")  # what the sweep keeps: 800 bytes
    code, out, shown = run_on_a_terminal(["--dir", str(directory), *command], env)
    assert code == 0, shown
    assert f"listing {directory}" in shown
    assert "deleting 1,000 of " in shown
    assert "deleting 2,000 of " in shown
    assert f"deleted {deleted} artifacts" in out
    # None of it when stderr is not a terminal (a log, a pipe).
    fill(directory, 10)
    done = subprocess.run(
        [sys.executable, "-m", "budgetware", "artifacts", "--dir", str(directory), *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0
    assert done.stderr == ""
