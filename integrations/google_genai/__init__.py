"""budgetware for google-genai: HTTP options that route sync and async calls through a budget.

google-genai's async client talks to aiohttp directly when aiohttp is installed, where no
httpx patch can see it. Giving it an async httpx2 transport switches aiohttp off::

    from budgetware.integrations.google_genai import budget_http_options

    client = genai.Client(http_options=budget_http_options())
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from budgetware.core.config import BudgetConfig
from budgetware.http.transport import AsyncBudgetTransport, BudgetTransport

if TYPE_CHECKING:
    from google.genai.types import HttpOptions

__all__ = ["budget_http_options"]

_INSTALL = 'google-genai support needs the SDK: pip install "budgetware[google-genai]"'
# google-genai 3 requires Python 3.11; the extra installs nothing on 3.10.
_TOO_OLD = (
    "google-genai support needs Python 3.11 or newer (google-genai 3 requires it); "
    f"this is Python {sys.version_info[0]}.{sys.version_info[1]}"
)


def budget_http_options(
    *,
    config: BudgetConfig | None = None,
    http_options: HttpOptions | dict[str, Any] | None = None,
    **kwargs: Any,
) -> HttpOptions:
    """``google.genai.types.HttpOptions`` whose sync and async transports bound tool results.

    ``http_options`` (an ``HttpOptions`` or a dict) and ``kwargs`` are kept; their own
    ``client_args`` / ``async_client_args`` are extended with the transports.
    """
    try:
        import httpx2
        from google.genai import types
    except ImportError as exc:
        raise ImportError(_TOO_OLD if sys.version_info < (3, 11) else _INSTALL) from exc
    if isinstance(http_options, types.HttpOptions):
        values: dict[str, Any] = http_options.model_dump(exclude_unset=True)
    else:
        values = dict(http_options or {})
    values.update(kwargs)
    sync_args = values.get("client_args") or {}
    inner = sync_args.get("transport") or httpx2.HTTPTransport()
    values["client_args"] = {**sync_args, "transport": BudgetTransport(inner, config=config)}
    async_args = values.get("async_client_args") or {}
    async_inner = async_args.get("transport") or httpx2.AsyncHTTPTransport()
    budget = AsyncBudgetTransport(async_inner, config=config)
    values["async_client_args"] = {**async_args, "transport": budget}
    options: HttpOptions = types.HttpOptions(**values)
    return options
