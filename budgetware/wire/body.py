"""Bounding the tool results inside one HTTP request body (the wire-format entry point)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

from budgetware.core.config import BudgetConfig, resolve_config
from budgetware.core.errors import fail_open
from budgetware.core.finalize import finalize_batch_written, guard_batch
from budgetware.core.measure import Unit, measure
from budgetware.core.models import ToolResult
from budgetware.core.observe import BatchReport, HistoryReport, RequestReport, count_cut
from budgetware.store.select import store_for_config
from budgetware.wire.detect import (
    SNIFF,
    Batch,
    JsonPath,
    WireFormat,
    format_for_url,
    read_body_as,
)
from budgetware.wire.history import mask_history, smallest_history_budget
from budgetware.wire.signing import signed_header_names
from budgetware.wire.splice import SpliceError, replace_values

__all__ = [
    "bound_batches",
    "finalize_body",
    "is_untouchable",
    "observed_finalize_body",
    "read_threshold",
]

logger = logging.getLogger("budgetware")


def finalize_body(
    url: str,
    body: bytes,
    *,
    headers: Mapping[str, str] | None = None,
    config: BudgetConfig | None = None,
) -> bytes:
    """Return ``body`` itself when nothing changes, else the body with bounded tool results.

    ``config`` None means the configuration in effect (environment and ``budget(...)``
    blocks). An internal error returns ``body`` unchanged and is logged, unless
    ``config.raise_errors`` is set.
    """
    if not isinstance(cast(object, body), bytes):
        return body  # None, bytearray, memoryview or str: not ours to rewrite
    if config is None:
        config = resolve_config(lenient=True)  # a setting gone bad never breaks a call
    return _guarded(url, body, headers, config, None)[0]


def observed_finalize_body(
    url: str,
    body: bytes,
    *,
    headers: Mapping[str, str] | None = None,
    config: BudgetConfig | None = None,
    entry: str = "http",
) -> tuple[bytes, RequestReport]:
    """``finalize_body``, and a report of what it did, for the caller to deliver while
    something watches (``core.observe.watching()``)."""
    start = time.perf_counter()
    if config is None:
        config = resolve_config(lenient=True)
    seen = _Seen()
    new_body, error = _guarded(url, body, headers, config, seen)
    seconds = time.perf_counter() - start
    report = seen.report(url, config, len(body), len(new_body), seconds, error, entry)
    return new_body, report


def _guarded(
    url: str,
    body: bytes,
    headers: Mapping[str, str] | None,
    config: BudgetConfig,
    seen: _Seen | None,
) -> tuple[bytes, str | None]:
    """The body bounded, or unchanged with the name of the error that stopped it."""
    threshold = read_threshold(config)
    if threshold is None or len(body) <= threshold:
        return body, None
    try:
        return _finalize(url, body, headers, config, seen), None
    except Exception as exc:
        fail_open("bound a request body", config=config)
        return body, type(exc).__name__


def read_threshold(config: BudgetConfig) -> int | None:
    """The size in bytes up to which a body (or a payload's JSON) cannot be over any of its
    budgets, so is not read; None when nothing is bounded."""
    # A string takes at least as many bytes in JSON as it measures in any unit: a body
    # within a budget holds no batch, and no history, over it.
    budgets = [config.batch_budget] if config.batch_budget > 0 else []
    if config.history_budget is not None:
        least = smallest_history_budget(config)
        if least is not None:
            budgets.append(least)
    return min(budgets) if budgets else None


_UNSEEN: Any = object()
"""The wire format of a body bounding stopped short of reading."""


class _Seen:
    """What bounding learns of a body or payload on its way, for its report."""

    __slots__ = ("batches", "fmt", "history", "size")

    def __init__(self) -> None:
        self.batches: list[BatchReport] = []
        self.fmt: WireFormat | None = _UNSEEN
        self.size: int | None = None
        self.history: HistoryReport | None = None

    def report(
        self,
        url: str,
        config: BudgetConfig,
        before: int,
        after: int,
        seconds: float,
        error: str | None,
        entry: str,
    ) -> RequestReport:
        fmt = self.fmt
        return RequestReport(
            # The API, looked up only if a subscriber asks; without the query (Gemini's ``?key=``).
            (lambda: _api_name(format_for_url(url.partition("?")[0], config)))
            if fmt is _UNSEEN
            else _api_name(fmt),
            bytes_before=before,
            bytes_after=after,
            batch_budget=config.batch_budget,
            unit=config.unit,
            seconds=seconds,
            batches=tuple(self.batches),
            error=error,
            telemetry=config.telemetry,
            entry=entry,
            config=config,
            history=self.history,
        )


def _api_name(fmt: WireFormat | None) -> str | None:
    return fmt.name if fmt is not None and fmt is not SNIFF else None


def is_untouchable(
    headers: Mapping[str, str] | Mapping[bytes, bytes], url: str = ""
) -> str | None:
    """Why a request with these headers must keep its body ("signed", "encoded"), or None."""
    lowered: dict[str, str] = {}
    for raw_key, raw_value in headers.items():
        # Raw header lists may carry bytes; a signature must not slip through as bytes.
        key = raw_key.decode("latin-1") if isinstance(raw_key, bytes) else str(raw_key)
        value = raw_value.decode("latin-1") if isinstance(raw_value, bytes) else str(raw_value)
        lowered[key.lower()] = value
    if signed_header_names(lowered, url) is not None:
        return "signed"
    if lowered.get("content-encoding", "").strip().lower() not in ("", "identity"):
        return "encoded"
    return None


def _finalize(
    url: str,
    body: bytes,
    headers: Mapping[str, str] | None,
    config: BudgetConfig,
    seen: _Seen | None,
) -> bytes:
    if headers is not None:
        reason = is_untouchable(headers, url)
        if reason is not None:
            if reason == "signed":
                _warn_signed()
            return body
    fmt, read = read_body_as(url, body, config)
    if seen is not None:
        seen.fmt = fmt
    if read is None:
        return body
    decoded, all_batches = read
    changes = bound_batches(all_batches, config, seen, url=url, body=decoded)
    if not changes:
        return body
    spliced = replace_values(body, decoded, changes)
    if spliced is None:  # every path was read from these bytes: cannot happen
        raise SpliceError("a changed string has no token in the body")
    return spliced


def bound_batches(
    all_batches: list[Batch],
    config: BudgetConfig,
    seen: _Seen | None,
    *,
    url: str,
    body: Mapping[str, Any],
) -> dict[JsonPath, tuple[str, str]]:
    """Bound every batch over budget, then the history of the request (``url`` and the
    decoded ``body``); the slots that changed, by path (old, new). With ``seen``, a report
    of every batch is added to it, even if an error stops it."""
    budget = config.batch_budget
    history = config.history_budget is not None and bool(all_batches)
    sizes: list[list[int]] = []
    if history:  # every result is measured anyway: once, for both passes
        sizes = [[_measure(found.slots, config.unit) for found in b] for b in all_batches]
        batches = [b for b, s in zip(all_batches, sizes) if 0 < budget < sum(s)]
    else:
        batches = [b for b in all_batches if budget > 0 and _over_budget(b, config)]
    bounded: dict[int, BatchReport] | None = None if seen is None else {}
    sent: dict[int, list[ToolResult]] = {}
    try:
        changes = _bound(batches, config, bounded, sent) if batches else {}
        if history:
            as_sent = []
            for batch, batch_sizes in zip(all_batches, sizes):
                entries = sent.get(id(batch))
                if entries is None:
                    as_sent.append([found.entry() for found in batch])
                    continue
                as_sent.append(entries)
                for index, (found, entry) in enumerate(zip(batch, entries)):
                    if any(new is not old for new, old in zip(entry.slots, found.slots)):
                        batch_sizes[index] = _measure(entry.slots, config.unit)
            report = mask_history(url, body, all_batches, as_sent, sizes, config)
            if report is not None:
                changes.update(report[1])
                if seen is not None:
                    seen.history = report[0]
        return changes
    finally:
        if seen is not None and bounded is not None:
            seen.batches.extend(_report_batches(all_batches, bounded, config))


def _measure(slots: Sequence[str], unit: Unit) -> int:
    return sum(measure(slot, unit) for slot in slots)


def _over_budget(batch: Batch, config: BudgetConfig) -> bool:
    # A token is at least one UTF-8 byte: within budget in bytes, no need to tokenize.
    exact = config.unit.startswith("tokens:")
    units: tuple[Unit, ...] = ("utf8_bytes", config.unit) if exact else (config.unit,)
    budget = config.batch_budget
    return all(sum(_measure(found.slots, unit) for found in batch) > budget for unit in units)


def _report_batches(
    all_batches: list[Batch], bounded: dict[int, BatchReport], config: BudgetConfig
) -> list[BatchReport]:
    """Every batch of the body in order: the bounded ones as ``_bound`` reported them."""
    out: list[BatchReport] = []
    for batch in all_batches:
        report = bounded.get(id(batch))
        if report is None:
            entries = tuple(found.entry() for found in batch)
            report = BatchReport(
                "request", entries, entries, config.batch_budget, config.unit, cut=0
            )
        out.append(report)
    return out


def _bound(
    batches: list[Batch],
    config: BudgetConfig,
    reports: dict[int, BatchReport] | None,
    sent: dict[int, list[ToolResult]],
) -> dict[JsonPath, tuple[str, str]]:
    """Finalize every batch, then guard every result; the slots that changed, by path.
    ``sent`` gets each batch's results as they will be sent."""
    store = store_for_config(config)
    originals = [[found.entry() for found in batch] for batch in batches]
    finalized = [
        finalize_batch_written(entries, config=config, store=store) for entries in originals
    ]
    guarded = [guard_batch(entries, config=config) for entries, _ in finalized]
    if reports is not None:
        for batch, before, after, (_, written) in zip(batches, originals, guarded, finalized):
            reports[id(batch)] = BatchReport(
                "request",
                before,
                after,
                config.batch_budget,
                config.unit,
                written,
                cut=count_cut(before, after),
            )
    changes: dict[JsonPath, tuple[str, str]] = {}
    for batch, entries in zip(batches, guarded):
        sent[id(batch)] = entries
        for found, entry in zip(batch, entries):
            slots = zip(found.paths, found.kept, found.slots, entry.slots, found.tail)
            for path, kept, old, new, tail in slots:
                if new is not old and new != old:
                    changes[path] = (kept + old + tail, kept + new + tail)
    return changes


@functools.cache  # once per process
def _warn_signed() -> None:
    logger.warning(
        "budgetware does not rewrite signed request bodies (AWS SigV4); bound those "
        "requests above the HTTP layer (for example anthropic middleware)"
    )
