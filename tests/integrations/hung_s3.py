"""An S3 endpoint that never answers, and a measure of how long an event loop stalls.

A hung store is the worst an SDK hook or the LiteLLM Proxy's hook can meet: each S3 call
waits for its timeout (``artifact_store_timeout``) before the output is bounded with no
reference. Bounding must wait in a worker thread, never on the event loop: ``stalls``
runs a coroutine beside a ticker and reports how late the ticker's wake-ups came.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from budgetware.core.config import BudgetConfig
from budgetware.store import select
from budgetware.store.s3 import S3ArtifactStore
from budgetware.testing.s3 import aws_env

T = TypeVar("T")

TICK = 0.01
TIMEOUT = 0.5
"""Seconds per S3 call (``artifact_store_timeout``); a failing call is tried twice."""


@contextmanager
def hung_s3_endpoint() -> Iterator[str]:
    """``http://127.0.0.1:<port>``: accepts connections and never answers a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.1)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        server.close()


def hung_s3_config(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> BudgetConfig:
    """A 5,000-character budget and an S3 store on ``endpoint``, in a bucket no other test
    uses (each store remembers a failed endpoint for 30 s), with this process's AWS
    environment pointed there; its client is ready (building one holds the GIL for
    tenths of a second, which would show as a stall of the loop that is not the request's).
    """
    for name, value in aws_env(endpoint).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    # Naming an S3 store flags the process for good: restore the flag after the test.
    monkeypatch.setattr(select, "_remote_in_use", select.remote_store_in_use())
    config = BudgetConfig(
        batch_budget=5000,
        artifact_store=f"s3://hung-{uuid.uuid4().hex[:12]}/loop",
        artifact_store_timeout=TIMEOUT,
    )
    store = select.store_for_config(config)
    assert isinstance(store, S3ArtifactStore)
    store.client()
    return config


@dataclass(frozen=True)
class Stalls:
    result: Any
    seconds: float
    """How long the coroutine took."""
    worst: float
    """The latest a ticker's 10 ms sleep woke up, beyond its 10 ms, meanwhile."""


async def stalls(work: Awaitable[T]) -> Stalls:
    """Await ``work`` while a ticker task sleeps 10 ms at a time: how late it woke while
    ``work`` ran (the ticker starts first, so a wake-up that came late is one of its)."""
    wakes: list[tuple[float, float]] = []
    gc.collect()  # not a collection of earlier tests' garbage during the work

    async def ticker() -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(TICK)
            now = time.monotonic()
            wakes.append((now, now - before - TICK))

    task = asyncio.create_task(ticker())
    await asyncio.sleep(5 * TICK)
    started = time.monotonic()
    try:
        result = await work
    finally:
        ended = time.monotonic()
        await asyncio.sleep(5 * TICK)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    worst = 0.0
    for at, late in wakes:
        if at > started:
            worst = max(worst, late)
            if at > ended:  # the first one after the work: it may have waited for it
                break
    return Stalls(result, ended - started, worst)
