"""Test-wide settings and fixtures: internal errors raise, artifacts stay in a temporary
directory, a fake provider per test, no test leaves ``instrument()`` in effect, and no
library makes an event loop of its own in the main thread."""

from __future__ import annotations

import asyncio
import atexit
import gc
import os
import shutil
import ssl
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

# Temporary files (tmp_path, the artifact directory below, those of the programs the tests
# start) on the RAM file system where there is one and TMPDIR names no other place: tests
# write thousands of artifacts, and what they check of files is the same.
if (
    sys.platform.startswith("linux")
    and "TMPDIR" not in os.environ
    and os.path.isdir("/dev/shm")
    and os.access("/dev/shm", os.W_OK | os.X_OK)
):
    os.environ["TMPDIR"] = "/dev/shm"
    tempfile.tempdir = None  # computed again from TMPDIR

# The pytest runs the tests start (pytester's subprocesses, the xdist grouping test) skip
# langsmith's plugin as this suite does (pyproject.toml): about 3 s of CPU each.
if "no:langsmith_plugin" not in os.environ.get("PYTEST_ADDOPTS", ""):
    os.environ["PYTEST_ADDOPTS"] = (
        os.environ.get("PYTEST_ADDOPTS", "") + " -p no:langsmith_plugin"
    ).strip()
# Set before any test imports an SDK: litellm would otherwise fetch a price map online.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
# Under the test suite an internal error raises instead of letting the request through.
os.environ["BUDGETWARE_RAISE_ERRORS"] = "1"
# opentelemetry-api is installed here (a dev dependency): telemetry tests turn it on.
os.environ["BUDGETWARE_TELEMETRY"] = "0"
# Never write artifacts into the developer's real cache directory.
os.environ["BUDGETWARE_ARTIFACT_DIR"] = tempfile.mkdtemp(prefix="budgetware-test-artifacts-")
# Nor session logs into the developer's cache directory (`budgetware run` writes them by
# default, beside the default artifact directory): the programs the tests start inherit it.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="budgetware-test-cache-")
# No background sweeps of that directory while tests watch file-system access; the tests of
# the sweep turn it on for their own stores.
os.environ["BUDGETWARE_ARTIFACT_SWEEP_INTERVAL"] = "0"

# Imported here, once: its entry points (trio's register_random) would otherwise run first
# inside an in-process pytester run, where the registration warns and fails that run.
import hypothesis  # noqa: F401
import pytest

from budgetware.http.instrument import uninstrument
from budgetware.telemetry import otel
from budgetware.testing import FakeProvider


def _end_now() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# An xdist worker ends without tearing its interpreter down: freeing the SDKs' modules and
# the heap of a thousand tests kept both cores busy for seconds after the last result,
# which nothing reads. Registered before every exit handler of the tests, it runs after
# them (only execnet's, logging's and certifi's come first, and a worker needs none).
if os.environ.get("PYTEST_XDIST_WORKER"):
    atexit.register(_end_now)

# Every SDK client a test makes builds an SSL context of its own, and loading the CA bundle
# into it costs 25 ms of CPU: hundreds of clients a worker, several seconds. No test makes
# a TLS connection (they all talk plain HTTP to 127.0.0.1) and none looks at a context. The
# contexts one call site builds with the same arguments are one, built once (a library that
# changes its context, as litellm does, changes its own); the clients, their transports and
# every request stay the libraries' own. The programs the tests start build theirs as usual.
_default_context = ssl.create_default_context
_contexts: dict[tuple[object, ...], ssl.SSLContext] = {}


def _shared_default_context(
    purpose: ssl.Purpose = ssl.Purpose.SERVER_AUTH,
    *,
    cafile: str | None = None,
    capath: str | None = None,
    cadata: str | bytes | None = None,
) -> ssl.SSLContext:
    site = sys._getframe(1).f_code
    key = (site.co_filename, site.co_firstlineno, purpose, cafile, capath, cadata)
    context = _contexts.get(key)
    if context is None:
        context = _contexts[key] = _default_context(
            purpose, cafile=cafile, capath=capath, cadata=cadata
        )
    return context


ssl.create_default_context = _shared_default_context  # type: ignore[assignment]

# A full collection walks the whole heap of a worker (the SDKs, litellm, a million objects
# and more: 0.3 to 0.4 s of CPU each), and Python's thresholds gave 15 to 22 of them a
# worker, 12 s of CPU a run. One every 100 collections of the younger generations, not 10:
# cyclic garbage still goes (young cycles as before, old ones later), and pytest collects
# what is left at the end of the session, where any finalizer's error is still reported.
_young, _middle, _ = gc.get_threshold()
gc.set_threshold(_young, _middle, 100)

