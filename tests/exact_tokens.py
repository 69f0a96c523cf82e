"""Skip a test of an exact token unit where no vocabulary can be found: CI's lowest-versions
run installs tiktoken without litellm's vocabulary files, and its cache is empty offline."""

from __future__ import annotations

import pytest

from budgetware.core import tokens


def _unavailable() -> str | None:
    try:
        tokens.check_available("o200k_base")
    except tokens.ExactTokensUnavailable as exc:
        return str(exc)
    return None


UNAVAILABLE = _unavailable()
needs_vocabulary = pytest.mark.skipif(
    UNAVAILABLE is not None, reason=f"exact tokens unavailable: {UNAVAILABLE}"
)
