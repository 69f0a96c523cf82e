"""Reading a debug log back: the path each tool result took through the boundaries."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from budgetware.diagnostics.events import EVENT

__all__ = ["Row", "read_log", "render"]

HASH_CHARS = 12  # enough to tell results apart at a glance; the log keeps all 64


@dataclass
class Row:
    """One stage a tool call's result crossed: its sizes and hashes there."""

    line: int
    stage: str
    mutated: bool
    hashes: frozenset[str]
    code_points: int
    json_bytes: int
    artifacts: str = ""
    wire_bytes: int | None = None
    changed: bool = False


@dataclass
class CallPath:
    """Every stage one tool call (one keyed hash, in one process) was seen at."""

    process: str
    call: str
    tool: str | None = None
    passes: list[list[Row]] = field(default_factory=list)


@dataclass
class Log:
    """A parsed debug log."""

    calls: dict[tuple[str, str], CallPath] = field(default_factory=dict)
    anonymous: list[Row] = field(default_factory=list)
    events: int = 0
    skipped: int = 0
    malformed: int = 0  # events of budgetware's kind whose fields are not what it writes
    suppressed: list[tuple[int, int]] = field(default_factory=list)  # (line, count)


def _as_list(event: dict[str, Any], name: str) -> list[Any] | None:
    many = event.get(f"{name}_hmacs")
    if isinstance(many, list):
        return many
    one = event.get(f"{name}_hmac")
    return [one] if isinstance(one, str) else None


def _artifacts(item: Any) -> str:
    if not isinstance(item, dict):
        return ""
    kinds = item.get("kinds") or []
    state = str(item.get("state", ""))
    return f"{state}:{'+'.join(map(str, kinds))}" if kinds else state


def read_log(lines: Iterable[str]) -> Log:
    """Parse debug log lines (other lines and events are counted and skipped)."""
    log = Log()
    for number, text in enumerate(lines, 1):
        try:
            event = json.loads(text)
        except ValueError:
            event = None
        if not isinstance(event, dict) or event.get("event") != EVENT:
            log.skipped += 1
            continue
        try:
            suppressed = _count(event.get("suppressed_count", 0))
            rows = _rows(number, event)
        except _Malformed:
            # A truncated or edited line: counted, shown as such, never a traceback.
            log.malformed += 1
            continue
        log.events += 1
        if suppressed:
            log.suppressed.append((number, suppressed))
        process = str(event.get("key_id", "?"))
        names = _as_list(event, "tool_name") or []
        for index, (call, row) in enumerate(rows):
            if call is None:
                log.anonymous.append(row)
                continue
            path = log.calls.setdefault((process, call), CallPath(process, call))
            if index < len(names) and isinstance(names[index], str):
                path.tool = names[index]
            _append(path, row)
    return log


class _Malformed(Exception):
    """An event whose fields are not of the types budgetware writes."""


