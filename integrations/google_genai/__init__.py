"""budgetware for google-genai: ``genai.Client(http_options=budget_http_options())`` sends
sync and async calls through a budget (an async httpx2 transport also switches off the
aiohttp path, where no httpx patch can see them)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from budgetware.core.config import BudgetConfig
from budgetware.http.transport import AsyncBudgetTransport, BudgetTransport

if TYPE_CHECKING:
    from google.genai.types import HttpOptions

__all__ = ["budget_http_options"]

_INSTALL = 'google-genai support needs the SDK: pip install "budgetware[google-genai]"'
_TOO_OLD = "google-genai support needs Python 3.11 or newer (google-genai 3 requires it)"


def budget_http_options(
    *,
    config: BudgetConfig | None = None,
    http_options: HttpOptions | dict[str, Any] | None = None,
    **kwargs: Any,
) -> HttpOptions:
    """``google.genai.types.HttpOptions`` whose sync and async transports bound tool results;
    ``http_options`` (an ``HttpOptions`` or a dict) and ``kwargs`` are kept."""
    try:
        import httpx2
        from google.genai import types
        from httpx2._utils import get_environment_proxies
    except ImportError as exc:
        raise ImportError(_TOO_OLD if sys.version_info < (3, 11) else _INSTALL) from exc
    if isinstance(http_options, types.HttpOptions):
        values: dict[str, Any] = http_options.model_dump(exclude_unset=True)
    else:
        values = dict(http_options or {})
    values.update(kwargs)
    for name, make, budget in (
        ("client_args", httpx2.HTTPTransport, BudgetTransport),
        ("async_client_args", httpx2.AsyncHTTPTransport, AsyncBudgetTransport),
    ):
        args = dict(values.get(name) or {})
        # httpx2 gives a client's connection settings only to transports it builds: the
        # budget's get them too (a proxy, a mount around it, moves: it wins, as there).
        own = {key: args[key] for key in _CONNECTION if key in args}
        inner = args.get("transport") if args.pop("proxy", None) is None else None
        given = dict(args.get("mounts") or {})
        if inner is None and own.get("proxy") is None and own.get("trust_env", True):
            # httpx2 reads HTTPS_PROXY, NO_PROXY, ... only for a client without a transport.
            env = get_environment_proxies().items()
            given = {k: p and make(**{**own, "proxy": p}) for k, p in env} | given
        mounts = {k: t and budget(t, config=config) for k, t in given.items()}
        transport = budget(inner or make(**own), config=config)
        values[name] = {**args, "transport": transport, **({"mounts": mounts} if mounts else {})}
    options: HttpOptions = types.HttpOptions(**values)
    return options


_CONNECTION = ("verify", "cert", "trust_env", "http1", "http2", "limits", "proxy")
