"""A watcher of file-system access (audit hooks), and the store fixtures that core and store
tests share: a store in tmp_path, run with both ways the store reaches files."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from budgetware.finalizer import LocalArtifactStore
from budgetware.store.sweeper import THREAD_NAME as SWEEPER

_FILE_EVENTS = {"open", "os.mkdir", "os.rename", "os.link", "os.remove", "os.listdir", "os.chmod"}
_WATCHING: list[list[tuple[str, Any]]] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # The stores' background thread (sweeps, deferred refreshes) is not the code watched.
    if _WATCHING and event in _FILE_EVENTS and threading.current_thread().name != SWEEPER:
        _WATCHING[-1].append((event, args))


# Audit hooks cannot be removed; this one only records while a test is watching.
sys.addaudithook(_audit)


@contextmanager
def watch_file_system() -> Iterator[list[tuple[str, Any]]]:
    """Every file-system open/mkdir/rename/link/remove made inside the block."""
    events: list[tuple[str, Any]] = []
    _WATCHING.append(events)
    try:
        yield events
    finally:
        _WATCHING.remove(events)


@pytest.fixture
def file_system_watch() -> Iterator[list[tuple[str, Any]]]:
    """Every file-system access made while the fixture is active."""
    with watch_file_system() as events:
        yield events


@pytest.fixture
def store(tmp_path: Path) -> LocalArtifactStore:
    return LocalArtifactStore(tmp_path / "artifacts")


FILE_APIS = ("dir_fd", "paths")


def parametrize_file_api(metafunc: pytest.Metafunc) -> None:
    """``pytest_generate_tests`` of the core and store folders: every test runs with both
    ways the store reaches files, except in a module that says it touches no file
    (``TOUCHES_NO_FILES = True``: measuring, fitting, parsing) and a test whose files are
    only touched by the processes it starts (``@pytest.mark.files_in_subprocesses``: the
    setting does not reach them), which run once."""
    if "store_file_api" not in metafunc.fixturenames:
        return
    if getattr(metafunc.module, "TOUCHES_NO_FILES", False):
        return
    if metafunc.definition.get_closest_marker("files_in_subprocesses"):
        return
    metafunc.parametrize("store_file_api", FILE_APIS, indirect=True)


@pytest.fixture(autouse=True)
def store_file_api(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run every core test with both ways the store reaches files: relative to a directory
    descriptor (POSIX) and by path (Windows, where os.open takes no dir_fd)."""
    from budgetware.store import files as _files

    mode = getattr(request, "param", None)
    if mode is None:  # a module that touches no file: the platform's own way
        return "dir_fd" if _files.USE_DIR_FD else "paths"
    if mode == "dir_fd" and not _files.USE_DIR_FD:
        pytest.skip("this platform has no dir_fd file operations")
    monkeypatch.setattr(_files, "USE_DIR_FD", mode == "dir_fd")
    return str(mode)
