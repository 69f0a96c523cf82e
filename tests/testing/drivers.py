"""Drivers that send one request carrying a batch of tool results through each real SDK.

Every driver builds a real client of one library, points it at a provider root URL (the
fake provider's ``fp.url``; each driver appends the path prefix its SDK expects), and sends
ONE request whose conversation is: a user message, the assistant turn that asked for
``len(results)`` calls of the tool ``lookup`` (ids ``call_0``, ``call_1``, ...), then the
tool results in that SDK's native wire shape. It returns the text of the model's reply.

Hooks (the per-client seams of the design note WIRE_FORMATS.md, "Where to hook / Per
client"; docs/sdk-notes.md lists what each SDK really sends):

- ``wrap_transport``: a callable that receives the transport the SDK would use by default
  (built here with the SDK's own defaults: anthropic's keep-alive socket options, the
  aiohttp transport of ``DefaultAioHttpClient`` and of litellm async, ...) and returns the
  transport to mount, e.g. ``wrap_transport=BudgetTransport``. It must return an object of
  the same HTTP library (httpx2 for openai, anthropic, google-genai, mistralai; classic
  httpx for litellm, ollama, cohere).
- ``http_client``: a ready client for the SDK's ``http_client``-like argument, used as is
  and left open (the caller owns it). Drivers that have no such seam (ollama) do not take
  it.

Without ``http_client`` a driver builds and closes its clients itself, so no socket
outlives the call (pytest runs with warnings as errors, and an unclosed socket is a
ResourceWarning). Retries are off everywhere: a failure shows at once.

Each driver has a sync form ``send_*`` and an async form ``asend_*`` (run it in your own
event loop; the sync form takes ``asynchronous=True`` to run the async form under
``asyncio.run`` when no loop is running).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

import pytest

# litellm fetches its model cost map from the network at import time unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

WrapTransport = Callable[[Any], Any]
Headers = Mapping[str, str] | None
T = TypeVar("T")

TOOL_NAME = "lookup"
USER_PROMPT = "Look these up, then summarize what you found."
DUMMY_KEY = "sk-fake-key-for-tests"

OPENAI_MODEL = "gpt-4o-mini"
ANTHROPIC_MODEL = "claude-haiku-4-5"
GEMINI_MODEL = "gemini-2.5-flash"
MISTRAL_MODEL = "mistral-small-latest"
OLLAMA_MODEL = "llama3.2"
COHERE_MODEL = "command-a-03-2025"


def call_id(i: int) -> str:
    return f"call_{i}"


def call_args(i: int) -> dict[str, Any]:
    return {"query": f"item {i}"}


def _args_json(i: int) -> str:
    return json.dumps(call_args(i))


def _run(fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
    """Run an ``asend_*`` driver to completion from synchronous code."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        # Checked before the coroutine exists, so no "never awaited" warning follows.
        raise RuntimeError(f"an event loop is running: await {fn.__name__}(...) instead")

    async def main() -> T:
        return await fn(*args, **kwargs)

    return asyncio.run(main())


def _wrap(wrap_transport: WrapTransport | None, inner: Any) -> Any:
    return inner if wrap_transport is None else wrap_transport(inner)


def _close_inner(inner: Any, mounted: Any) -> None:
    # A wrapper that forgets to close its inner transport must not leak its pool.
    if mounted is not inner:
        inner.close()


async def _aclose_inner(inner: Any, mounted: Any) -> None:
    if mounted is not inner:
        await inner.aclose()


# --- OpenAI (httpx2) -----------------------------------------------------------------------


def openai_chat_messages(results: Sequence[str]) -> list[dict[str, Any]]:
    """A Chat Completions conversation: user, assistant tool_calls, one tool message each."""
    return [
        {"role": "user", "content": USER_PROMPT},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id(i),
                    "type": "function",
                    "function": {"name": TOOL_NAME, "arguments": _args_json(i)},
                }
                for i in range(len(results))
            ],
        },
        *(
            {"role": "tool", "tool_call_id": call_id(i), "content": text}
            for i, text in enumerate(results)
        ),
    ]


def openai_responses_input(results: Sequence[str]) -> list[dict[str, Any]]:
    """A Responses input: user message, function_call items, function_call_output items."""
    return [
        {"role": "user", "content": USER_PROMPT},
        *(
            {
                "type": "function_call",
                "call_id": call_id(i),
                "name": TOOL_NAME,
                "arguments": _args_json(i),
            }
            for i in range(len(results))
        ),
        *(
            {"type": "function_call_output", "call_id": call_id(i), "output": text}
            for i, text in enumerate(results)
        ),
    ]


