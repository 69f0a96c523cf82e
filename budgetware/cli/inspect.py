"""``budgetware inspect [SESSION]``: a session in the browser, served on 127.0.0.1.

Every URL starts with a random token; a request without it, from another host or with
another ``Host`` header is refused. Previews are rebuilt from the store (a preview is a
function of the full output and its room), so the session log never holds text; full
outputs are read and searched with ``read_tool_output``'s limits.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from budgetware import tools as tool
from budgetware.cli.errors import ArgumentParser
from budgetware.cli.report import SESSION_HELP, load, page, page_data
from budgetware.core.artifacts import ArtifactStoreError
from budgetware.core.config import BudgetConfig, resolve_config
from budgetware.core.finalize import preview_options
from budgetware.core.fit import SlotPreview
from budgetware.core.measure import measure
from budgetware.diagnostics.sessionlog import Session, file_sizes, read_session
from budgetware.retrieval.errors import InvalidPattern, InvalidReadArgument, SearchTimeout
from budgetware.retrieval.grep import grep_result
from budgetware.retrieval.read import read_window

__all__ = ["Inspector", "main"]

# What reading a full output may raise for the page to show (a bad offset, a pattern).
_READ_ERRORS = (ArtifactStoreError, InvalidReadArgument, InvalidPattern, SearchTimeout)


def store_config(ref: str) -> BudgetConfig:
    """The settings that name the store a reference is in (its directory or S3 prefix), with
    the environment's for the rest; the inspector only reads, so it never sweeps."""
    store = ref.rsplit("/", 1)[0] or "/"
    base = BudgetConfig(artifact_store=store, artifact_sweep_interval=0)
    return resolve_config(base, lenient=True)


