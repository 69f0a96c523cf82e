"""An S3 endpoint that never answers: it accepts connections and sends not a byte.

A hung store is the worst an entry point can meet: each S3 call waits for its timeout
(``artifact_store_timeout``) before the output is bounded with no reference. Shared by the
store's own tests and the LiteLLM Proxy's production settings. Whether bounding waits for
a store off the event loop is proven with ``held_s3.py`` (structural), not with this.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def hung_s3_endpoint(accepted: list[socket.socket] | None = None) -> Iterator[str]:
    """``http://127.0.0.1:<port>``: accepts connections and never answers a byte.

    ``accepted``, if given, receives every connection made to it (to count them); they
    are closed with the endpoint after the block.
    """
    connections: list[socket.socket] = [] if accepted is None else accepted
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.1)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            connections.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in connections:
            conn.close()
        server.close()