def _openai_sync_http_client(wrap_transport: WrapTransport | None) -> tuple[Any, Any, Any]:
    import httpx2
    import openai
    from openai._constants import DEFAULT_CONNECTION_LIMITS

    # DefaultHttpxClient passes its limits to the transport it builds; one we build and
    # mount ourselves has to get them directly.
    inner = httpx2.HTTPTransport(limits=DEFAULT_CONNECTION_LIMITS)
    mounted = _wrap(wrap_transport, inner)
    return openai.DefaultHttpxClient(transport=mounted), inner, mounted


def _openai_async_http_client(
    wrap_transport: WrapTransport | None, *, aiohttp: bool = False
) -> tuple[Any, Any, Any]:
    import httpx2
    import openai
    from openai._constants import DEFAULT_CONNECTION_LIMITS

    if aiohttp:
        # DefaultAioHttpClient only swaps the transport of an httpx2.AsyncClient for the
        # vendored AiohttpTransport: wrapping that transport keeps aiohttp on the wire.
        from openai._vendor.httpx_aiohttp import AiohttpTransport

        inner: Any = AiohttpTransport(limits=DEFAULT_CONNECTION_LIMITS)
        mounted = _wrap(wrap_transport, inner)
        return openai.DefaultAioHttpClient(transport=mounted), inner, mounted
    inner = httpx2.AsyncHTTPTransport(limits=DEFAULT_CONNECTION_LIMITS)
    mounted = _wrap(wrap_transport, inner)
    return openai.DefaultAsyncHttpxClient(transport=mounted), inner, mounted


def _openai_client(base_url: str, http_client: Any) -> Any:
    import openai

    return openai.OpenAI(
        base_url=f"{base_url}/v1", api_key=DUMMY_KEY, max_retries=0, http_client=http_client
    )


def _async_openai_client(base_url: str, http_client: Any) -> Any:
    import openai

    return openai.AsyncOpenAI(
        base_url=f"{base_url}/v1", api_key=DUMMY_KEY, max_retries=0, http_client=http_client
    )


def _with_openai_sync(
    base_url: str,
    http_client: Any,
    wrap_transport: WrapTransport | None,
    call: Callable[[Any], str],
) -> str:
    if http_client is not None:
        return call(_openai_client(base_url, http_client))
    http, inner, mounted = _openai_sync_http_client(wrap_transport)
    try:
        with _openai_client(base_url, http) as client:
            return call(client)
    finally:
        _close_inner(inner, mounted)


async def _with_openai_async(
    base_url: str,
    http_client: Any,
    wrap_transport: WrapTransport | None,
    call: Callable[[Any], Awaitable[str]],
    *,
    aiohttp: bool = False,
) -> str:
    if http_client is not None:
        return await call(_async_openai_client(base_url, http_client))
    http, inner, mounted = _openai_async_http_client(wrap_transport, aiohttp=aiohttp)
    try:
        async with _async_openai_client(base_url, http) as client:
            return await call(client)
    finally:
        await _aclose_inner(inner, mounted)


def send_openai_chat(
    base_url: str,
    results: Sequence[str],
    *,
    http_client: Any = None,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
    asynchronous: bool = False,
) -> str:
    """openai ``chat.completions.create``: ``POST /v1/chat/completions``, ``role: tool``."""
    if asynchronous:
        return _run(
            asend_openai_chat,
            base_url,
            results,
            http_client=http_client,
            wrap_transport=wrap_transport,
            extra_headers=extra_headers,
        )

    def call(client: Any) -> str:
        completion = client.chat.completions.create(
            model=OPENAI_MODEL,
            messages=openai_chat_messages(results),
            extra_headers=dict(extra_headers or {}),
        )
        return str(completion.choices[0].message.content)

    return _with_openai_sync(base_url, http_client, wrap_transport, call)


async def asend_openai_chat(
    base_url: str,
    results: Sequence[str],
    *,
    http_client: Any = None,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
    aiohttp: bool = False,
) -> str:
    """``AsyncOpenAI`` chat completions; ``aiohttp=True`` uses ``DefaultAioHttpClient``."""

    async def call(client: Any) -> str:
        completion = await client.chat.completions.create(
            model=OPENAI_MODEL,
            messages=openai_chat_messages(results),
            extra_headers=dict(extra_headers or {}),
        )
        return str(completion.choices[0].message.content)

    return await _with_openai_async(base_url, http_client, wrap_transport, call, aiohttp=aiohttp)


async def asend_openai_chat_aiohttp(
    base_url: str,
    results: Sequence[str],
    *,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
) -> str:
    """``AsyncOpenAI(http_client=DefaultAioHttpClient(...))``: aiohttp under httpx2."""
    return await asend_openai_chat(
        base_url,
        results,
        wrap_transport=wrap_transport,
        extra_headers=extra_headers,
        aiohttp=True,
    )


