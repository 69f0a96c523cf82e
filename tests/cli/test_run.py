"""``budgetware run``: a real SDK program that never imports budgetware is bounded.

Every test of a program that runs starts the real command (``python -m budgetware run
...``) in a subprocess, against the fake provider on 127.0.0.1. A command line it refuses
before it starts anything (a usage error, a bad setting, a command it cannot run) is
checked by its ``main()`` in this process (``refused``): the same parse and checks, the same
exit code and message, without two interpreter starts.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest

from budgetware.cli.main import main as cli
from budgetware.cli.run import (
    BOOTSTRAP_DIR,
    child_environment,
    is_python_program,
    parse_command_line,
    python_flags_skipping_the_hook,
)
from budgetware.testing import FakeProvider

BIN = os.path.dirname(sys.executable)
Done = subprocess.CompletedProcess[str]


def parse(argv: list[str]) -> tuple[dict[str, str], list[str]] | int:
    parsed = parse_command_line(argv)
    return parsed if isinstance(parsed, int) else (parsed.settings, parsed.command)


# An agent's last turn: ten 30,000-char tool results (each far over its share of any
# budget below), sent with the real openai SDK. It never imports budgetware; it prints what
# it saw of it.
SIZE = 30_000
AGENT = (
    f"SIZE = {SIZE}\n"
    + """
import json, os, sys
import openai

