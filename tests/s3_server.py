"""A real S3-compatible server for the store's tests: moto's server mode, started by the
tests on 127.0.0.1 on a free port and stopped after them; and the AWS environment that
points boto3 at it (and nowhere else: no config files, no instance metadata)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

__all__ = ["S3Bucket", "aws_env", "s3_bucket", "s3_endpoint"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def aws_env(endpoint: str) -> dict[str, str]:
    """The standard AWS variables for a client of the local server only."""
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": endpoint,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """``http://127.0.0.1:<port>`` of a moto server for this test session."""
    pytest.importorskip("moto.server", reason="moto[server] is in the dev extra")
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the moto server did not start") from None
                time.sleep(0.05)
        yield endpoint
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


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


@pytest.fixture
def s3_bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> S3Bucket:
    import boto3

    env = aws_env(s3_endpoint)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    client = boto3.session.Session().client("s3")
    name = f"bw-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return S3Bucket(name, s3_endpoint, env, client)