def send_openai_responses(
    base_url: str,
    results: Sequence[str],
    *,
    http_client: Any = None,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
    asynchronous: bool = False,
) -> str:
    """openai ``responses.create``: ``POST /v1/responses``, ``function_call_output`` items."""
    if asynchronous:
        return _run(
            asend_openai_responses,
            base_url,
            results,
            http_client=http_client,
            wrap_transport=wrap_transport,
            extra_headers=extra_headers,
        )

    def call(client: Any) -> str:
        response = client.responses.create(
            model=OPENAI_MODEL,
            input=openai_responses_input(results),
            extra_headers=dict(extra_headers or {}),
        )
        return str(response.output_text)

    return _with_openai_sync(base_url, http_client, wrap_transport, call)


async def asend_openai_responses(
    base_url: str,
    results: Sequence[str],
    *,
    http_client: Any = None,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
) -> str:
    """``AsyncOpenAI`` ``responses.create``."""

    async def call(client: Any) -> str:
        response = await client.responses.create(
            model=OPENAI_MODEL,
            input=openai_responses_input(results),
            extra_headers=dict(extra_headers or {}),
        )
        return str(response.output_text)

    return await _with_openai_async(base_url, http_client, wrap_transport, call)


# --- Anthropic (httpx2) --------------------------------------------------------------------


def anthropic_messages(results: Sequence[str]) -> list[dict[str, Any]]:
    """Messages: user text, assistant ``tool_use`` blocks, a user turn of ``tool_result``."""
    return [
        {"role": "user", "content": USER_PROMPT},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": call_id(i), "name": TOOL_NAME, "input": call_args(i)}
                for i in range(len(results))
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call_id(i), "content": text}
                for i, text in enumerate(results)
            ],
        },
    ]


def anthropic_keepalive_socket_options() -> list[tuple[int, int, int]]:
    """The TCP keep-alive options ``anthropic.DefaultHttpxClient`` sets on its own transport
    (passing ``transport=`` skips them), as its ``_base_client`` lists them."""
    options = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPINTVL", 60), ("TCP_KEEPCNT", 5), ("TCP_KEEPIDLE", 60)):
        if hasattr(socket, name):
            options.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return options


def _anthropic_text(message: Any) -> str:
    return "".join(b.text for b in message.content if b.type == "text")


def send_anthropic(
    base_url: str,
    results: Sequence[str],
    *,
    http_client: Any = None,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
    asynchronous: bool = False,
) -> str:
    """anthropic ``messages.create``: ``POST /v1/messages``, ``tool_result`` blocks."""
    if asynchronous:
        return _run(
            asend_anthropic,
            base_url,
            results,
            http_client=http_client,
            wrap_transport=wrap_transport,
            extra_headers=extra_headers,
        )
    import anthropic
    import httpx2
    from anthropic._constants import DEFAULT_CONNECTION_LIMITS

    inner = mounted = None
    own = http_client is None
    if own:
        inner = httpx2.HTTPTransport(
            limits=DEFAULT_CONNECTION_LIMITS, socket_options=anthropic_keepalive_socket_options()
        )
        mounted = _wrap(wrap_transport, inner)
        http_client = anthropic.DefaultHttpxClient(transport=mounted)
    client = anthropic.Anthropic(
        base_url=base_url, api_key=DUMMY_KEY, max_retries=0, http_client=http_client
    )
    try:
        message = client.messages.create(
            model=ANTHROPIC_MODEL,
            max_tokens=256,
            messages=anthropic_messages(results),  # type: ignore[arg-type]
            extra_headers=dict(extra_headers or {}),
        )
        return _anthropic_text(message)
    finally:
        if own:
            client.close()
            _close_inner(inner, mounted)


async def asend_anthropic(
    base_url: str,
    results: Sequence[str],
    *,
    http_client: Any = None,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
    aiohttp: bool = False,
) -> str:
    """``AsyncAnthropic``; ``aiohttp=True`` uses ``DefaultAioHttpClient`` (aiohttp below)."""
    import anthropic
    import httpx2
    from anthropic._constants import DEFAULT_CONNECTION_LIMITS

    inner: Any = None
    mounted: Any = None
    own = http_client is None
    if own:
        if aiohttp:
            from anthropic._vendor.httpx_aiohttp import AiohttpTransport

            inner = AiohttpTransport(limits=DEFAULT_CONNECTION_LIMITS)
            mounted = _wrap(wrap_transport, inner)
            http_client = anthropic.DefaultAioHttpClient(transport=mounted)
        else:
            inner = httpx2.AsyncHTTPTransport(
                limits=DEFAULT_CONNECTION_LIMITS,
                socket_options=anthropic_keepalive_socket_options(),
            )
            mounted = _wrap(wrap_transport, inner)
            http_client = anthropic.DefaultAsyncHttpxClient(transport=mounted)
    client = anthropic.AsyncAnthropic(
        base_url=base_url, api_key=DUMMY_KEY, max_retries=0, http_client=http_client
    )
    try:
        message = await client.messages.create(
            model=ANTHROPIC_MODEL,
            max_tokens=256,
            messages=anthropic_messages(results),  # type: ignore[arg-type]
            extra_headers=dict(extra_headers or {}),
        )
        return _anthropic_text(message)
    finally:
        if own:
            await client.close()
            await _aclose_inner(inner, mounted)


