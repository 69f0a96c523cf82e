"""The reading tests' store fixtures, for the tool's tests."""

from __future__ import annotations

from retrieval.conftest import any_store
from s3_server import s3_bucket, s3_endpoint

__all__ = ["any_store", "s3_bucket", "s3_endpoint"]
