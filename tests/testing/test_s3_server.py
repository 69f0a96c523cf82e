"""The suite's ``LocalS3Server``: a real moto server on loopback, stopped for good."""

from __future__ import annotations

import socket

import pytest

from .s3 import LocalS3Server, LocalS3ServerError

pytest.importorskip("moto.server", reason="moto[server] is in the dev extra")
boto3 = pytest.importorskip("boto3")


def test_a_bucket_round_trip_through_the_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalS3Server() as server:
        env = server.aws_env()
        assert env["AWS_ENDPOINT_URL_S3"] == server.endpoint
        assert server.endpoint.startswith("http://127.0.0.1:")
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        client = boto3.session.Session().client("s3")
        client.create_bucket(Bucket="bw-test")
        client.put_object(Bucket="bw-test", Key="k", Body=b"full output")
        assert client.get_object(Bucket="bw-test", Key="k")["Body"].read() == b"full output"
        port = int(server.endpoint.rsplit(":", 1)[1])
    with pytest.raises(LocalS3ServerError, match="not running"):
        _ = server.endpoint
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