# --- google-genai (httpx2 sync; aiohttp or httpx2 async) ------------------------------------


def gemini_contents(results: Sequence[str]) -> list[Any]:
    """Contents: user text, a model turn of function_call parts, a user turn of
    function_response parts with the result under ``response.output``."""
    from google.genai import types

    return [
        types.Content(role="user", parts=[types.Part(text=USER_PROMPT)]),
        types.Content(
            role="model",
            parts=[
                types.Part(
                    function_call=types.FunctionCall(
                        id=call_id(i), name=TOOL_NAME, args=call_args(i)
                    )
                )
                for i in range(len(results))
            ],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id=call_id(i), name=TOOL_NAME, response={"output": text}
                    )
                )
                for i, text in enumerate(results)
            ],
        ),
    ]


def send_google_genai(
    base_url: str,
    results: Sequence[str],
    *,
    http_client: Any = None,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
    asynchronous: bool = False,
) -> str:
    """google-genai ``models.generate_content``:
    ``POST /v1beta/models/{model}:generateContent``, ``functionResponse`` parts.

    ``http_client`` goes to ``HttpOptions(httpx_client=...)`` (an ``httpx2.Client``);
    ``wrap_transport`` wraps an ``httpx2.HTTPTransport`` given as
    ``HttpOptions(client_args={"transport": ...})``.
    """
    if asynchronous:
        return _run(
            asend_google_genai,
            base_url,
            results,
            http_client=http_client,
            wrap_transport=wrap_transport,
            extra_headers=extra_headers,
        )
    import httpx2
    from google import genai
    from google.genai import types

    options: dict[str, Any] = {"base_url": base_url, "headers": dict(extra_headers or {})}
    inner = mounted = None
    if http_client is not None:
        options["httpx_client"] = http_client
    else:
        inner = httpx2.HTTPTransport()
        mounted = _wrap(wrap_transport, inner)
        options["client_args"] = {"transport": mounted}
    client = genai.Client(api_key=DUMMY_KEY, http_options=types.HttpOptions(**options))
    try:
        response = client.models.generate_content(
            model=GEMINI_MODEL, contents=gemini_contents(results)
        )
        return str(response.text)
    finally:
        if http_client is None:
            client.close()
            _close_inner(inner, mounted)


async def asend_google_genai(
    base_url: str,
    results: Sequence[str],
    *,
    http_client: Any = None,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
    backend: Literal["httpx2", "aiohttp"] = "httpx2",
) -> str:
    """``client.aio.models.generate_content``: which HTTP stack carries it depends on the options.

    google-genai 3.6 (``_api_client.BaseApiClient._use_aiohttp``) sends async requests
    with **aiohttp directly** (its own ``aiohttp.ClientSession``, no httpx anywhere) when
    aiohttp is importable, unless ``HttpOptions.async_client_args`` has a ``"transport"``
    or ``HttpOptions.httpx_async_client`` is set; either of those switches aiohttp off and
    the request goes through an httpx2 ``AsyncClient.send`` (``AsyncHttpx2Client``).
    Without a transport that client would even send through one inner
    ``httpx2.AsyncClient`` per event loop (``_PerLoopAsyncClientMixin``); with one it
    sends itself. ``client_args`` alone never affects the async path.

    - ``backend="httpx2"`` (default): ``async_client_args={"transport": wrap(inner)}``
      with ``inner = httpx2.AsyncHTTPTransport()``, or ``httpx_async_client=http_client``.
    - ``backend="aiohttp"``: the SDK default with aiohttp installed; no HTTP-layer hook
      exists on that path (``wrap_transport`` and ``http_client`` are refused), which is
      exactly the case an HTTP-layer interceptor cannot see.
    """
    import httpx2
    from google import genai
    from google.genai import types

    options: dict[str, Any] = {"base_url": base_url, "headers": dict(extra_headers or {})}
    inner = mounted = None
    if backend == "aiohttp":
        if http_client is not None or wrap_transport is not None:
            raise ValueError("google-genai's aiohttp path has no transport or client hook")
    elif http_client is not None:
        options["httpx_async_client"] = http_client
    else:
        inner = httpx2.AsyncHTTPTransport()
        mounted = _wrap(wrap_transport, inner)
        options["async_client_args"] = {"transport": mounted}
    client = genai.Client(api_key=DUMMY_KEY, http_options=types.HttpOptions(**options))
    try:
        response = await client.aio.models.generate_content(
            model=GEMINI_MODEL, contents=gemini_contents(results)
        )
        return str(response.text)
    finally:
        if http_client is None:
            await client.aio.aclose()
            client.close()
            if inner is not None:
                await _aclose_inner(inner, mounted)


