"""The default artifact directory, from ``os`` alone: cheap to import at start-up."""

from __future__ import annotations

import os
import sys
import time

__all__ = ["default_artifact_path", "default_sessions_path", "new_session_id"]


def _home() -> str:
    # As pathlib.Path.home(): RuntimeError when no home directory can be determined.
    home = os.path.expanduser("~")
    if home[:1] == "~":
        raise RuntimeError("Could not determine home directory.")
    return home


def default_artifact_path() -> str:
    """The user's cache directory for artifacts (XDG on Linux); RuntimeError with no home."""
    if sys.platform == "win32":  # pragma: no cover - platform specific
        base = os.environ.get("LOCALAPPDATA") or os.path.join(_home(), "AppData", "Local")
        return os.path.join(base, "budgetware", "Cache", "artifacts")
    if sys.platform == "darwin":  # pragma: no cover - platform specific
        return os.path.join(_home(), "Library", "Caches", "budgetware", "artifacts")
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base_dir = xdg if xdg and os.path.isabs(xdg) else os.path.join(_home(), ".cache")
    return os.path.join(base_dir, "budgetware", "artifacts")


def default_sessions_path() -> str:
    """The user's directory for session logs, beside the artifacts (docs/inspect.md)."""
    return os.path.join(os.path.dirname(default_artifact_path()), "sessions")


def new_session_id() -> str:
    """A session log's id, which sorts by its start: ``20250601T101500Z-3f9a1c``."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + os.urandom(3).hex()
