"""The fake provider: latency of one request on a kept-alive connection, and a burst of 200.

Run: .venv/bin/python benchmarks/bench_fake_provider.py

Target (issue 11): a request on a kept-alive connection answers in 2 ms or less (median of
50). The baseline, measured in the same run, is the loopback round trip of a raw socket
server that answers a fixed reply in one write: what any HTTP server on this machine
costs at least. A response written in two pieces (headers, then body) without
``TCP_NODELAY`` waits for the client's delayed ACK (about 40 ms on Linux) before its
second piece leaves; that stall is what this benchmark exists to catch.

Starting and stopping a provider is what every test using the ``fake_provider`` fixture
pays; a serving loop that notices a stop only at its next poll adds up to the poll
interval to each.

The burst opens 200 connections at once without waiting for any answer; a listen backlog
smaller than the burst makes the kernel drop SYNs, which clients then retry after a
second or more (or give up on).
"""

from __future__ import annotations

import http.client
import json
import selectors
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import print_table

from budgetware.testing import FakeProvider

ROUNDS = 50
BURST = 200
BODY = json.dumps(
    {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello"}]}
).encode()


def median_ms(call: Callable[[], object], rounds: int = ROUNDS) -> float:
    call()  # connect, warm up
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def raw_socket_baseline() -> float:
    """A server that answers every request with one ``sendall`` of a fixed reply."""
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            while data := conn.recv(65536):
                if data.endswith(b"\r\n\r\n") or b"\r\n\r\n" in data:
                    conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client = socket.create_connection(("127.0.0.1", port))
    request = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"

    def call() -> None:
        client.sendall(request)
        got = b""
        while not got.endswith(b"ok"):
            got += client.recv(65536)

    try:
        return median_ms(call)
    finally:
        client.close()
        listener.close()
        thread.join(timeout=5)


def http_client_keep_alive(provider: FakeProvider) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", provider.port, timeout=10)
    headers = {"Content-Type": "application/json"}

    def call() -> None:
        conn.request("POST", "/v1/chat/completions", body=BODY, headers=headers)
        conn.getresponse().read()

    try:
        return median_ms(call)
    finally:
        conn.close()


def httpx2_keep_alive(provider: FakeProvider) -> float:
    import httpx2

    with httpx2.Client(base_url=provider.url) as client:
        return median_ms(lambda: client.post("/v1/chat/completions", content=BODY).read())


def openai_sdk_keep_alive(provider: FakeProvider) -> float:
    import openai

    client = openai.OpenAI(base_url=provider.url + "/v1", api_key="bench", max_retries=0)
    try:
        return median_ms(
            lambda: client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}]
            )
        )
    finally:
        client.close()


def start_stop() -> float:
    """One ``with FakeProvider():`` block: what every test using the fixture pays."""

    def cycle() -> None:
        with FakeProvider():
            pass

    return median_ms(cycle)


def burst(provider: FakeProvider, count: int = BURST) -> tuple[int, float]:
    """Open ``count`` connections at once; how many completed the handshake within 0.5 s."""
    sockets = []
    start = time.perf_counter()
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", provider.port))
        sockets.append(sock)

    selector = selectors.DefaultSelector()
    for sock in sockets:
        selector.register(sock, selectors.EVENT_WRITE)
    connected = 0
    deadline = start + 0.5
    while connected < count and (left := deadline - time.perf_counter()) > 0:
        for key, _ in selector.select(left):
            selector.unregister(key.fileobj)
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                connected += 1
    elapsed = time.perf_counter() - start
    selector.close()
    for sock in sockets:
        sock.close()
    return connected, elapsed


def main() -> None:
    base = raw_socket_baseline()
    rows = [("raw socket, one write (baseline)", f"{base:.3f} ms", "1.00x")]
    with FakeProvider() as provider:
        for name, measure in (
            ("FakeProvider, http.client", http_client_keep_alive),
            ("FakeProvider, httpx2.Client", httpx2_keep_alive),
            ("FakeProvider, openai SDK", openai_sdk_keep_alive),
        ):
            try:
                value = measure(provider)
            except ImportError:
                rows.append((name, "not installed", ""))
                continue
            rows.append((name, f"{value:.3f} ms", f"{value / base:.2f}x"))
    print_table(
        f"one request on a kept-alive connection, median of {ROUNDS} (target: <= 2 ms)",
        rows,
        ("client", "median", "vs baseline"),
    )
    cycle = start_stop()
    print_table(
        f"start and stop, median of {ROUNDS}",
        [("with FakeProvider(): pass", f"{cycle:.3f} ms")],
        ("case", "median"),
    )
    with FakeProvider() as provider:
        connected, elapsed = burst(provider)
    print_table(
        f"{BURST} connections opened at once",
        [(f"{connected}/{BURST}", f"{elapsed * 1e3:.1f} ms")],
        ("handshakes done within 0.5 s", "time"),
    )


if __name__ == "__main__":
    main()
