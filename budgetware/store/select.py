"""Which store a configuration names: the one place every entry point gets its store from."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from budgetware.core.config import ENV_PREFIX, BudgetConfig, ConfigError
from budgetware.store import sweeper
from budgetware.store.base import ContentStore
from budgetware.store.files import directory_problem
from budgetware.store.local import LocalArtifactStore

__all__ = ["check_store", "remote_store_in_use", "store_for_config"]

logger = logging.getLogger("budgetware")

# Set once an entry point named an S3 store: the async paths then bound off the loop.
_remote_in_use = False
_warned_no_store = False


def remote_store_in_use() -> bool:
    """Whether a store reached over the network has been configured in this process."""
    return _remote_in_use


def store_for_config(config: BudgetConfig) -> ContentStore | None:
    """The process-wide store for ``config``: ``artifact_store`` if set, else
    ``artifact_dir`` or the default directory. None when ``persist`` is off or no store can
    be named (no home directory): the caller then bounds without a reference.
    """
    if not config.persist:
        return None
    try:
        location = config.store_location()
    except (RuntimeError, KeyError, OSError) as exc:  # Path.home() with no resolvable home
        global _warned_no_store
        if not _warned_no_store:
            _warned_no_store = True
            logger.warning(
                "budgetware has no artifact directory (%s: set BUDGETWARE_ARTIFACT_DIR); "
                "tool outputs are bounded without a reference (logged once per process)",
                type(exc).__name__,
            )
        return None
    limits = {
        "max_artifact_bytes": config.max_artifact_bytes,
        "max_store_bytes": config.max_store_bytes,
        "max_age": config.artifact_max_age,
        "min_age": config.artifact_min_age,
        "sweep_interval": config.artifact_sweep_interval,
    }
    if location.scheme == "s3":
        from budgetware.store.s3 import S3ArtifactStore

        global _remote_in_use
        _remote_in_use = True
        timeout = config.artifact_store_timeout
        return _shared(
            S3ArtifactStore, location.bucket, location.prefix, timeout=timeout, **limits
        )
    return _shared(LocalArtifactStore, os.path.abspath(location.path), **limits)


_STORES: dict[tuple[object, ...], ContentStore] = {}
_STORES_LOCK = threading.Lock()


def _shared(make: Callable[..., ContentStore], *where: str, **limits: Any) -> ContentStore:
    """The process-wide store for a location and limits, shared by every entry point."""
    key = (make, *where, *sorted(limits.items()))
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            store = _STORES[key] = make(*where, **limits)
        return store


def check_store(config: BudgetConfig) -> None:
    """A ConfigError naming the setting if the configured store cannot be used (an untrusted
    directory, ``s3://`` without boto3); no network, for an endpoint may come up later."""
    if not config.persist:
        return
    setting = "artifact_store" if config.artifact_store is not None else "artifact_dir"
    named = f"{setting} ({ENV_PREFIX}{setting.upper()})"
    try:
        location = config.store_location()
    except (RuntimeError, KeyError, OSError):
        return  # no home directory: bounded without a reference, as at request time
    except ValueError as exc:
        raise ConfigError(f"invalid budgetware setting: {named}: {exc}") from None
    if location.scheme == "s3":
        from budgetware.store.s3 import S3ArtifactStore, require_boto3

        try:
            require_boto3()
        except ImportError as exc:
            raise ConfigError(f"invalid budgetware setting: {named}: {exc}") from None
        # Build the boto3 client now, off the first request's path.
        store = store_for_config(config)
        if isinstance(store, S3ArtifactStore):
            sweeper.submit("prepare the S3 client", store.client)
        return
    reason = directory_problem(location.path)
    if reason is not None:
        raise ConfigError(
            f"invalid budgetware setting: {named}: budgetware refuses to keep artifacts in "
            f"{location.path}: {reason} (use a directory of your own with mode 0700)"
        )