# The artifact directory goes when the process ends (it may be in memory, above): every
# run left one behind.
atexit.register(shutil.rmtree, os.environ["BUDGETWARE_ARTIFACT_DIR"], ignore_errors=True)
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], ignore_errors=True)

# budgetware's pytest plugin imported budgetware before this file set the variable above.
otel.disable()

# The pytest plugin's tests run pytest on test modules they write; xdist_groups keeps each
# xdist_group on one worker under scripts/test. s3_server's fixtures are registered here,
# once: a session fixture imported into several test modules or conftest files is a
# separate fixture in each, and each started its own moto server (16 a run, not 2).
# docs_run runs the Python blocks of README.md and docs/ (testpaths).
pytest_plugins = ["pytester", "xdist_groups", "s3_server", "docs_run"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "files_in_subprocesses: only the processes the test starts touch the store's files "
        "(fs_watch.parametrize_file_api runs it once)",
    )


# The modules that drive every SDK (google-genai, ollama, mistralai, cohere, the OpenAI
# Agents SDK, pydantic-ai, smolagents, ...), litellm among them.
SDK_MODULES = frozenset(
    {
        "test_sdks.py",
        "test_history_sdks.py",
        "test_fake_provider.py",
        "test_fake_cache.py",
        "test_framework_tools.py",
        "test_sdk_schemas.py",
        "test_integrations.py",
        "test_usage.py",
        "test_text_results.py",
        "test_instrument.py",  # imports what every patch target lives in
        "test_public_api.py",  # imports every public module
    }
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that use litellm, and the modules that drive every SDK, run where the
    LiteLLM proxies do (``xdist_group("litellm_proxy")``): under ``--dist loadgroup`` one
    worker imports litellm and those SDKs (about 4 s of CPU for litellm alone), not both."""
    for item in items:
        if item.path.suffix != ".py" or any(item.iter_markers("xdist_group")):
            continue  # docs_run groups the docs pages
        if "litellm" in item.nodeid.lower() or item.path.name in SDK_MODULES:
            item.add_marker(pytest.mark.xdist_group("litellm_proxy"))
    # The modules of second-long tests that came last go first, whole: xdist hands out the
    # tests in this order (groups ahead) and a worker holds up to three of them, so a long
    # one near the end kept one worker busy seconds after the other had nothing left.
    early = [item for item in items if _relative(item) in RUN_EARLY]
    if early:
        items[:] = early + [item for item in items if _relative(item) not in RUN_EARLY]


# Near the end of the order by path; tests of 1 to 2 s each.
RUN_EARLY = frozenset({"tests/test_examples.py", "tests/wire/test_memory.py"})
_ROOT = Path(__file__).parent.parent


def _relative(item: pytest.Item) -> str:
    try:
        return item.path.relative_to(_ROOT).as_posix()
    except ValueError:
        return ""


# What a worker keeps from test to test (modules, the SDKs' state, caches, session fixtures)
# is set aside once it has grown by many modules (an SDK's import in a test, most of them in
# the first tests of a worker): a full collection at the end of that test's teardown (its
# garbage goes first, and any finalizer's error is reported for it, as pytest collects
# them after this), then gc.freeze(), so later collections (the automatic full ones, and
# the tests' own gc.collect()) walk only what came after. At the end of the session it is
# all put back, where pytest's last collection walks everything as before.
_SETTLE_AFTER_MODULES = 50
_settled_modules = 0


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    global _settled_modules
    if len(sys.modules) - _settled_modules >= _SETTLE_AFTER_MODULES:
        gc.collect()
        gc.freeze()
        _settled_modules = len(sys.modules)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish() -> None:
    gc.unfreeze()


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A running FakeProvider on 127.0.0.1 (default reply: text "ok"), stopped after."""
    with FakeProvider() as provider:
        yield provider


@pytest.fixture(autouse=True, scope="session")
def _no_implicit_event_loop() -> None:
    """The main thread has no current event loop until a test sets one.

    Otherwise the first ``asyncio.get_event_loop()`` of a worker (litellm's sync calls make
    one for their service logging) creates a loop nobody closes; the next async test
    replaces it, and the garbage collector reports "unclosed event loop" as an error in
    whichever test it happens to run in. After any async test the main thread is in this
    state anyway (``asyncio.Runner`` sets the loop back to None): now it is from the start.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            loop = None
        if loop is not None and not loop.is_running():
            loop.close()
        asyncio.set_event_loop(None)


@pytest.fixture(autouse=True)
def _never_leave_instrumented() -> Iterator[None]:
    """No test leaves ``instrument()`` in effect for the next one."""
    yield
    uninstrument()
