"""Diagnostics tests: a fixed key, a fake clock and an in-memory sink, reset afterwards."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from budgetware.diagnostics import events as diagnostics

KEY = bytes(range(32))


class FakeClock:
    """A settable monotonic clock in seconds."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Log:
    """The lines diagnostics wrote, raw and parsed."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def __call__(self, line: bytes) -> None:
        self.lines.append(line)

    @property
    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines]

    @property
    def text(self) -> str:
        return b"".join(self.lines).decode("utf-8")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(diagnostics.ENV_VAR, raising=False)
    diagnostics.reset()
    yield
    diagnostics.reset()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def log(clock: FakeClock) -> Log:
    """Diagnostics on, writing into memory, with a fixed key and the fake clock."""
    sink = Log()
    diagnostics.configure(key=KEY, clock=clock, sink=sink)
    return sink
