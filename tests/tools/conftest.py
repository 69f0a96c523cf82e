"""The reading tests' store fixtures, for the tool's tests."""

from __future__ import annotations

from retrieval.conftest import any_store

__all__ = ["any_store"]