client = openai.OpenAI(base_url=os.environ["FAKE_URL"] + "/v1", api_key="k", max_retries=0)
calls = [{"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
         for i in range(10)]
messages = [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": calls}]
messages += [{"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} " + "x" * SIZE}
             for i in range(10)]
reply = client.chat.completions.create(model="m", messages=messages)
print(json.dumps({"reply": reply.choices[0].message.content, "args": sys.argv[1:]}))
"""
)

# The same turn sent with httpx alone, for the tests of how `budgetware run` starts a
# program (its kind, its options, its sitecustomize, its subprocesses, beside
# opentelemetry-instrument, with an MCP server): what they check is the same with any
# client, and the openai SDK's import costs half a second of CPU a start.
HTTPX_AGENT = (
    f"SIZE = {SIZE}\n"
    + """
import json, os, sys
import httpx

calls = [{"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
         for i in range(10)]
messages = [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": calls}]
messages += [{"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} " + "x" * SIZE}
             for i in range(10)]
answer = httpx.post(os.environ["FAKE_URL"] + "/v1/chat/completions", timeout=60,
                    json={"model": "m", "messages": messages},
                    headers={"authorization": "Bearer k"})
reply = answer.json()["choices"][0]["message"]["content"]
print(json.dumps({"reply": reply, "args": sys.argv[1:]}))
"""
)


def _env(fake: FakeProvider | None, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETWARE_")}
    env["BUDGETWARE_ARTIFACT_DIR"] = str(tmp_path / "artifacts")
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONPATH", None)
    if fake is not None:
        env["FAKE_URL"] = fake.url
    return env


def _no_settings(tmp_path: Path) -> dict[str, str]:
    """No BUDGETWARE_* setting at all: ``budgetware run`` has nothing to check (no settings
    model to import, 0.15 s of CPU), for the tests of how it starts a program that sends
    nothing (artifacts would go to tests/conftest.py's temporary cache directory)."""
    env = _env(None, tmp_path)
    del env["BUDGETWARE_ARTIFACT_DIR"]
    return env


def run(
    args: list[str], env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "budgetware", "run", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


@pytest.fixture
def refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``refused(args, env)``: ``budgetware run args`` by its ``main()`` in this process, in
    ``env``, for a command line it refuses before it starts anything; were it to start the
    program instead, the test fails."""

    def started(path: str, *_: object) -> NoReturn:
        raise AssertionError(f"budgetware run started {path}")

    def refuse(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        capsys.readouterr()
        try:
            with monkeypatch.context() as patch:
                patch.setattr(os, "execve", started)
                patch.setattr(subprocess, "Popen", started)
                code = cli(["run", *args])
        finally:  # the check writes the settings it read into os.environ, as the program's
            os.environ.clear()
            os.environ.update(saved)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    return refuse


def _tool_texts(fake: FakeProvider) -> list[str]:
    body = json.loads(fake.last.body)
    return [m["content"] for m in body["messages"] if m.get("role") == "tool"]


def _assert_bounded(fake: FakeProvider, budget: int) -> None:
    texts = _tool_texts(fake)
    assert len(texts) == 10
    assert sum(len(t) for t in texts) <= budget
    assert all(t.startswith(f"[Tool output truncated: {SIZE + 2:,} chars") for t in texts)


def test_a_script_that_never_imports_budgetware_is_bounded(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    done = run(
        ["--batch-budget", "40000", "--", "python", str(script), "a", "--b"],
        _env(fake_provider, tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"reply": "ok", "args": ["a", "--b"]}
    assert done.stderr == ""
    _assert_bounded(fake_provider, 40_000)
    assert len(list((tmp_path / "artifacts").glob("*.txt"))) == 10


def test_python_dash_m_a_package(fake_provider: FakeProvider, tmp_path: Path) -> None:
    package = tmp_path / "myagent"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(HTTPX_AGENT)
    done = run(
        ["--batch-budget=30000", "--", "python", "-m", "myagent"],
        _env(fake_provider, tmp_path),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    _assert_bounded(fake_provider, 30_000)


def test_a_console_script(fake_provider: FakeProvider, tmp_path: Path) -> None:
    # What pip installs for a console script: a file whose #! line names the interpreter.
    script = tmp_path / "my-agent"
    script.write_text(f"#!{sys.executable}\n{HTTPX_AGENT}")
    script.chmod(0o755)
    env = _env(fake_provider, tmp_path)
    env["BUDGETWARE_BATCH_BUDGET"] = "20000"  # settings from the environment work too
    done = run([str(script)], env)
    assert done.returncode == 0, done.stderr
    _assert_bounded(fake_provider, 20_000)


def test_options_win_over_the_environment(fake_provider: FakeProvider, tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(HTTPX_AGENT)
    env = _env(fake_provider, tmp_path)
    env["BUDGETWARE_BATCH_BUDGET"] = "20000"
    done = run(["--batch-budget", "35000", "--no-persist", "--", "python", str(script)], env)
    assert done.returncode == 0, done.stderr
    texts = _tool_texts(fake_provider)
    assert 20_000 < sum(len(t) for t in texts) <= 35_000
    assert not (tmp_path / "artifacts").exists()  # --no-persist


def test_exit_codes_pass_through(tmp_path: Path) -> None:
    done = run(["--", "python", "-c", "import sys; sys.exit(7)"], _no_settings(tmp_path))
    assert done.returncode == 7
    done = run(["python", "-c", "raise SystemExit('bye')"], _no_settings(tmp_path))
    assert done.returncode == 1
    assert done.stderr.strip() == "bye"


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(code: str, tmp_path: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "budgetware", "run", "--", "python", "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env=_no_settings(tmp_path),
        # SIGINT as a terminal gives it: a suite started in the background of a
        # non-interactive shell inherits it ignored, and so would the program.
        preexec_fn=_default_sigint,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_signals_reach_the_program(tmp_path: Path) -> None:
    handles = textwrap.dedent(
        """
        import signal, sys, time
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(42))
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    with _start(handles, tmp_path) as process:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 42
    # A signal the program does not handle ends it as it would end without budgetware.
    with _start("import time; print('ready', flush=True); time.sleep(60)", tmp_path) as process:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == -signal.SIGINT


def test_a_non_python_command_runs_unchanged_with_one_warning(tmp_path: Path) -> None:
    done = run(["--", "echo", "hello"], _no_settings(tmp_path))
    assert done.returncode == 0
    assert done.stdout == "hello\n"
    (line,) = done.stderr.splitlines()
    assert line.startswith("budgetware run: echo is not a Python program; it runs unchanged")


def test_a_command_that_does_not_exist(tmp_path: Path, refused: Callable[..., Done]) -> None:
    done = refused(["--", "no-such-command-xyz", "arg"], _env(None, tmp_path))
    assert done.returncode == 127
    assert done.stdout == ""
    assert done.stderr == "budgetware run: command not found: no-such-command-xyz\n"


def test_a_bad_setting_stops_the_program_before_it_starts(
    tmp_path: Path, refused: Callable[..., Done]
) -> None:
    marker = tmp_path / "ran"
    program = ["python", "-c", f"open({str(marker)!r}, 'w')"]
    done = refused(["--batch-budget", "lots", "--", *program], _env(None, tmp_path))
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        "budgetware run: invalid budgetware setting: batch_budget (--batch-budget)"
    )
    assert not marker.exists()
    done = refused(["--bath-budget", "5", "--", *program], _env(None, tmp_path))
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        "budgetware run: unknown option --bath-budget (settings: --batch-budget"
    )
    env = _env(None, tmp_path)
    env["BUDGETWARE_UNIT"] = "furlongs"
    done = refused(["--", *program], env)
    assert done.returncode == 2
    assert "unit (BUDGETWARE_UNIT)" in done.stderr
    assert not marker.exists()


def test_no_command_is_a_usage_error(tmp_path: Path, refused: Callable[..., Done]) -> None:
    done = refused(["--batch-budget", "5"], _env(None, tmp_path))
    assert done.returncode == 2
    assert done.stderr == "budgetware run: no command given (see 'budgetware run --help')\n"


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (["--batch-budget", "5000", "--artifact-dir"], "--artifact-dir needs a value"),
        (["--artifact-store"], "--artifact-store needs a value"),
        (["--batch-budget"], "--batch-budget needs a value"),
        (["--artifact-dir", "--unit", "tokens"], "--artifact-dir needs a value"),
    ],
)
def test_an_option_without_its_value_is_a_usage_error(
    tmp_path: Path,
    options: list[str],
    error: str,
    refused: Callable[..., Done],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # It used to take "true": artifacts went to a directory named ./true, exit code 0.
    marker = tmp_path / "ran"
    program = ["python", "-c", f"open({str(marker)!r}, 'w')"]
    monkeypatch.chdir(tmp_path)
    done = refused([*options, "--", *program], _env(None, tmp_path))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"budgetware run: {error} (see 'budgetware run --help')\n"
    assert not marker.exists()
    assert not (tmp_path / "true").exists()


def test_no_before_a_setting_that_is_not_on_off_is_a_usage_error(
    tmp_path: Path, refused: Callable[..., Done]
) -> None:
    marker = tmp_path / "ran"
    program = ["python", "-c", f"open({str(marker)!r}, 'w')"]
    done = refused(["--no-batch-budget", "--", *program], _env(None, tmp_path))
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        "budgetware run: --no-batch-budget: batch-budget is not an on/off setting"
    ), line
    assert "(got 'false')" not in line
    assert not marker.exists()
    # A name that is no setting keeps the start-up check's own message, value or not.
    for options in (["--no-bath-budget"], ["--bath-budget"], ["--bath-budget", "5"]):
        done = refused([*options, "--", *program], _env(None, tmp_path))
        assert done.returncode == 2, options
        (line,) = done.stderr.splitlines()
        assert line.startswith(
            f"budgetware run: unknown option {options[0]} (settings: --batch-budget"
        ), line
    assert not marker.exists()


def test_an_option_without_its_value_in_the_parser() -> None:
    from budgetware.cli.errors import UsageError

    for argv in (["--unit"], ["--unit", "--", "python"], ["--no-unit", "--", "python"]):
        with pytest.raises(UsageError):
            parse(argv)
    # The booleans stay flags, and --x=VALUE takes what follows the "=" (even nothing).
    assert parse(["--persist", "--", "python"]) == ({"persist": "true"}, ["python"])
    assert parse(["--no-telemetry", "--", "python"]) == ({"telemetry": "false"}, ["python"])
    assert parse(["--unit=", "--", "python"]) == ({"unit": ""}, ["python"])


def _refused(tmp_path: Path) -> list[tuple[Path, str]]:
    """Artifact directories check_store refuses, and why."""
    afile = tmp_path / "afile.txt"
    afile.write_text("x")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "mine", target_is_directory=True)
    cases = [
        (afile, "it is not a directory"),
        (shared, "other users can write into it"),
        (link, "it is a symbolic link"),
    ]
    if os.geteuid() == 0:  # only root can give a directory away
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 65534, 65534)
        cases.append((theirs, "it is owned by another user"))
    return cases