# --- mistralai (httpx2) --------------------------------------------------------------------


def mistral_messages(results: Sequence[str]) -> list[dict[str, Any]]:
    """Mistral chat messages; tool messages carry ``name`` besides ``tool_call_id``."""
    return [
        {"role": "user", "content": USER_PROMPT},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": call_id(i),
                    "type": "function",
                    "function": {"name": TOOL_NAME, "arguments": _args_json(i)},
                }
                for i in range(len(results))
            ],
        },
        *(
            {"role": "tool", "tool_call_id": call_id(i), "name": TOOL_NAME, "content": text}
            for i, text in enumerate(results)
        ),
    ]


def _mistral_text(response: Any) -> str:
    content = response.choices[0].message.content
    if isinstance(content, str):
        return content
    return "".join(getattr(chunk, "text", "") for chunk in content or [])


def send_mistral(
    base_url: str,
    results: Sequence[str],
    *,
    http_client: Any = None,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
    asynchronous: bool = False,
) -> str:
    """mistralai ``chat.complete``: ``POST /v1/chat/completions`` (OpenAI Chat shape)."""
    if asynchronous:
        return _run(
            asend_mistral,
            base_url,
            results,
            http_client=http_client,
            wrap_transport=wrap_transport,
            extra_headers=extra_headers,
        )
    import httpx2
    from mistralai.client import Mistral

    inner = mounted = None
    own = http_client is None
    if own:
        inner = httpx2.HTTPTransport()
        mounted = _wrap(wrap_transport, inner)
        http_client = httpx2.Client(transport=mounted, follow_redirects=True)
    try:
        # The SDK never closes a client it was given. The async client it builds for itself
        # stays unused (no socket) and its weakref finalizer closes it.
        with Mistral(api_key=DUMMY_KEY, server_url=base_url, client=http_client) as client:
            response = client.chat.complete(
                model=MISTRAL_MODEL,
                messages=mistral_messages(results),
                http_headers=dict(extra_headers or {}),
            )
            return _mistral_text(response)
    finally:
        if own:
            http_client.close()
            _close_inner(inner, mounted)


async def asend_mistral(
    base_url: str,
    results: Sequence[str],
    *,
    http_client: Any = None,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
) -> str:
    """mistralai ``chat.complete_async`` with ``Mistral(async_client=httpx2.AsyncClient)``."""
    import httpx2
    from mistralai.client import Mistral

    inner = mounted = None
    own = http_client is None
    if own:
        inner = httpx2.AsyncHTTPTransport()
        mounted = _wrap(wrap_transport, inner)
        http_client = httpx2.AsyncClient(transport=mounted, follow_redirects=True)
    try:
        async with Mistral(
            api_key=DUMMY_KEY, server_url=base_url, async_client=http_client
        ) as client:
            response = await client.chat.complete_async(
                model=MISTRAL_MODEL,
                messages=mistral_messages(results),
                http_headers=dict(extra_headers or {}),
            )
            return _mistral_text(response)
    finally:
        if own:
            await http_client.aclose()
            await _aclose_inner(inner, mounted)


# --- litellm (classic httpx) ---------------------------------------------------------------

LitellmProvider = Literal["openai", "anthropic", "gemini"]
LITELLM_MODELS: dict[str, str] = {
    "openai": f"openai/{OPENAI_MODEL}",
    "anthropic": f"anthropic/{ANTHROPIC_MODEL}",
    "gemini": f"gemini/{GEMINI_MODEL}",
}


def litellm_api_base(base_url: str, provider: LitellmProvider) -> str:
    """The ``api_base`` that makes each litellm provider hit the fake provider's paths.

    openai: ``{api_base}/chat/completions``; anthropic: ``{api_base}/v1/messages``;
    gemini (Google AI Studio): ``{api_base}/models/{model}:generateContent``.
    """
    if provider == "openai":
        return f"{base_url}/v1"
    if provider == "gemini":
        return f"{base_url}/v1beta"
    return base_url


