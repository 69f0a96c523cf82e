"""The typed errors of reading artifacts back (beside ``ArtifactNotFound`` of the core)."""

from __future__ import annotations

__all__ = ["InvalidPattern", "InvalidReadArgument", "SearchTimeout"]


class InvalidReadArgument(ValueError):
    """An offset, limit, context or match count that is not a whole number in range, or a
    time limit that is not a positive, finite number of seconds."""


class InvalidPattern(ValueError):
    """A search pattern that is not a valid regular expression."""


class SearchTimeout(TimeoutError):
    """A search that took longer than its time limit."""