def _count(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Malformed
    return value


def _rows(number: int, event: dict[str, Any]) -> list[tuple[str | None, Row]]:
    """Each row an event adds, with the tool call it belongs to (None: no call id)."""
    wire = event.get("wire_utf8_bytes")
    calls = _as_list(event, "tool_call")
    artifacts = event.get("artifacts") or []
    values = event.get("values") or []
    if not isinstance(artifacts, list) or not isinstance(values, list):
        raise _Malformed
    values = [v for v in values if isinstance(v, dict)]

    def row(mine: list[dict[str, Any]], art: str) -> Row:
        return Row(
            line=number,
            stage=str(event.get("stage", "?")),
            mutated=bool(event.get("mutated")),
            hashes=frozenset(str(v.get("hmac_sha256", "")) for v in mine),
            code_points=sum(_count(v.get("code_points", 0)) for v in mine),
            json_bytes=sum(_count(v.get("json_utf8_bytes", 0)) for v in mine),
            artifacts=art,
            wire_bytes=wire if isinstance(wire, int) else None,
        )

    if not calls:
        return [(None, row(values, ""))]
    rows: list[tuple[str | None, Row]] = []
    for index, call in enumerate(calls):
        mine = [v for v in values if v.get("call", 0) == index]
        art = _artifacts(artifacts[index]) if index < len(artifacts) else ""
        rows.append((str(call), row(mine, art)))
    return rows


def _append(path: CallPath, row: Row) -> None:
    # A stage seen again starts a new pass: the same call re-sent on a later turn.
    current = path.passes[-1] if path.passes else None
    if current is None or any(r.stage == row.stage for r in current):
        path.passes.append([row])
        return
    # Identical texts hash identically in every representation: comparing the sets of
    # hashes makes an ACP content + rawOutput pair equal to the model text it shows.
    previous = current[-1]
    row.changed = bool(row.hashes) and bool(previous.hashes) and row.hashes != previous.hashes
    current.append(row)


def _table(rows: Sequence[Row], out: TextIO) -> None:
    header = ["line", "stage", "event mutated", "code points", "JSON bytes", "wire bytes"]
    header += ["artifacts", "hash", ""]
    body = [
        [
            str(r.line),
            r.stage,
            "yes" if r.mutated else "no",
            f"{r.code_points:,}",
            f"{r.json_bytes:,}",
            "" if r.wire_bytes is None else f"{r.wire_bytes:,}",
            r.artifacts,
            ",".join(sorted(h[:HASH_CHARS] for h in r.hashes)) or "-",
            "<- changed here" if r.changed else "",
        ]
        for r in rows
    ]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    numeric = {0, 3, 4, 5}
    for row in [header, *body]:
        cells = [
            cell.rjust(width) if i in numeric else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths))
        ]
        out.write("  " + "  ".join(cells).rstrip() + "\n")


def _counted(number: int, word: str, plural: str | None = None) -> str:
    """``1 event``, ``2 events``, ``1 process``, ``3 processes``."""
    return f"{number} {word if number == 1 else plural or word + 's'}"


def render(log: Log, out: TextIO, *, call_prefix: str | None = None) -> None:
    """Write the per-call report of ``log`` as plain text."""
    processes = {key[0] for key in log.calls}
    out.write(
        f"{_counted(log.events, 'event')}, {_counted(len(log.calls), 'tool call')}, "
        f"{_counted(len(processes), 'process', 'processes')}"
        + (f", {_counted(log.skipped, 'other line')} skipped" if log.skipped else "")
        + (f", {_counted(log.malformed, 'malformed event')} skipped" if log.malformed else "")
        + "\n"
    )
    if log.suppressed:
        total = sum(count for _, count in log.suppressed)
        where = ", ".join(str(line) for line, _ in log.suppressed)
        dropped = f"{_counted(total, 'event')} {'was' if total == 1 else 'were'} dropped"
        lines = "line" if len(log.suppressed) == 1 else "lines"
        out.write(
            f"rate limit: {dropped} (counted on {lines} {where}); "
            "paths around them may miss stages\n"
        )
    if len(processes) > 1:
        out.write("hashes are per process: results of different processes never match\n")
    for path in log.calls.values():
        if call_prefix and not path.call.startswith(call_prefix):
            continue
        tool = f", tool {path.tool[:HASH_CHARS]}" if path.tool else ""
        out.write(f"\ntool call {path.call[:HASH_CHARS]}{tool} (process {path.process})\n")
        for number, rows in enumerate(path.passes, 1):
            if len(path.passes) > 1:
                out.write(f"  pass {number}\n")
            _table(rows, out)
            first = next((r for r in rows if r.changed), None)
            if first is not None:
                before = rows[rows.index(first) - 1]
                out.write(
                    f"  -> first changed at {first.stage} (line {first.line}): "
                    f"{before.code_points:,} -> {first.code_points:,} code points\n"
                )
            elif len(rows) > 1:
                out.write("  -> unchanged across these stages\n")
            else:
                out.write("  -> seen at one stage only\n")
    if log.anonymous and not call_prefix:
        out.write("\nevents without a tool call id\n")
        _table(log.anonymous, out)
