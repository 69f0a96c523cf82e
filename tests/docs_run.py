"""The docs run: every Python block of README.md and docs/*.md runs, top to bottom, as a
reader would run it, against ``budgetware.testing.FakeProvider`` (Sybil collects them).

Each page is one session: its blocks share one namespace, in order. Before its first block
the SDKs are pointed at a fake provider on 127.0.0.1 the way a user points them at a
gateway, through their own environment variables (``OPENAI_BASE_URL``,
``ANTHROPIC_BASE_URL``, ...), artifacts go to a directory of the page's own, and the
current directory is a temporary one; after its last block all of it is undone and
``instrument()`` is off again. The namespace holds what the pages call the reader's own:
``messages``, a conversation whose last tool result is 300,000 characters of test log.

A block that cannot run here says why, next to it: ``<!-- skip: next "the reason" -->``.
``await`` may stand at the top level of a block, as in ``python -m asyncio``.

A plugin of tests/conftest.py, not a conftest.py at the root: any conftest.py there broke
the pytest plugin's in-process pytester runs ("Module already imported so cannot be
rewritten; budgetware"). pytest runs the pages with the suite (they are in testpaths);
alone: ``pytest tests/test_docs.py README.md docs`` (a path under tests/ loads the plugin).
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest

try:
    from sybil import Example, Sybil
    from sybil.parsers.markdown import CodeBlockParser, SkipParser
except ImportError:  # Python 3.10 (scripts/ci-matrix runs no docs there)
    Sybil = None  # type: ignore[assignment,misc]

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("README.md", "docs/*.md")
# What a page's blocks may take as the reader's own: the last turn of an agent that ran
# the test suite, whose output is far over any budget the pages set.
BIG_LOG = "PASSED tests/test_api.py::test_ok\n" * 8_000 + "FAILED tests/test_cart.py::test_total\n"


def _messages() -> list[dict[str, Any]]:
    call = {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
    return [
        {"role": "user", "content": "Why does the build fail?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": BIG_LOG},
    ]


def evaluate(example: Example) -> None:
    """Sybil's Python evaluator, plus ``await`` at the top level of a block."""
    __tracebackhide__ = True
    # Blank lines before the block: a traceback names the page's own line numbers.
    source = "\n" * (example.line + example.parsed.line_offset) + example.parsed
    code = compile(
        source, example.path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )
    if code.co_flags & inspect.CO_COROUTINE:
        _close_implicit_loop()
        asyncio.run(eval(code, example.namespace))
    else:
        exec(code, example.namespace)
    example.namespace.pop("__builtins__", None)
    example.namespace["__page"].blocks.append(str(example.parsed))