def _litellm_kwargs(
    base_url: str, provider: LitellmProvider, results: Sequence[str], extra_headers: Headers
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": LITELLM_MODELS[provider],
        "api_base": litellm_api_base(base_url, provider),
        "api_key": DUMMY_KEY,
        # litellm takes OpenAI-format messages for every provider and converts them.
        "messages": openai_chat_messages(results),
        "max_retries": 0,
        "num_retries": 0,
    }
    if provider == "anthropic":
        kwargs["max_tokens"] = 256
    if extra_headers:
        kwargs["extra_headers"] = dict(extra_headers)
    return kwargs


def _litellm_text(response: Any) -> str:
    return str(response.choices[0].message.content)


def send_litellm(
    base_url: str,
    results: Sequence[str],
    *,
    provider: LitellmProvider = "openai",
    http_client: Any = None,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
    asynchronous: bool = False,
) -> str:
    """``litellm.completion`` through its openai, anthropic or gemini provider.

    The per-call ``client`` differs by provider: the openai provider takes an
    ``openai.OpenAI`` (built here around a classic ``httpx.Client``, which the openai SDK
    accepts); every other provider takes litellm's ``HTTPHandler(client=httpx.Client(...))``.
    ``http_client`` is that object, passed as is.
    """
    if asynchronous:
        return _run(
            asend_litellm,
            base_url,
            results,
            provider=provider,
            http_client=http_client,
            wrap_transport=wrap_transport,
            extra_headers=extra_headers,
        )
    import httpx
    import litellm
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    kwargs = _litellm_kwargs(base_url, provider, results, extra_headers)
    if http_client is not None:
        return _litellm_text(litellm.completion(client=http_client, **kwargs))
    inner = httpx.HTTPTransport()
    mounted = _wrap(wrap_transport, inner)
    http = httpx.Client(transport=mounted, follow_redirects=True)
    try:
        if provider == "openai":
            import openai

            # Typed for httpx2, but the openai SDK takes a classic httpx client too: that is
            # what litellm itself hands it.
            client: Any = openai.OpenAI(
                api_key=DUMMY_KEY,
                base_url=kwargs["api_base"],
                max_retries=0,
                http_client=cast(Any, http),
            )
        else:
            client = HTTPHandler(client=http)
        return _litellm_text(litellm.completion(client=client, **kwargs))
    finally:
        http.close()
        _close_inner(inner, mounted)


async def asend_litellm(
    base_url: str,
    results: Sequence[str],
    *,
    provider: LitellmProvider = "openai",
    http_client: Any = None,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
) -> str:
    """``litellm.acompletion``; the default inner transport is litellm's own async one
    (``AsyncHTTPHandler.create_async_transport()``: its aiohttp transport under a classic
    ``httpx.AsyncClient``)."""
    import httpx
    import litellm
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    kwargs = _litellm_kwargs(base_url, provider, results, extra_headers)
    if http_client is not None:
        return _litellm_text(await litellm.acompletion(client=http_client, **kwargs))
    inner = AsyncHTTPHandler.create_async_transport()
    mounted = _wrap(wrap_transport, inner)
    if provider == "openai":
        import openai

        http = httpx.AsyncClient(transport=mounted, follow_redirects=True)
        client: Any = openai.AsyncOpenAI(
            api_key=DUMMY_KEY,
            base_url=kwargs["api_base"],
            max_retries=0,
            http_client=cast(Any, http),
        )
        close: Callable[[], Awaitable[None]] = http.aclose
    else:
        handler = AsyncHTTPHandler(transport=mounted)
        client = handler
        close = handler.close
    try:
        return _litellm_text(await litellm.acompletion(client=client, **kwargs))
    finally:
        await close()
        await _aclose_inner(inner, mounted)


# --- ollama (classic httpx) ----------------------------------------------------------------


def ollama_messages(results: Sequence[str]) -> list[dict[str, Any]]:
    """Ollama chat messages; tool messages name the tool with ``tool_name``."""
    return [
        {"role": "user", "content": USER_PROMPT},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"function": {"name": TOOL_NAME, "arguments": call_args(i)}}
                for i in range(len(results))
            ],
        },
        *({"role": "tool", "tool_name": TOOL_NAME, "content": text} for text in results),
    ]


def send_ollama(
    base_url: str,
    results: Sequence[str],
    *,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
    asynchronous: bool = False,
) -> str:
    """ollama ``Client(host=..., transport=...).chat``: ``POST /api/chat``, ``stream: false``."""
    if asynchronous:
        return _run(
            asend_ollama,
            base_url,
            results,
            wrap_transport=wrap_transport,
            extra_headers=extra_headers,
        )
    import httpx
    import ollama

    inner = httpx.HTTPTransport()
    mounted = _wrap(wrap_transport, inner)
    try:
        with ollama.Client(
            host=base_url, transport=mounted, headers=dict(extra_headers or {})
        ) as client:
            response = client.chat(model=OLLAMA_MODEL, messages=ollama_messages(results))
            return str(response.message.content)
    finally:
        _close_inner(inner, mounted)


