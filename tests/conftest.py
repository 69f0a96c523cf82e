"""Test-wide settings and fixtures: internal errors raise, artifacts stay in a temporary
directory, a fake provider per test, and no test leaves ``instrument()`` in effect."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

# Set before any test imports an SDK: litellm would otherwise fetch a price map online.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
# Under the test suite an internal error raises instead of letting the request through.
os.environ["BUDGETWARE_RAISE_ERRORS"] = "1"
# opentelemetry-api is installed here (a dev dependency): telemetry tests turn it on.
os.environ["BUDGETWARE_TELEMETRY"] = "0"
# Never write artifacts into the developer's real cache directory.
os.environ["BUDGETWARE_ARTIFACT_DIR"] = tempfile.mkdtemp(prefix="budgetware-test-artifacts-")
# No background sweeps of that directory while tests watch file-system access; the tests of
# the sweep turn it on for their own stores.
os.environ["BUDGETWARE_ARTIFACT_SWEEP_INTERVAL"] = "0"

import pytest

from budgetware.http.instrument import uninstrument
from budgetware.telemetry import otel
from budgetware.testing import FakeProvider

# budgetware's pytest plugin imported budgetware before this file set the variable above.
otel.disable()

# The pytest plugin's tests run pytest on test modules they write; xdist_groups keeps each
# xdist_group on one worker under scripts/test.
pytest_plugins = ["pytester", "xdist_groups"]


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A running FakeProvider on 127.0.0.1 (default reply: text "ok"), stopped after."""
    with FakeProvider() as provider:
        yield provider


@pytest.fixture(autouse=True)
def _never_leave_instrumented() -> Iterator[None]:
    """No test leaves ``instrument()`` in effect for the next one."""
    yield
    uninstrument()
