"""A real S3-compatible server for the store's tests: moto's server mode, started by the
tests on 127.0.0.1 on a free port and stopped after them; and the AWS environment that
points boto3 at it (and nowhere else: no config files, no instance metadata)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from testing.s3 import LocalS3Server, aws_env

__all__ = ["S3Bucket", "aws_env", "new_bucket", "s3_bucket", "s3_endpoint"]


def _share_botocore_models() -> None:
    """Every boto3 session of the test process reads botocore's data files once.

    Each ``boto3.session.Session()`` has its own loader, which parses the S3 service
    model (megabytes of JSON) again: a third of a second of CPU per client, and the tests
    make hundreds of clients (each store makes its own, as in a user's process, where it
    makes one). The loader already hands one parsed model to every client of its session
    (``instance_cache``); this hands it to every session, keyed by the search path as
    well. The clients, their config and every call stay botocore's own.
    """
    try:
        from botocore import loaders
    except ImportError:
        return
    if getattr(loaders.Loader, "_budgetware_tests_shared", False):
        return

    def shared(method: Callable[..., Any]) -> Callable[..., Any]:
        cache: dict[Any, Any] = {}

        def load(self: Any, *args: Any, **kwargs: Any) -> Any:
            key = (tuple(self.search_paths), args, tuple(sorted(kwargs.items())))
            if key not in cache:
                cache[key] = method(self, *args, **kwargs)
            return cache[key]

        return load

    for name in (
        "list_available_services",
        "determine_latest_version",
        "list_api_versions",
        "load_service_model",
        "load_data_with_path",
    ):
        setattr(loaders.Loader, name, shared(getattr(loaders.Loader, name)))
    loaders.Loader._budgetware_tests_shared = True  # type: ignore[attr-defined]


_share_botocore_models()


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """``http://127.0.0.1:<port>`` of a moto server for this test session."""
    pytest.importorskip("moto.server", reason="moto[server] is in the dev extra")
    with LocalS3Server() as server:
        yield server.endpoint


@dataclass(frozen=True)
class S3Bucket:
    """A fresh bucket on the local server, the environment that reaches it, a client."""

    name: str
    endpoint: str
    env: dict[str, str]
    client: object

    def url(self, prefix: str = "artifacts") -> str:
        return f"s3://{self.name}/{prefix}"

    def objects(self, prefix: str = "") -> list[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(  # type: ignore[attr-defined]
            Bucket=self.name, Prefix=prefix
        )
        return sorted(o["Key"] for page in pages for o in page.get("Contents", ()))

    def get(self, key: str) -> bytes:
        return bytes(self.client.get_object(Bucket=self.name, Key=key)["Body"].read())  # type: ignore[attr-defined]


def new_bucket(endpoint: str) -> S3Bucket:
    """A fresh bucket on the local server at ``endpoint``, with a client of it alone."""
    import boto3

    env = aws_env(endpoint)
    client = boto3.session.Session(
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=env["AWS_DEFAULT_REGION"],
    ).client("s3", endpoint_url=endpoint)
    name = f"bw-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return S3Bucket(name, endpoint, env, client)


@pytest.fixture
def s3_bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> S3Bucket:
    """A fresh bucket, with this process's AWS environment pointing at the local server."""
    bucket = new_bucket(s3_endpoint)
    for name, value in bucket.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return bucket
