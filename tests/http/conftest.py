"""Fixtures for the HTTP-layer tests: an artifact directory, a budget config using it, and
the threads bounding ran in."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from budgetware.core.config import BudgetConfig
from budgetware.http import transport as _transport


@pytest.fixture
def artifact_dir(tmp_path: Path) -> Path:
    return tmp_path / "artifacts"


@pytest.fixture
def config(artifact_dir: Path) -> BudgetConfig:
    return BudgetConfig(batch_budget=50_000, artifact_dir=artifact_dir)


@pytest.fixture
def finalize_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread each finalize_body call of the HTTP layer ran in."""
    threads: list[int] = []
    original: Callable[..., bytes] = _transport.finalize_body

    def recording(*args: Any, **kwargs: Any) -> bytes:
        threads.append(threading.get_ident())
        return original(*args, **kwargs)

    monkeypatch.setattr(_transport, "finalize_body", recording)
    return threads
