"""Delivering a request's report when the request reaches the network, where the HTTP
client span is current: from httpcore's ``trace`` extension at the first network event,
else right after ``send`` (``settle``). A ``trace`` callback the caller set keeps working.
Its response's usage is read as it passes (``http/usage.py``), while something watches.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from budgetware.core.observe import RequestReport, deliver_request, usage_watched
from budgetware.http.hooks import register_response_rewriter

__all__ = ["REPORT_EXTENSION", "attach_report", "settle"]

REPORT_EXTENSION = "budgetware.report"
_TRACE = "trace"


class _Pending:
    __slots__ = ("delivered", "inner", "report", "watched")

    def __init__(self, report: RequestReport, inner: Any) -> None:
        self.report = report
        self.inner = inner
        self.delivered = False
        self.watched = False

    def deliver(self) -> None:
        if not self.delivered:
            self.delivered = True
            deliver_request(self.report)


class _SyncTrace:
    """httpcore's sync ``trace`` callback: deliver at the first event, then pass through."""

    __slots__ = ("pending",)

    def __init__(self, pending: _Pending) -> None:
        self.pending = pending

    def __call__(self, name: str, info: dict[str, Any]) -> None:
        pending = self.pending
        if not pending.delivered:
            pending.deliver()
        if pending.inner is not None:
            pending.inner(name, info)


class _AsyncTrace:
    """httpcore's async ``trace`` callback (it must be a coroutine function)."""

    __slots__ = ("pending",)

    def __init__(self, pending: _Pending) -> None:
        self.pending = pending

    async def __call__(self, name: str, info: dict[str, Any]) -> None:
        pending = self.pending
        if not pending.delivered:
            pending.deliver()
        if pending.inner is not None:
            inner: Callable[[str, dict[str, Any]], Awaitable[None]] = pending.inner
            await inner(name, info)


def attach_report(request: Any, report: RequestReport, *, asynchronous: bool) -> None:
    """Carry ``report`` on ``request`` until it reaches the network (see the module doc)."""
    extensions = request.extensions
    inner = extensions.get(_TRACE)
    if isinstance(inner, (_SyncTrace, _AsyncTrace)):  # a request sent again: unwrap ours
        inner = inner.pending.inner
    pending = _Pending(report, inner)
    extensions[REPORT_EXTENSION] = pending
    extensions[_TRACE] = _AsyncTrace(pending) if asynchronous else _SyncTrace(pending)


def settle(request: Any) -> None:
    """Deliver the report of ``request`` now if no network event did (call after send)."""
    if request is None:
        return
    pending = request.extensions.get(REPORT_EXTENSION)
    if pending is not None and not pending.delivered:
        pending.deliver()


def _watch_usage(request: Any, response: Any) -> Any:
    """Read the usage of the response to a reported request (the same response, unchanged)."""
    pending = getattr(request, "extensions", {}).get(REPORT_EXTENSION)
    if pending is None or pending.watched or not usage_watched():
        return response
    pending.watched = True
    from budgetware.http.usage import watch_usage

    watch_usage(response, pending.report)
    return response


register_response_rewriter(_watch_usage)
