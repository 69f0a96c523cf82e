"""Fixtures for reading artifacts back: the same tests on every store backend (a local
directory, reached by directory descriptor and by path; an S3 bucket on a local server)."""

from __future__ import annotations

import pytest
from s3_server import S3Bucket

from budgetware.store.base import ContentStore

__all__ = ["any_store"]


@pytest.fixture(params=["local", "local-paths", "s3"])
def any_store(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> ContentStore:
    """A fresh store of each backend."""
    if request.param == "s3":
        pytest.importorskip("boto3")
        from budgetware.store.s3 import S3ArtifactStore

        bucket: S3Bucket = request.getfixturevalue("s3_bucket")
        return S3ArtifactStore(bucket.name, "artifacts")
    from budgetware.store import files
    from budgetware.store.local import LocalArtifactStore

    if request.param == "local-paths":
        monkeypatch.setattr(files, "USE_DIR_FD", False)
    return LocalArtifactStore(tmp_path_factory.mktemp("store") / "artifacts")
