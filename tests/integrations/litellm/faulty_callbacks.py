"""budgetware's proxy handler, with an internal error planted for the production-setting tests.

Copied next to the proxy's config (``callbacks: faulty_callbacks.handler``). A request
whose tool results hold ``PLANT-A-FAULT`` makes budgetware's bounding raise, inside the
proxy process, as a bug of budgetware's would; every other request is bounded as usual.
"""

from __future__ import annotations

from typing import Any

from budgetware.integrations.litellm.proxy import handler
from budgetware.wire import payload

__all__ = ["MARKER", "handler"]

MARKER = "PLANT-A-FAULT"
_bound = payload._bound


def _faulty(url: str, doc: dict[str, Any], config: Any, reports: Any) -> Any:
    if MARKER in repr(doc):
        raise RuntimeError(f"{MARKER}: a message that quotes the tool output")
    return _bound(url, doc, config, reports)


payload._bound = _faulty
