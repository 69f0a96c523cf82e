"""Fixtures for the SDK tests: a fresh fake provider on 127.0.0.1 for every test."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from budgetware.testing import FakeProvider

# litellm downloads its model cost map at import time unless told to use the bundled one;
# set before any test module imports it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A running FakeProvider (default reply: text "ok"), stopped after the test."""
    with FakeProvider() as fp:
        yield fp
