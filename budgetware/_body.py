"""Bounding the tool results inside one HTTP request body (the wire-format entry point)."""

from __future__ import annotations

from collections.abc import Mapping

from budgetware._config import BudgetConfig

__all__ = ["finalize_body"]


def finalize_body(
    url: str,
    body: bytes,
    *,
    headers: Mapping[str, str] | None = None,
    config: BudgetConfig | None = None,
) -> bytes:
    """Return ``body`` itself when nothing changes, else the body with bounded tool results.

    Placeholder until the wire formats land: passes every body through unchanged.
    """
    return body
