"""Fixtures for the HTTP-layer tests: a fake provider, a budget config, no leftover patches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from budgetware._config import BudgetConfig
from budgetware._instrument import uninstrument
from budgetware.testing import FakeProvider


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


@pytest.fixture
def artifact_dir(tmp_path: Path) -> Path:
    return tmp_path / "artifacts"


@pytest.fixture
def config(artifact_dir: Path) -> BudgetConfig:
    return BudgetConfig(batch_budget=50_000, artifact_dir=artifact_dir)


@pytest.fixture(autouse=True)
def _never_leave_instrumented() -> Iterator[None]:
    yield
    uninstrument()
