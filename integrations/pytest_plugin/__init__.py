"""budgetware's pytest plugin: assert an agent's budgets in its own test suite.

Registered by installing budgetware (docs/pytest.md); it imports nothing heavy until a test
uses it. ``budgetware_capture`` runs the test with ``instrument()`` on and records every
request (artifacts in the test's own directory unless a store is named);
``@pytest.mark.budgetware(...)`` gives a test its settings and the fixture.

::

    @pytest.mark.budgetware(batch_budget=20_000)
    def test_the_agent_fixes_the_bug(budgetware_capture, fake_provider):
        run_my_agent(...)
        budgetware_capture.assert_within_budget()
        assert budgetware_capture.results_cut >= 1
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from budgetware.core.observe import BatchReport, RequestReport, UsageReport

__all__ = ["BudgetwareCapture", "budgetware_capture"]

MARKER = "budgetware"
FIXTURE = "budgetware_capture"


class BudgetwareCapture:
    """What budgetware did to the requests of one test (read it after the agent ran)."""

    def __init__(self, settings: dict[str, Any], artifact_dir: Path | None = None) -> None:
        self.settings = settings
        """The settings the test ran with (from its ``budgetware`` marker)."""
        self.artifact_dir = artifact_dir
        """The test's own artifact directory (None when the marker or the environment
        names the store)."""
        self.requests: list[RequestReport] = []
        """One report per request, in the order they reached the network; ``usage`` holds
        the provider's counters once its response has ended."""
        self.usage: list[UsageReport] = []
        """The provider's counters of each response that carried them, in the order the
        responses ended (each names its ``request``)."""

    @property
    def batches(self) -> list[BatchReport]:
        """Every batch of tool results of every request, in order."""
        return [batch for request in self.requests for batch in request.batches]

    @property
    def bounded(self) -> list[RequestReport]:
        """The requests whose body budgetware changed."""
        return [request for request in self.requests if request.bounded]

    @property
    def results_cut(self) -> int:
        """How many tool results were cut, over every request."""
        return sum(request.results_cut for request in self.requests)

    @property
    def artifacts(self) -> list[str]:
        """The references of every artifact written during the test (full outputs), in
        order; one an earlier request already wrote is not written again (see
        ``referenced``)."""
        return [ref for batch in self.batches for ref in batch.written]

    @property
    def referenced(self) -> list[str]:
        """The references of every artifact the previews sent name, written now or reused
        from an earlier request, in order and each once."""
        return list(dict.fromkeys(ref for batch in self.batches for ref in batch.referenced))

    def clear(self) -> None:
        """Forget what was recorded so far."""
        self.requests.clear()
        self.usage.clear()

    def assert_within_budget(self, budget: int | None = None, *, min_requests: int = 1) -> None:
        """Fail unless every batch that was sent fits its budget (or ``budget``, in the same
        unit), every request's history its ``history_budget``, no request went out unchanged
        because budgetware failed on it, and at least ``min_requests`` requests were
        recorded (nothing recorded is no proof: the agent may send through a client
        budgetware does not see, such as aiohttp)."""
        __tracebackhide__ = True  # a failure shows the test's line, not this method's source
        if len(self.requests) < min_requests:
            raise AssertionError(
                f"budgetware saw {len(self.requests)} request(s), expected at least "
                f"{min_requests}: nothing proves the budget held. The agent sent nothing "
                "through httpx or httpx2 while the test ran (a client on aiohttp or "
                "requests is out of reach of instrument()), or it ran before the fixture; "
                "pass min_requests=0 if no request is expected"
            )
        problems: list[str] = []
        for number, request in enumerate(self.requests, 1):
            if request.error is not None:
                problems.append(
                    f"request {number} ({request.api or 'unknown format'}): budgetware failed "
                    f"({request.error}) and sent it unchanged"
                )
            history = request.history
            # A history left to the provider (context_management) is the provider's to bound.
            if history is not None and history.skipped is None and history.budget < history.after:
                problems.append(
                    f"request {number} ({request.api or 'unknown format'}): history of "
                    f"{history.after:,} {request.unit} sent, history budget {history.budget:,} "
                    "(its newest batches alone are over it)"
                )
            for index, batch in enumerate(request.batches, 1):
                limit = batch.budget if budget is None else budget
                if limit > 0 and batch.size_after > limit:
                    problems.append(
                        f"request {number} ({request.api or 'unknown format'}), batch {index}: "
                        f"{batch.size_after:,} {request.unit} sent, budget {limit:,}"
                    )
        if problems:
            raise AssertionError("tool results over budget:\n  " + "\n  ".join(problems))

    def __repr__(self) -> str:
        return (
            f"<BudgetwareCapture {len(self.requests)} request(s), {len(self.bounded)} bounded, "
            f"{self.results_cut} tool result(s) cut>"
        )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(**settings): run the test with budgetware instrumented with these "
        "settings (fields of budgetware.BudgetConfig) and the budgetware_capture fixture",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A marked test gets the fixture without naming it; unmarked tests are left as they are.
    for item in items:
        if item.get_closest_marker(MARKER) is None:
            continue
        names = getattr(item, "fixturenames", None)
        if isinstance(names, list) and FIXTURE not in names:
            names.append(FIXTURE)


@pytest.fixture
def budgetware_capture(request: pytest.FixtureRequest) -> Iterator[BudgetwareCapture]:
    """Instrument for this test and record what budgetware did (see the module doc)."""
    from budgetware.core import observe
    from budgetware.core.config import BudgetConfig, check_overrides
    from budgetware.http.instrument import instrument

    marker = request.node.get_closest_marker(MARKER)
    settings: dict[str, Any] = {}
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(
                f"@pytest.mark.{MARKER} takes settings as keywords, "
                f"e.g. @pytest.mark.{MARKER}(batch_budget=20_000)"
            )
        settings = dict(marker.kwargs)
    # Artifacts in a directory of the test's own, unless a store is named: the user's cache
    # is never written, and a second run finds no artifact of the first to reuse.
    artifact_dir: Path | None = None
    named = ("artifact_dir", "artifact_store")
    if not any(name in settings or f"BUDGETWARE_{name.upper()}" in os.environ for name in named):
        artifact_dir = request.getfixturevalue("tmp_path") / "budgetware-artifacts"
    overrides = settings if artifact_dir is None else {**settings, "artifact_dir": artifact_dir}
    # A bad setting is a ConfigError naming it, at setup: the test errors, it does not fail.
    config = BudgetConfig(**check_overrides(overrides))
    capture = BudgetwareCapture(settings, artifact_dir)
    subscription = observe.subscribe(request=capture.requests.append, usage=capture.usage.append)
    with subscription, instrument(config=config):
        yield capture
