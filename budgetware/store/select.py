"""Which store a configuration names: the one place every entry point gets its store from."""

from __future__ import annotations

import logging

from budgetware.core.artifacts import ArtifactStore
from budgetware.core.config import BudgetConfig
from budgetware.store.local import store_for

__all__ = ["store_for_config"]

logger = logging.getLogger("budgetware")


def store_for_config(config: BudgetConfig) -> ArtifactStore | None:
    """The process-wide store for ``config``, or None when nothing may be persisted.

    None when ``persist`` is off, and when the store cannot even be named (no artifact
    directory set and no home directory to put the default one in): the caller then
    bounds without a reference instead of failing or sending the batch whole.
    """
    if not config.persist:
        return None
    try:
        directory = config.resolved_artifact_dir()
    except (RuntimeError, KeyError, OSError) as exc:  # Path.home() with no resolvable home
        logger.warning(
            "budgetware has no artifact directory (%s: set BUDGETWARE_ARTIFACT_DIR); "
            "bounded without a reference",
            type(exc).__name__,
        )
        return None
    return store_for(directory, config.max_artifact_bytes, config.max_store_bytes)