async def asend_ollama(
    base_url: str,
    results: Sequence[str],
    *,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
) -> str:
    """ollama ``AsyncClient(host=..., transport=...).chat``."""
    import httpx
    import ollama

    inner = httpx.AsyncHTTPTransport()
    mounted = _wrap(wrap_transport, inner)
    try:
        async with ollama.AsyncClient(
            host=base_url, transport=mounted, headers=dict(extra_headers or {})
        ) as client:
            response = await client.chat(model=OLLAMA_MODEL, messages=ollama_messages(results))
            return str(response.message.content)
    finally:
        await _aclose_inner(inner, mounted)


# --- cohere (classic httpx) ----------------------------------------------------------------


def cohere_messages(results: Sequence[str]) -> list[dict[str, Any]]:
    """Cohere v2 messages: assistant ``tool_calls`` (with a ``tool_plan``), ``role: tool``."""
    return [
        {"role": "user", "content": USER_PROMPT},
        {
            "role": "assistant",
            "tool_plan": "I will look each item up.",
            "tool_calls": [
                {
                    "id": call_id(i),
                    "type": "function",
                    "function": {"name": TOOL_NAME, "arguments": _args_json(i)},
                }
                for i in range(len(results))
            ],
        },
        *(
            {"role": "tool", "tool_call_id": call_id(i), "content": text}
            for i, text in enumerate(results)
        ),
    ]


def _cohere_text(response: Any) -> str:
    return "".join(getattr(item, "text", "") for item in response.message.content or [])


def send_cohere(
    base_url: str,
    results: Sequence[str],
    *,
    http_client: Any = None,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
    asynchronous: bool = False,
) -> str:
    """cohere ``ClientV2(base_url=..., httpx_client=httpx.Client(...)).chat``: ``/v2/chat``."""
    if asynchronous:
        return _run(
            asend_cohere,
            base_url,
            results,
            http_client=http_client,
            wrap_transport=wrap_transport,
            extra_headers=extra_headers,
        )
    import cohere
    import httpx

    inner = mounted = None
    own = http_client is None
    if own:
        inner = httpx.HTTPTransport()
        mounted = _wrap(wrap_transport, inner)
        http_client = httpx.Client(transport=mounted, follow_redirects=True)
    try:
        client = cohere.ClientV2(
            api_key=DUMMY_KEY, base_url=base_url, httpx_client=http_client, max_retries=0
        )
        response = client.chat(
            model=COHERE_MODEL,
            messages=cohere_messages(results),  # type: ignore[arg-type]
            request_options={"additional_headers": dict(extra_headers or {}), "max_retries": 0},
        )
        return _cohere_text(response)
    finally:
        if own:
            http_client.close()
            _close_inner(inner, mounted)


async def asend_cohere(
    base_url: str,
    results: Sequence[str],
    *,
    http_client: Any = None,
    wrap_transport: WrapTransport | None = None,
    extra_headers: Headers = None,
) -> str:
    """cohere ``AsyncClientV2(..., httpx_client=httpx.AsyncClient(...)).chat``."""
    import cohere
    import httpx

    inner = mounted = None
    own = http_client is None
    if own:
        inner = httpx.AsyncHTTPTransport()
        mounted = _wrap(wrap_transport, inner)
        http_client = httpx.AsyncClient(transport=mounted, follow_redirects=True)
    try:
        client = cohere.AsyncClientV2(
            api_key=DUMMY_KEY, base_url=base_url, httpx_client=http_client, max_retries=0
        )
        response = await client.chat(
            model=COHERE_MODEL,
            messages=cohere_messages(results),  # type: ignore[arg-type]
            request_options={"additional_headers": dict(extra_headers or {}), "max_retries": 0},
        )
        return _cohere_text(response)
    finally:
        if own:
            await http_client.aclose()
            await _aclose_inner(inner, mounted)


# --- the table -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Driver:
    """One way of sending a tool-result batch: which SDK, which wire format, which path."""

    name: str
    api: str
    """The fake provider's API name for the wire format (``budgetware.testing.ApiName``)."""
    path: str
    """The exact path the request is expected at (no query string)."""
    send: Callable[..., str] | None
    asend: Callable[..., Awaitable[str]] | None
    http_library: Literal["httpx", "httpx2", "aiohttp"]
    """The library whose ``send`` carries the sync call (and the async one, unless it is
    aiohttp directly)."""


