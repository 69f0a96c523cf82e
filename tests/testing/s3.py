"""A real S3-compatible server (moto's server mode) in a subprocess on 127.0.0.1, for
budgetware's own tests and benchmarks.

It starts ``python -m moto.server`` of the running interpreter (``moto[server]``, in the
``test`` extra) on a free loopback port, waits until it answers, and stops it.
``aws_env()`` gives the standard AWS variables that point boto3 (and budgetware's S3 store)
at it and nowhere else: no config files, no instance metadata.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from types import TracebackType

__all__ = ["LocalS3Server", "LocalS3ServerError", "aws_env"]

# Loopback only: never through an HTTP proxy the environment names.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def aws_env(endpoint: str) -> dict[str, str]:
    """The standard AWS variables for a client of the S3 server at ``endpoint`` only."""
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": endpoint,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


class LocalS3ServerError(RuntimeError):
    """The server did not start (moto is not installed, or it exited)."""


class LocalS3Server:
    """One moto server on a free port of 127.0.0.1; ``endpoint`` is its URL.

    ``with LocalS3Server() as s3: os.environ.update(s3.aws_env())`` and every boto3 client
    (and budgetware's S3 store) of the process talks to it. Buckets live until it stops.
    """

    def __init__(self, *, start_timeout: float = 60.0) -> None:
        self.start_timeout = start_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._port: int | None = None

    @property
    def endpoint(self) -> str:
        if self._port is None:
            raise LocalS3ServerError("the S3 server is not running: call start()")
        return f"http://127.0.0.1:{self._port}"

    def aws_env(self) -> dict[str, str]:
        """The standard AWS variables for a client of this server only."""
        return aws_env(self.endpoint)

    def start(self) -> LocalS3Server:
        if self._process is not None:
            return self
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self._port = int(sock.getsockname()[1])
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self._port)],
            # Its request log is not read: a pipe nobody drains would stop the server.
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._process = process
        deadline = time.monotonic() + self.start_timeout
        while True:
            try:
                with _DIRECT.open(f"{self.endpoint}/moto-api/", timeout=1):
                    return self
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise LocalS3ServerError(
                        'the moto S3 server did not start (pip install "moto[server]")'
                    ) from None
                time.sleep(0.05)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            # Its buckets live in its memory only: nothing is lost, and a SIGTERM's clean
            # exit (freeing moto's heap) took a third of a second at the end of a session.
            process.kill()
            process.wait()
        self._port = None

    def __enter__(self) -> LocalS3Server:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