class Inspector:
    """The page and its API for one session, served on 127.0.0.1 in a daemon thread."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.token = secrets.token_urlsafe(24)
        self.lock = threading.Lock()
        self.port = 0
        self.url = ""

    def start(self, port: int = 0) -> Inspector:
        """Serve on 127.0.0.1 (``port`` 0: any free one); ``url`` is the page's address."""
        self.server = _Server(("127.0.0.1", port), _Handler)
        self.server.inspector = self
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/{self.token}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- what the API answers ----------------------------------------------------------

    def current(self) -> Session:
        """The session, read again when its processes have written more since."""
        with self.lock:
            with contextlib.suppress(OSError):
                if file_sizes(self.session.path) != self.session.files:
                    self.session = read_session(self.session.path)
            return self.session

    def names(self, ref: str) -> bool:
        """Whether the session names ``ref``: the only artifacts the page reads."""
        results = (r for b in self.current().batches for r in b["results"])
        return any(ref in r.get("refs", ()) for r in results)

    def request(self, index: int) -> dict[str, Any]:
        session = self.current()
        record = session.requests[index]
        return {"batches": [session.batches[i] for i in record["batches"]]}

    def preview(self, request: int, batch: int, index: int) -> dict[str, Any]:
        """The preview a result was sent as, rebuilt from its full output in the store."""
        session = self.current()
        record = session.requests[request]
        result = session.batches[record["batches"][batch]]["results"][index]
        refs = tuple(result.get("refs", ()))
        if not refs:
            return {"error": "no full output was kept of this result"}
        full = read_window(refs[0], offset=0, limit=sys.maxsize, config=store_config(refs[0])).text
        unit = record.get("unit", "chars")
        options = preview_options(BudgetConfig(**record.get("preview", {})))
        slots = result.get("slots")
        # The full output is what was given (not a producer's preview of it): its size.
        if slots:
            given = len(full) == sum(chars for chars, _ in slots) + 2 * (len(slots) - 1)
        else:
            given = measure(full, unit) == result["size"]
            slots = [[len(full), result["room"]]]
        texts, start = [], 0
        for chars, room in slots:
            part = full[start : start + chars]
            start += chars + 2  # the slots of a full output are joined by a blank line
            texts.append(SlotPreview(part, unit, options).fit(room, refs).text)
        sent = sum(measure(text, unit) for text in texts)
        return {
            "ref": refs[0],
            "previews": texts,
            "chars": len(full),
            "exact": given and sent == result["sent"],
        }

    def read(self, ref: str, offset: int, limit: int) -> dict[str, Any]:
        limit = min(limit, tool.MAX_LIMIT)
        window = read_window(ref, offset=offset, limit=limit, config=store_config(ref))
        return {"text": window.text, "offset": window.offset, "total": window.total}

    def grep(self, ref: str, pattern: str, context: int) -> dict[str, Any]:
        found = grep_result(
            ref,
            pattern,
            context=min(context, tool.MAX_CONTEXT),
            max_matches=tool.MAX_MATCHES,
            max_line_chars=tool.LINE_CHARS,
            timeout=tool.SEARCH_SECONDS,
            config=store_config(ref),
        )
        matches = [
            {
                "line": m.line_number,
                "offset": m.offset,
                "text": m.line,
                "before": [[c.line_number, c.line] for c in m.before],
                "after": [[c.line_number, c.line] for c in m.after],
            }
            for m in found.matches
        ]
        return {"matches": matches, "more": found.more}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    inspector: Inspector


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the terminal shows the URL, not every request

    def do_GET(self) -> None:
        inspector = self.server.inspector
        host = self.headers.get("Host", "")
        allowed = {f"127.0.0.1:{inspector.port}", f"localhost:{inspector.port}"}
        if self.client_address[0] != "127.0.0.1" or host not in allowed:
            return self._send(403, b"forbidden: open the URL budgetware inspect printed\n")
        url = urlsplit(self.path)
        prefix = f"/{inspector.token}/"
        given = url.path[: len(prefix)]
        if not hmac.compare_digest(given.encode(), prefix.encode()):
            return self._send(403, b"forbidden: this URL lacks the inspector's token\n")
        route = url.path[len(prefix) :]
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            if route == "":
                return self._send(200, page(None).encode(), "text/html; charset=utf-8")
            return self._json(200, self._answer(inspector, route, query))
        except _READ_ERRORS as exc:
            return self._json(400, {"error": " ".join(str(exc).split())})
        except (LookupError, ValueError):
            return self._json(404, {"error": "no such request, batch, result or output"})

    def _answer(self, inspector: Inspector, route: str, query: dict[str, str]) -> Any:
        if route == "api/session":
            return page_data(inspector.current(), embed_batches=False)
        if route == "api/request":
            return inspector.request(int(query["r"]))
        if route == "api/preview":
            return inspector.preview(int(query["r"]), int(query["b"]), int(query["i"]))
        ref = query["ref"]
        if not inspector.names(ref):
            raise KeyError(ref)
        if route == "api/read":
            offset = int(query.get("offset", 0))
            return inspector.read(ref, offset, int(query.get("limit", tool.DEFAULT_LIMIT)))
        if route == "api/grep":
            return inspector.grep(ref, query["pattern"], int(query.get("context", 0)))
        raise KeyError(route)

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json.dumps(value).encode(), "application/json")

    def _send(self, status: int, body: bytes, kind: str = "text/plain; charset=utf-8") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header(
            "Content-Security-Policy",
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            "connect-src 'self'; img-src data:",
        )
        self.end_headers()
        self.wfile.write(body)


def _has_a_browser() -> bool:
    """Whether a graphical browser can open: without a display, ``webbrowser`` would run a
    text browser in this terminal (and wait for it)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def main(argv: list[str]) -> int:
    """Entry point of ``budgetware inspect``; serves until interrupted."""
    parser = ArgumentParser(
        prog="budgetware inspect",
        description="Show a session in the browser: sizes, cuts, previews beside full outputs.",
    )
    parser.add_argument("session", nargs="?", help=SESSION_HELP)
    parser.add_argument("--port", type=int, default=0, help="the port (default: any free one)")
    parser.add_argument("--no-browser", action="store_true", help="only print the URL")
    args = parser.parse_args(argv)
    inspector = Inspector(load(args.session)).start(args.port)
    print(f"budgetware inspect: session {inspector.session.id} at {inspector.url}", flush=True)
    print("(only this machine can open it; Ctrl-C stops it)", flush=True)
    if not args.no_browser and _has_a_browser():
        import webbrowser

        webbrowser.open(inspector.url)
    try:
        threading.Event().wait()
    finally:
        inspector.stop()
    return 0
