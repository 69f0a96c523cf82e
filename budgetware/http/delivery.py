"""Delivering a request's report when the request reaches the network, where the HTTP
client span is current: from httpcore's ``trace`` extension at the first network event,
else right after ``send`` (``settle``). A ``trace`` callback the caller set keeps working.
Its response's usage is read as it passes (``http/usage.py``), while something watches.
"""

from __future__ import annotations

from typing import Any

from budgetware.core.observe import RequestReport, deliver_request, usage_watched
from budgetware.http.hooks import register_response_rewriter

__all__ = ["REPORT_EXTENSION", "attach_report", "settle"]

REPORT_EXTENSION = "budgetware.report"
_TRACE = "trace"


class _Pending:
    """A request's report until it is delivered, and the ``trace`` callback it replaced."""

    def __init__(self, report: RequestReport, inner: Any) -> None:
        self.report = report
        self.inner = inner
        self.delivered = False
        self.watched = False

    def deliver(self) -> None:
        if not self.delivered:
            self.delivered = True
            deliver_request(self.report)

    def trace(self, name: str, info: dict[str, Any]) -> None:
        """httpcore's sync ``trace`` callback: deliver at the first event, then pass through."""
        self.deliver()
        if self.inner is not None:
            self.inner(name, info)

    async def atrace(self, name: str, info: dict[str, Any]) -> None:
        """httpcore's async ``trace`` callback (it must be a coroutine function)."""
        self.deliver()
        if self.inner is not None:
            await self.inner(name, info)


def attach_report(request: Any, report: RequestReport, *, asynchronous: bool) -> None:
    """Carry ``report`` on ``request`` until it reaches the network (see the module doc)."""
    extensions = request.extensions
    inner = extensions.get(_TRACE)
    ours = getattr(inner, "__self__", None)
    if isinstance(ours, _Pending):  # a request sent again: unwrap ours
        inner = ours.inner
    pending = _Pending(report, inner)
    extensions[REPORT_EXTENSION] = pending
    extensions[_TRACE] = pending.atrace if asynchronous else pending.trace


def settle(request: Any) -> None:
    """Deliver the report of ``request`` now if no network event did (call after send)."""
    if request is None:
        return
    pending = request.extensions.get(REPORT_EXTENSION)
    if pending is not None:
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
