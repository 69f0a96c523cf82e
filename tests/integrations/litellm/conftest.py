"""Fixtures for the LiteLLM Proxy / Router tests: a budget config, a callback, a fake provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from litellm_proxy_helpers import BUDGET

from budgetware.core.config import BudgetConfig


@pytest.fixture
def artifact_dir(tmp_path: Path) -> Path:
    return tmp_path / "artifacts"


@pytest.fixture
def config(artifact_dir: Path) -> BudgetConfig:
    return BudgetConfig(batch_budget=BUDGET, artifact_dir=artifact_dir)


@pytest.fixture
def callback(config: BudgetConfig) -> Any:
    from budgetware.integrations.litellm import budget_callback

    return budget_callback(config=config)


@pytest.fixture
def registered(callback: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The callback as litellm's only callback, for this test only."""
    import litellm

    monkeypatch.setattr(litellm, "callbacks", [callback])
    return callback
