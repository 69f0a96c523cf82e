"""A stand-in for the LiteLLM Proxy, run by ``ProxyForkServer(stand_in=this file)``.

For the tests of the fork server's own life cycle (starts that give up, kills, a parent
that dies): they need a process that takes a while to get ready and then answers on its
port like the proxy's health check, not LiteLLM (whose import costs about 10 s of CPU
each time a fork server starts).
"""

from __future__ import annotations

import http.server
import os
import time

# The fork server runs this file where it would import the proxy: a start that waits less
# than this for a fork gives up before the fork server can fork (the fork server's
# environment may set it; no wait by default).
time.sleep(float(os.environ.get("STAND_IN_IMPORT_SECONDS", "0")))


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'"I\'m alive!"'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(args: list[str]) -> int:
    """Answer every GET on ``--host``/``--port`` until a signal ends the process."""
    options = dict(zip(args[::2], args[1::2]))
    server = http.server.HTTPServer((options["--host"], int(options["--port"])), _Handler)
    server.serve_forever()
    return 0
