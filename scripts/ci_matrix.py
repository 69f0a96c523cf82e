"""The core, wire and HTTP tests on every supported CPython, and once on the lowest versions.

Run it as ``scripts/ci-matrix`` (``scripts/ci-matrix 3.12 lowest`` runs only those).

For each of Python 3.10 ... 3.13 found on this machine (on PATH, else under pyenv), a
fresh virtual environment gets budgetware (editable, so the tests can find the tree) with
the ``all`` extra and the ``test`` extra; where that does not resolve, each extra and each
test tool that resolves alone, and the line says which were left out. An interpreter that
is absent is skipped with a printed line. Then one more environment, on the oldest Python
found, pins the runtime dependencies to the lowest versions pyproject.toml declares
(pydantic, wrapt, orjson, httpx). Tests whose SDK is not installed skip themselves.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = ("3.10", "3.11", "3.12", "3.13")
TESTS = ("tests/core", "tests/wire", "tests/http")
# The runtime dependencies whose lowest declared versions are tested together.
FLOORS = ("pydantic", "wrapt", "orjson", "msgspec", "httpx")
# Extras that are groups of others, or not about running budgetware.
META_EXTRAS = {"all", "dev", "docs", "test", "proxy", "demo"}
UV = str(ROOT / ".venv" / "bin" / "uv")


@dataclass
class Outcome:
    name: str
    python: str = ""
    status: str = "skipped"
    left_out: list[str] = field(default_factory=list)
    seconds: float = 0.0


def say(text: str) -> None:
    print(f"ci-matrix: {text}", flush=True)


def find_python(version: str) -> str | None:
    """An interpreter that really is CPython ``version`` (a pyenv shim may not be)."""
    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates = [shutil.which(f"python{version}") or ""]
    candidates += sorted(glob.glob(f"{pyenv}/versions/{version}.*/bin/python{version}"))
    check = f"import sys; sys.exit(sys.version_info[:2] != {tuple(map(int, version.split('.')))})"
    for candidate in filter(None, candidates):
        try:
            done = subprocess.run([candidate, "-c", check], capture_output=True, timeout=30)
        except OSError:
            continue
        if done.returncode == 0:
            return candidate
    return None


def project() -> dict[str, object]:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]  # type: ignore[no-any-return]


def lowest_pins() -> list[str]:
    """``name==X`` for each of FLOORS, X its lower bound in pyproject.toml."""
    meta = project()
    specs = list(meta["dependencies"])  # type: ignore[call-overload]
    for extra in meta["optional-dependencies"].values():  # type: ignore[attr-defined]
        specs += extra
    pins = []
    for name in FLOORS:
        bound = next(
            (m.group(1) for s in specs if (m := re.match(rf"{name}\s*>=\s*([\w.]+)", s))), None
        )
        if bound is None:
            raise SystemExit(f"ci-matrix: no '{name}>=' lower bound in pyproject.toml")
        pins.append(f"{name}=={bound}")
    return pins


def resolves(python: str, specs: list[str]) -> bool:
    command = [UV, "pip", "install", "--dry-run", "-q", "--python", python, *specs]
    return subprocess.run(command, capture_output=True, cwd=ROOT).returncode == 0


def choose(python: str, pins: list[str]) -> tuple[list[str], list[str]]:
    """What to install: ``-e .[all,test]`` if it resolves, else each part that does."""
    whole = ["-e", ".[all,test]", *pins]
    if resolves(python, whole):
        return whole, []
    meta = project()
    extras = [e for e in meta["optional-dependencies"] if e not in META_EXTRAS]  # type: ignore[attr-defined]
    tools = list(meta["optional-dependencies"]["test"])  # type: ignore[index]
    chosen_extras: list[str] = []
    chosen_tools: list[str] = []
    left_out: list[str] = []

    def specs(extras_: list[str], tools_: list[str]) -> list[str]:
        return ["-e", f".[{','.join(extras_)}]" if extras_ else ".", *tools_, *pins]

    if not resolves(python, specs([], [])):
        raise SystemExit(f"ci-matrix: budgetware itself does not resolve with {pins}")
    for extra in extras:
        if resolves(python, specs([*chosen_extras, extra], chosen_tools)):
            chosen_extras.append(extra)
        else:
            left_out.append(f"[{extra}]")
    for tool in tools:
        if resolves(python, specs(chosen_extras, [*chosen_tools, tool])):
            chosen_tools.append(tool)
        else:
            left_out.append(tool)
    return specs(chosen_extras, chosen_tools), left_out


def run(
    name: str, interpreter: str, work: Path, pins: list[str], pytest_args: list[str]
) -> Outcome:
    started = time.monotonic()
    outcome = Outcome(name)
    venv = work / name
    subprocess.run([UV, "venv", "-q", "--python", interpreter, str(venv)], check=True)
    python = str(venv / "bin" / "python")
    specs, outcome.left_out = choose(python, pins)
    subprocess.run([UV, "pip", "install", "-q", "--python", python, *specs], check=True, cwd=ROOT)
    versions = subprocess.run(
        [
            python,
            "-c",
            "import importlib.metadata as m, platform; print(platform.python_version(), "
            f"', '.join(f'{{n}} {{m.version(n)}}' for n in {FLOORS!r}))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split(" ", 1)
    outcome.python = versions[0]
    say(f"{name}: Python {versions[0]}; {versions[1].strip()}")
    if outcome.left_out:
        say(f"{name}: left out (they do not resolve here): {', '.join(outcome.left_out)}")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    command = [str(venv / "bin" / "pytest"), *TESTS, "-p", "no:cacheprovider", *pytest_args]
    has_xdist = subprocess.run([python, "-c", "import xdist"], capture_output=True).returncode == 0
    if has_xdist and "-n" not in pytest_args:
        command += ["-n", "auto", "--dist", "loadgroup"]  # as scripts/test runs the suite
    code = subprocess.run(command, cwd=ROOT, env=env).returncode
    outcome.status = "passed" if code in (0, 5) else f"failed (pytest exit {code})"
    outcome.seconds = time.monotonic() - started
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/ci-matrix", description=__doc__.split("\n")[0])
    parser.add_argument("only", nargs="*", help="versions (3.10 ...) and/or 'lowest'")
    parser.add_argument("--pytest", default="-q", help="arguments for pytest")
    args = parser.parse_args(argv)
    wanted = set(args.only) or {*VERSIONS, "lowest"}
    pytest_args = args.pytest.split()
    outcomes: list[Outcome] = []
    found: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="budgetware-ci-matrix-") as temp:
        work = Path(temp)
        for version in VERSIONS:
            interpreter = find_python(version)
            if interpreter is None:
                say(f"python{version}: not found on this machine (PATH, pyenv): skipped")
                outcomes.append(Outcome(f"python{version}", status="skipped: not found"))
                continue
            found[version] = interpreter
            if version in wanted:
                outcomes.append(run(f"python{version}", interpreter, work, [], pytest_args))
        if "lowest" in wanted:
            if not found:
                outcomes.append(Outcome("lowest", status="skipped: no interpreter"))
            else:
                oldest = min(found, key=lambda v: tuple(map(int, v.split("."))))
                pins = lowest_pins()
                say(f"lowest: Python {oldest} with {' '.join(pins)}")
                outcomes.append(run("lowest", found[oldest], work, pins, pytest_args))
    print()
    for o in outcomes:
        left = f"; left out {', '.join(o.left_out)}" if o.left_out else ""
        say(f"{o.name:<11} {o.python:<8} {o.status} ({o.seconds:.0f}s){left}")
    return 1 if any(o.status.startswith("failed") for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