_GEMINI_PATH = f"/v1/models/{GEMINI_MODEL}:generateContent"
_LITELLM_GEMINI_PATH = f"/v1beta/models/{GEMINI_MODEL}:generateContent"


def _litellm_send(provider: LitellmProvider) -> Callable[..., str]:
    def send(base_url: str, results: Sequence[str], **kwargs: Any) -> str:
        return send_litellm(base_url, results, provider=provider, **kwargs)

    return send


def _litellm_asend(provider: LitellmProvider) -> Callable[..., Awaitable[str]]:
    async def asend(base_url: str, results: Sequence[str], **kwargs: Any) -> str:
        return await asend_litellm(base_url, results, provider=provider, **kwargs)

    return asend


async def _asend_anthropic_aiohttp(base_url: str, results: Sequence[str], **kw: Any) -> str:
    return await asend_anthropic(base_url, results, aiohttp=True, **kw)


async def _asend_genai_aiohttp(base_url: str, results: Sequence[str], **kw: Any) -> str:
    return await asend_google_genai(base_url, results, backend="aiohttp", **kw)


DRIVERS: tuple[Driver, ...] = (
    Driver(
        "openai_chat",
        "openai_chat",
        "/v1/chat/completions",
        send_openai_chat,
        asend_openai_chat,
        "httpx2",
    ),
    Driver(
        "openai_responses",
        "openai_responses",
        "/v1/responses",
        send_openai_responses,
        asend_openai_responses,
        "httpx2",
    ),
    Driver(
        "openai_aiohttp",
        "openai_chat",
        "/v1/chat/completions",
        None,
        asend_openai_chat_aiohttp,
        "httpx2",
    ),
    Driver("anthropic", "anthropic", "/v1/messages", send_anthropic, asend_anthropic, "httpx2"),
    Driver(
        "anthropic_aiohttp",
        "anthropic",
        "/v1/messages",
        None,
        _asend_anthropic_aiohttp,
        "httpx2",
    ),
    Driver(
        "google_genai", "gemini", _GEMINI_PATH, send_google_genai, asend_google_genai, "httpx2"
    ),
    Driver("google_genai_aiohttp", "gemini", _GEMINI_PATH, None, _asend_genai_aiohttp, "aiohttp"),
    Driver(
        "mistralai", "openai_chat", "/v1/chat/completions", send_mistral, asend_mistral, "httpx2"
    ),
    Driver(
        "litellm_openai",
        "openai_chat",
        "/v1/chat/completions",
        _litellm_send("openai"),
        _litellm_asend("openai"),
        "httpx",
    ),
    Driver(
        "litellm_anthropic",
        "anthropic",
        "/v1/messages",
        _litellm_send("anthropic"),
        _litellm_asend("anthropic"),
        "httpx",
    ),
    Driver(
        "litellm_gemini",
        "gemini",
        _LITELLM_GEMINI_PATH,
        _litellm_send("gemini"),
        _litellm_asend("gemini"),
        "httpx",
    ),
    Driver("ollama", "ollama", "/api/chat", send_ollama, asend_ollama, "httpx"),
    Driver("cohere", "cohere", "/v2/chat", send_cohere, asend_cohere, "httpx"),
)
DRIVERS_BY_NAME: dict[str, Driver] = {d.name: d for d in DRIVERS}

# The module each driver's SDK imports as, by driver-name prefix. A driver whose SDK is not
# installed is skipped, with the reason in the summary: scripts/ci-matrix runs the SDK
# tests on Python 3.10, where google-genai 3 (it needs 3.11) cannot be installed.
_SDK_MODULES = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google_genai": "google.genai",
    "mistralai": "mistralai",
    "litellm": "litellm",
    "ollama": "ollama",
    "cohere": "cohere",
}


def missing_sdk(driver: Driver) -> str | None:
    """The module of ``driver``'s SDK when it is not installed, else None."""
    module = next(m for prefix, m in _SDK_MODULES.items() if driver.name.startswith(prefix))
    try:
        found = importlib.util.find_spec(module)
    except ModuleNotFoundError:  # its parent package is missing (google)
        found = None
    return module if found is None else None


def needs_sdk(driver: Driver) -> pytest.MarkDecorator:
    """Skip the test when ``driver``'s SDK is not installed."""
    module = missing_sdk(driver)
    return pytest.mark.skipif(module is not None, reason=f"{module} is not installed")


def params(drivers: Sequence[Driver]) -> list[Any]:
    """``drivers`` for ``pytest.mark.parametrize``, by name, each skipped without its SDK."""
    return [pytest.param(d, id=d.name, marks=needs_sdk(d)) for d in drivers]