def _close_implicit_loop() -> None:
    """Closes the event loop a library made in the main thread and left open.

    litellm's sync calls make one (for their logging) and never close it; once
    ``asyncio.run`` replaces it, the garbage collector reports it unclosed, an error in
    whatever block runs then (tests/conftest.py does the same for the suite).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return
        if not loop.is_running():
            loop.close()
            asyncio.set_event_loop(None)


def run_as_test_module(namespace: dict[str, Any]) -> str:
    """Runs the page's blocks so far as one test module, as ``pytest`` runs a user's suite
    (budgetware's plugin included), and returns its report: for the pages that show tests."""
    page: _Page = namespace["__page"]
    module = page.tmp / "test_page.py"
    module.write_text("\n\n".join(page.blocks), encoding="utf-8")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    # budgetware's plugin alone: the other plugins installed here (hypothesis, xdist, ...)
    # are not the page's, and loading them took seconds.
    command += ["-p", "budgetware.integrations.pytest_plugin"]
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(
        [*command, module.name], cwd=page.tmp, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


class _Page:
    """What a page's run changed, to undo after its last block."""

    def __init__(self) -> None:
        from budgetware.telemetry import otel
        from budgetware.testing import FakeProvider

        self.blocks: list[str] = []  # the sources run so far
        self.state = _global_state()
        # A reader's first instrument() turns telemetry on; the suite has it off.
        self.telemetry = otel.enabled()
        self.environ = dict(os.environ)
        self.cwd = Path.cwd()
        self.tmp = Path(tempfile.mkdtemp(prefix="budgetware-docs-"))
        self.provider = FakeProvider().start()
        url = self.provider.url
        # A reader's defaults, whatever the test suite set for itself (tests/conftest.py).
        for name in [name for name in os.environ if name.startswith("BUDGETWARE_")]:
            del os.environ[name]
        os.environ.update(
            OPENAI_BASE_URL=f"{url}/v1",
            OPENAI_API_KEY="sk-docs",
            ANTHROPIC_BASE_URL=url,
            ANTHROPIC_API_KEY="sk-ant-docs",
            GOOGLE_API_KEY="docs",
            GOOGLE_GEMINI_BASE_URL=url,
            GEMINI_API_KEY="docs",
            GEMINI_API_BASE=f"{url}/v1beta",
            AWS_REGION="us-east-1",
            MISTRAL_API_KEY="docs",
            CO_API_KEY="docs",
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            BUDGETWARE_ARTIFACT_DIR=str(self.tmp / "artifacts"),
            BUDGETWARE_RAISE_ERRORS="1",
        )
        os.chdir(self.tmp)

    def close(self) -> None:
        from budgetware import uninstrument
        from budgetware.telemetry import otel

        uninstrument()
        if not self.telemetry:
            otel.disable()
        _close_implicit_loop()
        self.provider.stop()
        os.chdir(self.cwd)
        os.environ.clear()
        os.environ.update(self.environ)
        _restore_global_state(self.state)
        shutil.rmtree(self.tmp, ignore_errors=True)


def _global_state() -> dict[str, Any]:
    """What a page may change for the rest of its process besides instrument() and the
    environment: logging (observability.md turns the INFO line on, which makes every entry
    point build reports), the observation seam's subscribers, the S3 store's flag."""
    import logging

    from budgetware.core import observe
    from budgetware.store import select

    loggers = {
        name: (log.level, list(log.handlers), log.propagate, log.disabled)
        for name in ("", "budgetware")
        for log in [logging.getLogger(name)]
    }
    listeners = dict(observe._listeners)
    return {"loggers": loggers, "listeners": listeners, "remote": select._remote_in_use}


def _restore_global_state(state: dict[str, Any]) -> None:
    import logging

    from budgetware.core import observe
    from budgetware.store import select

    for name, (level, handlers, propagate, disabled) in state["loggers"].items():
        log = logging.getLogger(name)
        for handler in log.handlers:
            if handler not in handlers:
                handler.close()
        log.handlers[:] = handlers
        log.setLevel(level)
        log.propagate, log.disabled = propagate, disabled
    with observe._lock:
        observe._listeners.update(state["listeners"])
        observe._publish()
    select._remote_in_use = state["remote"]


def setup(namespace: dict[str, Any]) -> None:
    page = _Page()
    namespace["__page"] = page
    namespace["messages"] = _messages()
    # For the pages' hidden checks (<!-- invisible-code-block: python -->).
    namespace["fake_provider"] = page.provider
    namespace["run_as_test_module"] = lambda: run_as_test_module(namespace)


def teardown(namespace: dict[str, Any]) -> None:
    namespace["__page"].close()


if Sybil is not None:
    from sybil.integration.pytest import SybilItem

    _cut_traceback = SybilItem._traceback_filter

    def _traceback_filter(self: SybilItem, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        # Sybil cuts each traceback at its own frame; a chained exception (the cause of an
        # SDK's error) has none, and reporting it raised IndexError: show that one whole.
        try:
            return _cut_traceback(self, excinfo)
        except IndexError:
            return excinfo.traceback

    SybilItem._traceback_filter = _traceback_filter  # type: ignore[method-assign]

    pytest_collect_file = Sybil(
        parsers=[CodeBlockParser("python", evaluate), SkipParser()],
        patterns=PAGES,
        path=str(ROOT),
        setup=setup,
        teardown=teardown,
    ).pytest()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A page's blocks build on one another: under pytest-xdist they run in one worker. The
    # pages that import litellm (4 s of CPU) or the OpenAI Agents SDK run in the worker of
    # the other tests of those SDKs (tests/conftest.py), which imports each once.
    for item in items:
        if item.__class__.__name__ == "SybilItem":
            group = "docs:" + item.path.relative_to(ROOT).as_posix()
            text = item.path.read_text(encoding="utf-8")
            if "import litellm" in text or "from agents import" in text:
                group = "litellm_proxy"
            item.add_marker(pytest.mark.xdist_group(group))
