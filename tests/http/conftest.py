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
    """The thread each finalize_body call of the HTTP layer ran in (the observed one too:
    the first request of a process is observed while the session log's hook decides)."""
    threads: list[int] = []
    for name in ("finalize_body", "observed_finalize_body"):
        original: Callable[..., Any] = getattr(_transport, name)

        def recording(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            threads.append(threading.get_ident())
            return _original(*args, **kwargs)

        monkeypatch.setattr(_transport, name, recording)
    return threads