@pytest.mark.skipif(os.name != "posix", reason="POSIX owners and permissions")
def test_an_artifact_dir_budgetware_refuses_stops_the_program_before_it_starts(
    tmp_path: Path, refused: Callable[..., Done]
) -> None:
    # It used to run unbounded, exit code 0, after "budgetware could not start".
    (tmp_path / "mine").mkdir(mode=0o700)
    marker = tmp_path / "ran"
    program = ["python", "-c", f"open({str(marker)!r}, 'w')"]
    expected = "budgetware run: invalid budgetware setting: {named}: budgetware refuses to keep "
    # Each refused directory and each place a setting comes from (the option, the variable,
    # artifact_store as a path or a file:// URL), paired in turn: every reason is said and
    # every source named.
    sources = [
        (None, "{}", "artifact_dir (--artifact-dir)"),
        ("ARTIFACT_DIR", "{}", "artifact_dir (BUDGETWARE_ARTIFACT_DIR)"),
        ("ARTIFACT_STORE", "{}", "artifact_store (BUDGETWARE_ARTIFACT_STORE)"),
        ("ARTIFACT_STORE", "file://{}", "artifact_store (BUDGETWARE_ARTIFACT_STORE)"),
    ]
    refusals = _refused(tmp_path)
    for n in range(max(len(refusals), len(sources))):
        path, reason = refusals[n % len(refusals)]
        variable, value, named = sources[n % len(sources)]
        env = _env(None, tmp_path)
        if variable is None:
            args = ["--batch-budget", "5000", "--artifact-dir", str(path), "--", *program]
        else:
            args = ["--", *program]
            env[f"BUDGETWARE_{variable}"] = value.format(path)
        done = refused(args, env)
        assert done.returncode == 2, (path, variable, done.stderr)
        (line,) = done.stderr.splitlines()
        assert line.startswith(expected.format(named=named) + f"artifacts in {path}: {reason}")
    done = refused(
        ["--artifact-store", str(tmp_path / "shared"), "--", *program], _env(None, tmp_path)
    )
    assert "invalid budgetware setting: artifact_store (--artifact-store): " in done.stderr
    assert not marker.exists()
    # With persist off no store is used: nothing to refuse.
    done = run(
        ["--no-persist", "--artifact-dir", str(tmp_path / "shared"), "--", *program],
        _env(None, tmp_path),
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert marker.exists()


def test_the_settings_are_checked_once_before_the_program_not_in_it(tmp_path: Path) -> None:
    # The command checks them with the settings model; the program's start-up loads none of
    # it (pydantic comes with the program's first request, or its own imports).
    code = "import sys; print('pydantic' in sys.modules)"
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    # The settings checked with the model ride on the artifact directory's two cases (there,
    # and not yet): a run of each cost 0.45 s of CPU, and any of them loading it fails.
    for options in (
        ["--artifact-dir", str(mine), "--endpoints", "gw.example/*=openai_chat"],
        ["--artifact-dir", str(tmp_path / "not-yet"), "--mcp-tools", '{"t": 5}'],
    ):
        done = run([*options, "--", "python", "-c", code], _env(None, tmp_path))
        assert (done.returncode, done.stdout, done.stderr) == (0, "False\n", ""), options


def test_a_variable_budgetware_does_not_read_is_named_once(tmp_path: Path) -> None:
    env = _env(None, tmp_path)
    env["BUDGETWARE_BATCHBUDGET"] = "5000"
    env["BUDGETWARE_NOT_A_THING"] = "1"
    # Variables budgetware reads outside BudgetConfig are never named.
    env["BUDGETWARE_DEBUG_LOG_FILE"] = ""
    env["BUDGETWARE_RECORD_DIR"] = ""
    env["BUDGETWARE_MCP_SERVER_TOKEN"] = "t"
    env["BUDGETWARE_MCP_RESULT_BUDGET"] = "9000"
    # The program and a Python process it starts: one line per run, not per process.
    code = (
        "import subprocess, sys; print('ran', flush=True); "
        "subprocess.run([sys.executable, '-c', 'print(\"child\")'], check=True)"
    )
    done = run(["--unit", "tokens", "--", "python", "-c", code], env)
    assert (done.returncode, done.stdout) == (0, "ran\nchild\n"), done.stderr
    assert done.stderr.splitlines() == [
        "budgetware run: ignoring BUDGETWARE_BATCHBUDGET: not a budgetware setting "
        "(did you mean BUDGETWARE_BATCH_BUDGET?)",
        "budgetware run: ignoring BUDGETWARE_NOT_A_THING: not a budgetware setting",
    ]


def test_every_variable_budgetware_names_is_known() -> None:
    import re

    from budgetware.core.config import BudgetConfig
    from budgetware.core.environment import STANDALONE, ignored_variables

    root = Path(__file__).resolve().parents[2]
    variable = re.compile(r"\bBUDGETWARE_[A-Z0-9_]+(?![A-Z0-9_*<])")
    names = {v.name for v in STANDALONE}
    names.update(f"BUDGETWARE_{name.upper()}" for name in BudgetConfig.model_fields)
    for folder in ("budgetware", "integrations", "docs"):
        for path in (root / folder).rglob("*"):
            if path.suffix in (".py", ".md") and path.is_file():
                names.update(variable.findall(path.read_text(encoding="utf-8")))
    assert "BUDGETWARE_MCP_SERVER_TOKEN" in names
    typos = {"BUDGETWARE_BATCHBUDGET"}  # docs/run.md shows the warning for it
    assert ignored_variables(names) == [
        "ignoring BUDGETWARE_BATCHBUDGET: not a budgetware setting "
        "(did you mean BUDGETWARE_BATCH_BUDGET?)"
    ]
    assert ignored_variables(names - typos) == []
    assert ignored_variables(["BUDGETWARE_ARTIFACTS_DIR", "OTHER"]) == [
        "ignoring BUDGETWARE_ARTIFACTS_DIR: not a budgetware setting "
        "(did you mean BUDGETWARE_ARTIFACT_DIR?)"
    ]


def test_a_program_with_its_own_sitecustomize_gets_both(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text(
        "import os\nos.environ['OWN_SITECUSTOMIZE'] = 'ran'\nMARK = 'mine'\n"
    )
    script = tmp_path / "agent.py"
    script.write_text(
        HTTPX_AGENT
        + "import sitecustomize\n"
        + "print(os.environ['OWN_SITECUSTOMIZE'], sitecustomize.MARK, file=sys.stderr)\n"
    )
    env = _env(fake_provider, tmp_path)
    env["PYTHONPATH"] = str(own)
    done = run(["--batch-budget", "40000", "--", "python", str(script)], env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "ran mine"  # it ran, and the program sees it as its own
    _assert_bounded(fake_provider, 40_000)


def test_a_sitecustomize_that_fails_fails_as_without_budgetware(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("raise RuntimeError('broken site')\n")
    script = tmp_path / "agent.py"
    script.write_text(HTTPX_AGENT)
    env = _env(fake_provider, tmp_path)
    env["PYTHONPATH"] = str(own)
    done = run(["--batch-budget", "40000", "--", "python", str(script)], env)
    assert done.returncode == 0
    assert "Error in sitecustomize" in done.stderr  # Python's own report, as without us
    _assert_bounded(fake_provider, 40_000)


def test_python_subprocesses_of_the_program_are_bounded_too(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(HTTPX_AGENT)
    parent = tmp_path / "parent.py"
    parent.write_text(
        f"import subprocess, sys\nsys.exit(subprocess.call([sys.executable, {str(script)!r}]))\n"
    )
    done = run(
        ["--batch-budget", "25000", "--", "python", str(parent)], _env(fake_provider, tmp_path)
    )
    assert done.returncode == 0, done.stderr
    _assert_bounded(fake_provider, 25_000)


def test_a_python_without_budgetware_runs_unbounded_and_says_so(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120
    )
    python = bare / "bin" / "python"
    done = run(["--", str(python), "-c", "print('still runs')"], _no_settings(tmp_path))
    assert done.returncode == 0
    assert done.stdout == "still runs\n"
    (line,) = done.stderr.splitlines()
    assert line == (
        f"budgetware run: budgetware is not installed for {python}; this program runs unbounded"
    )


def test_parse_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    settings, command = parse(["--unit", "tokens", "--persist", "--", "python", "x.py"])  # type: ignore[misc]
    assert settings == {"unit": "tokens", "persist": "true"}
    assert command == ["python", "x.py"]
    for name in [name for name in os.environ if name.startswith("BUDGETWARE_RUN_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PYTHONPATH", f"/a{os.pathsep}{BOOTSTRAP_DIR}")
    env = child_environment(settings)
    assert env["PYTHONPATH"] == os.pathsep.join([BOOTSTRAP_DIR, "/a"])
    assert env["BUDGETWARE_UNIT"] == "tokens"
    assert not [name for name in env if name.startswith("BUDGETWARE_RUN_")]
    assert parse(["--help"]) == 0


def test_which_programs_are_python(tmp_path: Path) -> None:
    assert is_python_program(sys.executable)
    assert is_python_program("/usr/bin/python3.12")
    script = tmp_path / "tool"
    script.write_text("#!/usr/bin/env python3\nprint(1)\n")
    assert is_python_program(str(script))
    long_path = tmp_path / "long"
    long_path.write_text("#!/bin/sh\n'''exec' /very/long/venv/bin/python \"$0\" \"$@\"\n' '''\n")
    assert is_python_program(str(long_path))
    shell = tmp_path / "sh-tool"
    shell.write_text("#!/bin/sh\necho hi\n")
    assert not is_python_program(str(shell))
    assert not is_python_program("/bin/echo" if os.path.exists("/bin/echo") else str(shell))


def test_the_command_itself_imports_no_pydantic_and_no_http_library() -> None:
    # `budgetware run` replaces itself with the program: its own start-up must be cheap.
    code = (
        "import sys, budgetware.cli.main, budgetware.cli.run\n"
        "heavy = ('pydantic', 'httpx', 'httpx2', 'budgetware._api')\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_nothing_of_the_http_layer_loads_until_the_program_imports_an_http_library(
    tmp_path: Path,
) -> None:
    code = (
        "import sys\n"
        "print('budgetware.http.instrument' in sys.modules, 'pydantic' in sys.modules)\n"
        "import httpx2, budgetware\n"
        "print(budgetware.is_instrumented())\n"
    )
    done = run(["--", "python", "-c", code], _no_settings(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["False False", "True"]
    # With settings, nothing of it either: they were checked before the program started.
    # Both settings whose check could load it in one run (a run of each cost 0.45 s of CPU):
    # either one loading it fails the test.
    options = ["--unit", "tokens", "--endpoints", "gw.example/*=openai_chat"]
    done = run([*options, "--", "python", "-c", code], _env(None, tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["False False", "True"]


def test_a_boolean_option_never_takes_the_command(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(HTTPX_AGENT)
    # --persist used to swallow "python" as its value: "command not found: agent.py".
    done = run(
        ["--batch-budget", "40000", "--persist", "python", str(script)],
        _env(fake_provider, tmp_path),
    )
    assert done.returncode == 0, done.stderr
    _assert_bounded(fake_provider, 40_000)
    assert len(list((tmp_path / "artifacts").glob("*.txt"))) == 10
    for argv, settings in [
        (["--persist", "python", "x.py"], {"persist": "true"}),
        (["--persist=false", "python", "x.py"], {"persist": "false"}),
        (["--no-persist", "python", "x.py"], {"persist": "false"}),
        (["--persist", "false", "--", "python", "x.py"], {"persist": "false"}),
        (["--telemetry", "--", "python", "x.py"], {"telemetry": "true"}),
    ]:
        assert parse(argv) == (settings, ["python", "x.py"]), argv
    # A setting that takes a value still takes the next word.
    assert parse(["--unit", "tokens", "python"]) == ({"unit": "tokens"}, ["python"])


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_file_that_cannot_be_executed_is_126_as_in_a_shell(
    tmp_path: Path, refused: Callable[..., Done]
) -> None:
    script = tmp_path / "noexec.py"
    script.write_text("print(1)\n")
    script.chmod(0o644)
    env = _env(None, tmp_path)
    done = refused(["--", str(script)], env)
    assert (done.returncode, done.stderr) == (
        126,
        f"budgetware run: cannot run {script}: Permission denied\n",
    )
    done = refused(["--", str(tmp_path)], env)
    assert (done.returncode, done.stderr) == (
        126,
        f"budgetware run: cannot run {tmp_path}: Is a directory\n",
    )
    env["PATH"] = f"{tmp_path}{os.pathsep}{env['PATH']}"  # found on PATH, not executable
    done = refused(["--", "noexec.py"], env)
    assert (done.returncode, done.stderr) == (
        126,
        "budgetware run: cannot run noexec.py: Permission denied\n",
    )


def test_python_options_that_skip_the_hook_are_named(tmp_path: Path) -> None:
    env = _no_settings(tmp_path)
    for flags, named in [
        (["-I"], "-I (isolated mode), which ignores PYTHONPATH"),
        (["-S"], "-S, which skips sitecustomize"),
        (["-E"], "-E, which ignores PYTHONPATH"),
        (
            ["-bIS"],
            "-I (isolated mode), which ignores PYTHONPATH, and -S, which skips sitecustomize",
        ),
    ]:
        done = run(["--", "python", *flags, "-c", "print('ran')"], env)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "ran\n"
        (line,) = done.stderr.splitlines()
        assert line == (
            f"budgetware run: python runs Python with {named}, so budgetware's start-up hook "
            "never runs: this program runs unbounded"
        )
    # The same options on a #! line; and never the program's own arguments.
    script = tmp_path / "tool"
    script.write_text(f"#!{sys.executable} -E\nprint('ran')\n")
    script.chmod(0o755)
    done = run(["--", str(script)], env)
    assert f"{script} runs Python with -E, which ignores PYTHONPATH, so" in done.stderr
    done = run(["--", "python", "-c", "print('ran')", "-I"], env)
    assert (done.stdout, done.stderr) == ("ran\n", "")


def test_which_python_options_skip_the_hook() -> None:
    assert python_flags_skipping_the_hook(["-I", "x.py"]) == ["I"]
    assert python_flags_skipping_the_hook(["-X", "dev", "-W", "error", "-S", "x.py"]) == ["S"]
    assert python_flags_skipping_the_hook(["-Xdev", "-E"]) == ["E"]
    assert python_flags_skipping_the_hook(["-u", "-IS", "-m", "pkg", "-E"]) == ["I", "S"]
    assert python_flags_skipping_the_hook(["-c", "pass", "-I"]) == []
    assert python_flags_skipping_the_hook(["x.py", "-I"]) == []
    assert python_flags_skipping_the_hook(["-WI", "x.py"]) == []  # -W's value, not -I


def _copy_bootstrap(tmp_path: Path) -> tuple[Path, Path]:
    copy = tmp_path / "other-install" / "bootstrap"
    shutil.copytree(BOOTSTRAP_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    link = tmp_path / "link"
    link.symlink_to(BOOTSTRAP_DIR, target_is_directory=True)
    return copy, link


def _own_sitecustomize(tmp_path: Path, code: str = "") -> Path:
    own = tmp_path / "own"
    own.mkdir(exist_ok=True)
    # (budgetware run itself is a Python process with this PYTHONPATH: only the program,
    # which has BUDGETWARE_RUN_MAIN, says it ran.)
    (own / "sitecustomize.py").write_text(
        "import os, sys\n"
        "if 'BUDGETWARE_RUN_MAIN' in os.environ:\n"
        "    os.environ['OWN_RUNS'] = os.environ.get('OWN_RUNS', '') + 'x'\n"
        "    print('own sitecustomize', file=sys.stderr)\n" + code
    )
    return own


def test_two_bootstrap_folders_on_the_path_start_once_and_chain_to_the_users_own(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    # A nested budgetware run of another install, or a symbolic link to this one: their
    # sitecustomize files used to chain into each other until RecursionError.
    copy, link = _copy_bootstrap(tmp_path)
    own = _own_sitecustomize(tmp_path)
    script = tmp_path / "agent.py"
    script.write_text(HTTPX_AGENT + "print(os.environ['OWN_RUNS'], file=sys.stderr)\n")
    env = _env(fake_provider, tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([str(copy), str(link), str(own)])
    done = run(["--batch-budget", "40000", "--", "python", str(script)], env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["own sitecustomize", "x"]
    _assert_bounded(fake_provider, 40_000)


def test_a_start_up_that_fails_still_runs_the_users_sitecustomize(tmp_path: Path) -> None:
    # pydantic that cannot be imported: the settings check raises ImportError.
    broken = tmp_path / "broken"
    (broken / "pydantic").mkdir(parents=True)
    (broken / "pydantic" / "__init__.py").write_text("raise ImportError('broken install')\n")
    own = _own_sitecustomize(tmp_path)
    env = _env(None, tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([str(broken), str(own)])
    done = run(
        ["--endpoints", "gw.example/*=openai_chat", "--", "python", "-c", "print('ran')"], env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ran\n"
    assert done.stderr.splitlines() == [
        "budgetware run: budgetware could not start (ImportError); this program runs unbounded",
        "own sitecustomize",
    ]


def test_opentelemetry_instrument_after_budgetware_run_starts_both(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    # opentelemetry-instrument puts its sitecustomize first and does not chain: budgetware
    # run starts it as `opentelemetry-instrument ... budgetware run ... -- <command>`.
    script = tmp_path / "agent.py"
    script.write_text(
        HTTPX_AGENT
        + "otel = 'opentelemetry.instrumentation.auto_instrumentation' in sys.modules\n"
        + "print('otel started', otel, file=sys.stderr)\n"
    )
    env = _env(fake_provider, tmp_path)
    env.update(
        OTEL_TRACES_EXPORTER="none", OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none"
    )
    done = run(
        [
            "--batch-budget",
            "40000",
            "--",
            "opentelemetry-instrument",
            "--service_name",
            "agent",
            "python",
            str(script),
            "a",
        ],
        env,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"reply": "ok", "args": ["a"]}
    assert done.stderr.splitlines() == ["otel started True"]
    _assert_bounded(fake_provider, 40_000)


def test_a_signal_windows_cannot_send_is_not_an_error() -> None:
    # On Windows Popen.send_signal(SIGINT) raises ValueError (Windows itself is not tested).
    from budgetware.cli.process import forward_signals, restore_signals

    class Child:
        def __init__(self) -> None:
            self.sent: list[int] = []

        def send_signal(self, signum: int) -> None:
            self.sent.append(signum)
            raise ValueError(f"Unsupported signal: {signum}")

    child = Child()
    previous = forward_signals(child)  # type: ignore[arg-type]
    try:
        handler = signal.getsignal(signal.SIGINT)
        assert callable(handler)
        handler(signal.SIGINT, None)
    finally:
        restore_signals(previous)
    assert child.sent == [signal.SIGINT]


MCP_SERVER = """
import os, sys
from mcp.server.mcpserver import MCPServer
print("server hook", "budgetware.cli.startup" in sys.modules, file=sys.stderr)
server = MCPServer("logs")

@server.tool()
def read_log() -> str:
    return "log " + "y" * 30_000

server.run("stdio")
"""

MCP_AGENT = """
import json, os, sys
import anyio, httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def tool_result():
    params = StdioServerParameters(command=sys.executable, args=[sys.argv[1]])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("read_log", {})
        return result.content[0].text

text = anyio.run(tool_result)
print("received", len(text), file=sys.stderr)
call = {"id": "c0", "type": "function", "function": {"name": "read_log", "arguments": "{}"}}
httpx.post(os.environ["FAKE_URL"] + "/v1/chat/completions", timeout=60, json={"model": "m",
    "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [call]},
                 {"role": "tool", "tool_call_id": "c0", "content": text}]},
    headers={"authorization": "Bearer k"}).raise_for_status()
"""


def test_an_mcp_stdio_server_gets_no_hook_and_its_results_are_bounded_at_the_model(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    # mcp's stdio_client passes the server only HOME, LOGNAME, PATH, SHELL, TERM, USER:
    # no PYTHONPATH, so no hook there; what reaches the model is bounded in the agent.
    server = tmp_path / "server.py"
    server.write_text(MCP_SERVER)
    agent = tmp_path / "agent.py"
    agent.write_text(MCP_AGENT)
    done = run(
        ["--batch-budget", "20000", "--", "python", str(agent), str(server)],
        _env(fake_provider, tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert "server hook False" in done.stderr
    assert "received 30004" in done.stderr  # the agent's own code sees the whole result
    (sent,) = _tool_texts(fake_provider)
    assert sent.startswith("[Tool output truncated: 30,004 chars")
    assert len(sent) <= 20_000


# Issue 30 item 7: these ran the program unbounded, with exit code 0.
NO_SUCH_USER = "~budgetware-no-such-user/artifacts"


@pytest.mark.parametrize(
    ("options", "variable", "named"),
    [
        ([], ("BUDGETWARE_MCP_TOOLS", "{bad json"), "mcp_tools (BUDGETWARE_MCP_TOOLS)"),
        ([], ("BUDGETWARE_MCP_RESULT_BUDGET", "100k"), "(BUDGETWARE_MCP_RESULT_BUDGET)"),
        ([], ("BUDGETWARE_ARTIFACT_DIR", NO_SUCH_USER), "artifact_dir (BUDGETWARE_ARTIFACT_DIR)"),
        (["--artifact-dir", NO_SUCH_USER], None, "artifact_dir (--artifact-dir)"),
        (["--artifact-store", NO_SUCH_USER], None, "artifact_store (--artifact-store)"),
    ],
)
def test_a_bad_setting_read_anywhere_stops_the_program_before_it_starts(
    tmp_path: Path,
    options: list[str],
    variable: tuple[str, str] | None,
    named: str,
    refused: Callable[..., Done],
) -> None:
    marker = tmp_path / "ran"
    env = _env(None, tmp_path)
    if variable is not None:
        env[variable[0]] = variable[1]
    program = ["python", "-c", f"import httpx; open({str(marker)!r}, 'w')"]
    done = refused([*options, "--", *program], env)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("budgetware run: invalid budgetware setting: "), line
    assert named in line
    assert not marker.exists()
