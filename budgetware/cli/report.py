"""``budgetware report [SESSION]``: what budgetware did in a session, from its session log:
a terminal summary, or (``--html FILE``) the inspector's page as one self-contained file."""

from __future__ import annotations

import json
import os
import sys
import time
from importlib import resources
from typing import Any

from budgetware.cli.errors import ArgumentParser, CliError
from budgetware.core.config import resolve_config
from budgetware.core.notice import unit_word
from budgetware.core.paths import default_sessions_path
from budgetware.diagnostics.sessionlog import Session, find_session, read_session, runs

__all__ = ["load", "main", "page", "print_run_report", "summary", "table"]

# The SESSION argument of ``budgetware report`` and ``budgetware inspect``.
SESSION_HELP = "a session id, a session's directory or file (default: the latest session)"


def sessions_root() -> str:
    """The directory of sessions the settings name (else the default one)."""
    setting = resolve_config(lenient=True).session_log
    return setting if setting not in (None, "on", "off") else default_sessions_path()


def load(name: str | None) -> Session:
    """The session a command line names (see ``find_session``), read; CliError if none."""
    try:
        path = find_session(name, sessions_root())
    except FileNotFoundError as exc:
        raise CliError(str(exc.args[0] if exc.args else exc)) from None
    session = read_session(path)
    if session.skipped and not session.requests:
        raise CliError(f"{path} is not a budgetware session log")
    return session


def table(session: Session) -> list[list[Any]]:
    """One row per request, for the page: time, api, unit, budget, body bytes before and
    after, tool-result size before and after (in the unit), results, cut, seconds, error;
    the provider's input tokens and cache reads when its response reported them; the
    results the history pass masked and whether it took a new step, when it ran."""
    rows = []
    for request in session.requests:
        batches = [session.batches[i] for i in request["batches"]]
        results = [r for b in batches for r in b["results"]]
        usage = request.get("usage", {})
        history = request.get("history") or {}
        rows.append(
            [
                request.get("time", 0.0),
                request.get("api"),
                request.get("unit", "chars"),
                request.get("budget", 0),
                request.get("bytes_before", 0),
                request.get("bytes_after", 0),
                sum(b["size_before"] for b in batches),
                # What was sent: after the history pass's stubs, when it ran.
                history.get("after", sum(b["size_after"] for b in batches)),
                len(results),
                sum(1 for r in results if r.get("cut")),
                request.get("seconds", 0.0),
                request.get("error"),
                usage.get("input_tokens"),
                usage.get("cache_read_tokens"),
                history.get("masked"),
                history.get("new_step", False),
            ]
        )
    return rows


