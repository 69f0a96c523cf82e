"""Fixtures for the integration tests: an artifact directory and a budget config using it."""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetware.core.config import BudgetConfig


@pytest.fixture
def artifact_dir(tmp_path: Path) -> Path:
    return tmp_path / "artifacts"


@pytest.fixture
def config(artifact_dir: Path) -> BudgetConfig:
    return BudgetConfig(batch_budget=50_000, artifact_dir=artifact_dir)
