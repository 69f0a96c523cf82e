"""Every user mistake on the command line is one line on stderr and a non-zero exit code.

Most cases run the dispatcher in-process (a traceback would fail the test as an exception);
what only a real process shows (a closed pipe, the exit code of the console script) runs
in a subprocess.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from budgetware.cli.main import COMMANDS, EXIT_BROKEN_PIPE
from budgetware.cli.main import main as cli


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str], code: int) -> str:
    """Run ``budgetware argv``; assert the exit code and a single line on stderr."""
    assert cli(argv) == code
    err = capsys.readouterr().err
    assert err.endswith("\n")
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["--version"]) == 0
    assert capsys.readouterr().out == f"budgetware {metadata.version('budgetware')}\n"
    assert cli(["-V"]) == 0
    assert capsys.readouterr().out.startswith("budgetware ")


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)
    assert "--version" in out


def test_no_command_and_an_unknown_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert "no command given" in one_line_error(capsys, [], 2)
    err = one_line_error(capsys, ["frobnicate"], 2)
    assert "unknown command 'frobnicate'" in err
    assert "demo" in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_reports_an_unknown_flag_in_one_line(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # A command added to COMMANDS is held to the same rule: build its parser with
    # budgetware.cli.errors.ArgumentParser, or raise UsageError.
    err = one_line_error(capsys, [command, "--no-such-flag"], 2)
    assert err.startswith(f"budgetware {command}: ")
    assert "--help" in err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["demo", "--budget", "lots"], "invalid int value: 'lots'"),
        (["demo", "--budget", "0"], "--budget must be positive"),
        (["demo", "--batch-budget", "0"], "--batch-budget must be positive"),
        (["demo", "--batch-budget", "lots"], "invalid int value: 'lots'"),
        (["demo", "--provider", "acme"], "invalid choice: 'acme'"),
        (["artifacts"], "required: command"),
        (["artifacts", "prune"], "prune needs --older-than and/or --max-size"),
        (["artifacts", "prune", "--older-than", "yesterday"], "not an age: 'yesterday'"),
        (["artifacts", "prune", "--max-size", "lots"], "not a size: 'lots'"),
        (["diagnose"], "the following arguments are required: log"),
        (["acp-proxy", "--budget", "lots", "--", "agent"], "--budget needs a whole number"),
        (["acp-proxy", "--budget"], "--budget needs a whole number of bytes, not ''"),
        (["acp-proxy", "--budget", "-5", "--", "agent"], "--budget must be positive"),
        (["acp-proxy", "--"], "no agent command given"),
        (["acp-proxy"], "no agent command given"),
    ],
)
def test_bad_flag_values(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    err = one_line_error(capsys, argv, 2)
    assert err.startswith(f"budgetware {argv[0]}: ")
    assert expected in err
    assert "--help" in err  # says where to look


@pytest.mark.parametrize("url", ["ftp://x", "s3://", "s3://ab"])
def test_mcp_server_store_that_is_not_a_store(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    err = one_line_error(capsys, ["mcp-server", "--store", url], 2)
    assert err.startswith("budgetware mcp-server: invalid budgetware setting: artifact_store: ")
    assert "BUDGETWARE_ARTIFACT_STORE" not in err  # it came from the flag
    assert "Value error" not in err  # pydantic's own prefix says nothing to a user


def test_acp_proxy_agent_that_cannot_run(capsys: pytest.CaptureFixture[str]) -> None:
    err = one_line_error(capsys, ["acp-proxy", "--", "/nonexistent/agent"], 127)
    assert "cannot run '/nonexistent/agent': No such file or directory" in err


# --- files that are missing, unreadable or of the wrong kind --------------------------------


def _loop(tmp_path: Path) -> Path:
    link = tmp_path / "loop"
    link.symlink_to(link)  # opening it fails: too many levels of symbolic links
    return link


def _through_a_file(tmp_path: Path) -> Path:
    (tmp_path / "plain").write_text("x")
    return tmp_path / "plain" / "log.jsonl"


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda tmp: tmp / "missing.jsonl", "No such file or directory"),
        (lambda tmp: tmp, "Is a directory"),
        (_loop, "Too many levels of symbolic links"),
        (_through_a_file, "Not a directory"),
    ],
    ids=["missing", "directory", "symlink-loop", "path-through-a-file"],
)
def test_diagnose_a_file_it_cannot_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, make: object, reason: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    err = one_line_error(capsys, ["diagnose", str(path)], 1)
    assert f"budgetware diagnose: cannot read {path}: {reason}" in err


def _unreadable(tmp_path: Path) -> Path:
    """A file this process may not read: mode 0, or for root (who reads every file) a
    write-only kernel setting that refuses even root."""
    if os.geteuid() != 0:
        path = tmp_path / "debug.jsonl"
        path.write_text("{}\n")
        path.chmod(0)
        return path
    path = Path("/proc/sys/vm/compact_memory")
    try:
        path.open("rb").close()
    except PermissionError:
        return path
    except OSError:
        pass
    pytest.skip("no file here that root may not read")


def test_diagnose_a_file_it_may_not_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _unreadable(tmp_path)
    err = one_line_error(capsys, ["diagnose", str(path)], 1)
    assert f"budgetware diagnose: cannot read {path}: Permission denied" in err


@pytest.mark.parametrize(
    "content",
    [bytes(range(256)) * 64, b"just some notes\nnothing to see\n", b'{"event": "other"}\n'],
    ids=["binary", "text", "other-json"],
)
def test_diagnose_input_that_is_not_a_debug_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "input"
    path.write_bytes(content)
    err = one_line_error(capsys, ["diagnose", str(path)], 1)
    assert "is not a budgetware debug log" in err
    assert "BUDGETWARE_DEBUG_LOG_FILE" in err


def test_diagnose_a_call_that_matches_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    event = {
        "event": "budgetware.tool_result.boundary",
        "stage": "finalizer_input",
        "key_id": "k",
        "tool_call_hmac": "abc123",
        "values": [],
    }
    path = tmp_path / "debug.jsonl"
    path.write_text(json.dumps(event) + "\n")
    err = one_line_error(capsys, ["diagnose", str(path), "--call", "ffff"], 1)
    assert "no tool call in" in err
    assert "'ffff'" in err
    assert "(1 tool call; run without --call" in err  # not "1 tool calls"
    assert cli(["diagnose", str(path), "--call", "abc"]) == 0
    out = capsys.readouterr().out
    assert "tool call abc123" in out
    assert out.startswith("1 event, 1 tool call, 1 process\n")


def test_artifacts_dir_that_is_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    err = one_line_error(capsys, ["artifacts", "--dir", str(path), "usage"], 1)
    assert f"{path} is not a directory" in err


@pytest.mark.parametrize("url", ["s3://", "ftp://x"])
def test_artifacts_store_that_is_not_a_store_names_the_option(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    err = one_line_error(capsys, ["artifacts", "--store", url, "usage"], 2)
    assert err.startswith(
        "budgetware artifacts: invalid budgetware setting: artifact_store (--store): "
    )
    assert "BUDGETWARE_ARTIFACT_STORE" not in err  # it came from the flag
    # From the variable, the variable is named.
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_STORE", url)
    err = one_line_error(capsys, ["artifacts", "usage"], 2)
    assert "artifact_store (BUDGETWARE_ARTIFACT_STORE): " in err


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_artifacts_dir_others_can_write_names_the_option(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    err = one_line_error(capsys, ["artifacts", "--dir", str(shared), "usage"], 2)
    assert f"artifact_dir (--dir): budgetware refuses to keep artifacts in {shared}" in err


def test_artifacts_usage_of_one_artifact(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from budgetware.finalizer import LocalArtifactStore

    LocalArtifactStore(tmp_path).put("x" * 1000)
    assert cli(["artifacts", "--dir", str(tmp_path), "usage"]) == 0
    out = capsys.readouterr().out
    # Not "1 artifacts, ..., last used 0s to 0s ago".
    assert re.fullmatch(
        rf"{re.escape(str(tmp_path))}: 1 artifact, [\d,]+ bytes, last used \d+s ago\n", out
    ), out


@pytest.mark.parametrize("command", ["usage", "sweep", "prune --older-than 7d"])
def test_artifacts_dir_that_does_not_exist(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    path = tmp_path / "mistyped"
    err = one_line_error(capsys, ["artifacts", "--dir", str(path), *command.split()], 1)
    assert f"{path}: no such directory" in err
    assert not path.exists()  # nothing was made of a mistake
    # `where` only names the place, which may not exist yet.
    assert cli(["artifacts", "--dir", str(path), "where"]) == 0


def test_demo_artifact_dir_that_cannot_be_made(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # /proc refuses new directories, even to root.
    err = one_line_error(capsys, ["demo", "--artifact-dir", "/proc/1/nope"], 1)
    assert "cannot create --artifact-dir /proc/1/nope:" in err


def test_demo_artifact_dir_that_is_a_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    err = one_line_error(capsys, ["demo", "--artifact-dir", str(path)], 2)
    assert "is a file, not a directory" in err


@pytest.mark.parametrize(
    ("argv", "variable", "value"),
    [
        (["demo"], "BUDGETWARE_UNIT", "parsecs"),
        (["artifacts", "usage"], "BUDGETWARE_MAX_STORE_BYTES", "-1"),
    ],
)
def test_a_bad_environment_variable_is_named(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    variable: str,
    value: str,
) -> None:
    monkeypatch.setenv(variable, value)
    err = one_line_error(capsys, argv, 2)
    assert variable in err
    assert repr(value) in err


def test_demo_real_without_a_key(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    err = one_line_error(capsys, ["demo", "--real"], 2)
    assert "--real needs OPENAI_API_KEY" in err


def test_demo_says_when_previews_are_too_small_to_name_their_artifact(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert cli(["demo", "--budget", "10", "--artifact-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("previews this small cannot name their artifact") == 1
    assert str(tmp_path) in out.split("cannot name their artifact")[1].split("\n")[0]
    assert cli(["demo", "--budget", "2000", "--artifact-dir", str(tmp_path)]) == 0
    assert "cannot name their artifact" not in capsys.readouterr().out


# --- a real process ------------------------------------------------------------------------


def _budgetware(*args: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "budgetware", *args], timeout=60, check=False, **kwargs
    )


@pytest.mark.parametrize("argv", [["--help"], ["artifacts", "where"]])
def test_a_reader_that_went_away_ends_the_command_quietly(argv: list[str], tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # every write to the pipe now fails with EPIPE
    try:
        done = _budgetware(*argv, stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    assert done.stderr == b""
    assert done.returncode == EXIT_BROKEN_PIPE


def test_help_piped_into_head_prints_one_line_and_no_error() -> None:
    done = subprocess.run(
        f"{sys.executable} -m budgetware --help | head -1",
        shell=True,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.stdout == b"usage: budgetware <command> [options]\n"
    assert done.stderr == b""


def test_the_process_exit_code_is_the_commands() -> None:
    done = _budgetware("diagnose", "/nonexistent/log", capture_output=True)
    assert done.returncode == 1
    assert done.stderr.decode().count("\n") == 1