def summary(session: Session) -> str:
    """The terminal summary of a session."""
    rows = table(session)
    if not rows:
        return f"session {session.id}: no requests were logged ({session.path})\n"
    results = [result for batch in session.batches for result in batch["results"]]
    named = {ref for result in results for ref in result.get("refs", ())}
    written = {ref for result in results if result.get("written") for ref in result["refs"]}
    start, end = rows[0][0], rows[-1][0]
    apis = sorted({str(row[1]) for row in rows if row[1]})
    processes = f"{session.processes} process{'es' if session.processes != 1 else ''}"
    clock = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start))
    lines = [
        f"budgetware session {session.id}: {len(rows):,} requests from {processes}, "
        f"{clock} ({end - start:,.1f} s)",
        f"  requests bounded    {sum(1 for r in rows if r[9]):,} of {len(rows):,}"
        + (f" ({', '.join(apis)})" if apis else ""),
        f"  tool results        {sum(r[8] for r in rows):,} sent, {sum(r[9] for r in rows):,} "
        "cut (a result re-sent with each turn counts each time)",
    ]
    for unit in sorted({row[2] for row in rows}):
        before = sum(r[6] for r in rows if r[2] == unit)
        after = sum(r[7] for r in rows if r[2] == unit)
        lines.append(
            f"  their size          {before:,} -> {after:,} {unit_word(unit, 2)}"
            + _share(before, after)
        )
    before, after = sum(r[4] for r in rows), sum(r[5] for r in rows)
    lines += [
        f"  request bodies      {before:,} -> {after:,} bytes{_share(before, after)}",
        f"  artifacts           {len(written):,} written, {len(named - written):,} reused "
        "(already in the store)",
        f"  time bounding       {sum(r[10] for r in rows) * 1000:,.1f} ms in all, "
        f"{max(r[10] for r in rows) * 1000:,.1f} ms at most",
    ]
    usage = [r for r in rows if r[12] is not None]
    if usage:
        tokens, read = sum(r[12] for r in usage), sum(r[13] for r in usage)
        lines.append(
            f"  provider's cache    {read:,} of {tokens:,} input tokens read from it"
            + (f" ({read * 100 // tokens}%)" if tokens else "")
            + f", {len(usage):,} responses"
        )
    masked = [r for r in rows if r[14] is not None]
    if masked:
        steps = sum(1 for r in masked if r[15])
        lines.append(
            f"  history steps       {steps:,} (each a provider cache miss); "
            f"{masked[-1][14]:,} results masked in the last request"
        )
    errors = sum(1 for r in rows if r[11])
    if errors:
        lines.append(f"  internal errors     {errors:,} (those requests were sent unchanged)")
    if session.stopped:
        lines.append(f"  note: {session.stopped} process log(s) stopped at their size limit")
    lines.append(f"See it: budgetware inspect {session.id}")
    return "\n".join(lines) + "\n"


def _share(before: int, after: int) -> str:
    return f" (-{(before - after) * 100 // before}%)" if before > after else ""


def print_run_report(root: str, session_id: str) -> None:
    """``budgetware run --report``: the summary of the run's session, on stderr."""
    path = os.path.join(root, session_id)
    if not os.path.isdir(path):
        print("budgetware: no request went through budgetware in this run", file=sys.stderr)
        return
    print(summary(read_session(path)), end="", file=sys.stderr)


def page(data: dict[str, Any] | None) -> str:
    """The inspector's page, its script and style inlined; ``data`` embedded (a file), or
    None (served: the script asks the server)."""
    static = resources.files("budgetware.cli") / "static"
    html = (static / "inspect.html").read_text("utf-8")
    embedded = "null" if data is None else json.dumps(data, separators=(",", ":"))
    return (
        html.replace("/*STYLE*/", (static / "inspect.css").read_text("utf-8"))
        .replace("/*SCRIPT*/", (static / "inspect.js").read_text("utf-8"))
        .replace("/*DATA*/", embedded.replace("<", "\\u003c"))
    )


def page_data(session: Session, *, embed_batches: bool) -> dict[str, Any]:
    """What the page shows of a session; with ``embed_batches`` every request's batches too."""
    data: dict[str, Any] = {
        "session": session.id,
        "processes": session.processes,
        "stopped": session.stopped,
        "requests": table(session),
    }
    if embed_batches:
        data["batches"] = session.batches
        data["request_batches"] = [runs(r["batches"]) for r in session.requests]
    return data


def main(argv: list[str]) -> int:
    """Entry point of ``budgetware report``; returns the exit code."""
    parser = ArgumentParser(
        prog="budgetware report",
        description="Summarize what budgetware did in a session (sizes, cuts, artifacts).",
    )
    parser.add_argument("session", nargs="?", help=SESSION_HELP)
    parser.add_argument("--html", metavar="FILE", help="write the inspector's page to FILE")
    args = parser.parse_args(argv)
    session = load(args.session)
    if args.html is None:
        sys.stdout.write(summary(session))
        return 0
    text = page(page_data(session, embed_batches=True))
    with open(args.html, "w", encoding="utf-8") as file:
        file.write(text)
    print(f"budgetware report: wrote {args.html} (session {session.id})")
    return 0
