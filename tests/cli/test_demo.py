"""``budgetware demo`` runs offline, bounds every batch, writes artifacts and exits 0."""

from __future__ import annotations

import re
import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_demo_runs_offline_and_bounds_every_batch(
    provider: str, tmp_path: Path, run_demo: Callable[..., CompletedProcess[str]]
) -> None:
    # A developer's shell often holds a real provider's key and URL: the demo stays offline
    # (and free) unless --real (issue 30, item 16). The anthropic run names its artifact
    # directory and says --budget; the openai run names none, so the demo says where the
    # artifacts are, and says --batch-budget, as `budgetware run` and
    # docs/configuration.md do (--budget stays).
    if provider == "anthropic":
        options = ["--artifact-dir", str(tmp_path), "--budget", "20000"]
    else:
        options = ["--batch-budget", "20000"]
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{unused.getsockname()[1]}"
        prefix = provider.upper()
        variables = {f"{prefix}_API_KEY": "sk-real-and-paid", f"{prefix}_BASE_URL": nowhere}
        done = run_demo("--provider", provider, *options, **variables)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    directory = tmp_path
    if provider == "openai":
        [where] = re.findall(r"full outputs in (\S+) \(kept", out)
        directory = Path(where)
    try:
        assert "embedded fake provider (offline)" in out
        assert out.count("batch on the wire: 20,000 chars (budget 20,000)") == 3
        assert "Model's answer: The rounding bug in cart.total() is fixed" in out
        assert "[Tool output truncated: 432,460 chars" in out
        written = re.findall(r"artifact written: (\w+\.txt) \(([\d,]+) bytes\)", out)
        assert len(written) == 4
        assert len(list(directory.glob("*.txt"))) == 4
        for name, size in written:
            assert (directory / name).stat().st_size == int(size.replace(",", ""))
        assert str(directory) in out
    finally:
        if directory != tmp_path:
            shutil.rmtree(directory)
    # Every request re-sends the history exactly as bounded before: the fake provider reads
    # all of the previous prompt from its cache (OpenAI's in steps of 128 tokens; a prompt
    # is cached from 1,024 tokens on, as the APIs do).
    read = re.findall(r"prompt cache: ([\d,]+) of ([\d,]+) input tokens read", out)
    (_, first), (second, total), (third, _) = [
        (int(a.replace(",", "")), int(b.replace(",", ""))) for a, b in read
    ]
    assert first - 128 < second <= first
    assert total - 128 < third <= total


def test_demo_help_names_both_budget_options(
    run_demo: Callable[..., CompletedProcess[str]],
) -> None:
    shown = run_demo("--help")
    assert "--budget N, --batch-budget N" in shown.stdout
