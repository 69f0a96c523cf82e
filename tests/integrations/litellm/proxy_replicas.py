"""Two LiteLLM Proxy replicas on one artifact store, started once a session for every module
that needs them (``local_replicas`` and ``s3_replicas`` in this folder's conftest).

Each pair runs budgetware's callback with the same settings on one store (a local
directory, or an S3 bucket on the local moto server), and its second replica serves
budgetware's ``read_tool_output`` through its MCP gateway (``mcp_servers``): the local
pair's runs ``budgetware mcp-server`` as its own child over stdio, per call; the S3 pair's
reaches one running beside it over streamable HTTP, which requires a bearer token.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litellm_proxy_helpers import BUDGET
from local_servers import mcp_http_server
from proxy_server_helpers import proxy_config, proxy_env
from s3_server import new_bucket
from testing.litellm_proxy import LiteLLMProxy

MCP_SERVER = "budgetware"


@dataclass
class Replicas:
    """Two proxies on one store (``BUDGETWARE_ARTIFACT_STORE=store``)."""

    proxies: list[LiteLLMProxy]
    store: str
    artifacts: Callable[[], dict[str, bytes]]
    """Every artifact in the store now: its name (``<sha256>.txt``) and its bytes."""

    def ref(self, name: str) -> str:
        """The reference a preview names for the artifact ``name``."""
        return f"{self.store}/{name}"


def mcp_gateway(sidecar_url: str | None) -> dict[str, Any]:
    """The proxy config's ``mcp_servers``: budgetware's server, for every key."""
    if sidecar_url is not None:
        server: dict[str, Any] = {
            "url": sidecar_url,
            "transport": "http",
            # The server answers nothing without its token (BUDGETWARE_MCP_SERVER_TOKEN).
            "auth_type": "bearer_token",
            "authentication_token": "os.environ/BUDGETWARE_MCP_SERVER_TOKEN",
        }
    else:
        server = {
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-m", "budgetware", "mcp-server"],
            # A stdio server gets only these (and PATH, HOME, ...): the proxy's own store.
            "env": {"BUDGETWARE_ARTIFACT_STORE": "os.environ/BUDGETWARE_ARTIFACT_STORE"},
        }
    server["allow_all_keys"] = True
    return {MCP_SERVER: server}


@contextmanager
def local_replicas(
    start_proxies: Callable[..., list[LiteLLMProxy]], upstream_url: str, directory: Path
) -> Iterator[Replicas]:
    """Two replicas whose store is ``directory``."""
    env = proxy_env(None, batch_budget=str(BUDGET), raise_errors="1")
    env["LITELLM_ENABLE_MCP_STDIO"] = "true"
    env["BUDGETWARE_ARTIFACT_STORE"] = store = str(directory)

    def artifacts() -> dict[str, bytes]:
        return {path.name: path.read_bytes() for path in directory.glob("*.txt")}

    yield from _started(start_proxies, upstream_url, "local", env, None, store, artifacts)


@contextmanager
def s3_replicas(
    start_proxies: Callable[..., list[LiteLLMProxy]], upstream_url: str, s3_endpoint: str
) -> Iterator[Replicas]:
    """Two replicas whose store is a new bucket of the moto server at ``s3_endpoint``."""
    bucket = new_bucket(s3_endpoint)
    store = bucket.url("replicas")
    env = proxy_env(None, batch_budget=str(BUDGET), raise_errors="1")
    env.update(bucket.env)
    env.update(AWS_ENDPOINT_URL=None, AWS_PROFILE=None)
    sidecar_env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("BUDGETWARE_", "AWS_"))
    }
    token = secrets.token_urlsafe(16)
    sidecar_env.update(
        bucket.env, BUDGETWARE_ARTIFACT_STORE=store, BUDGETWARE_MCP_SERVER_TOKEN=token
    )
    env["BUDGETWARE_MCP_SERVER_TOKEN"] = token
    env["BUDGETWARE_ARTIFACT_STORE"] = store

    def artifacts() -> dict[str, bytes]:
        keys = [key for key in bucket.objects("replicas/") if key.endswith(".txt")]
        return {key.rpartition("/")[2]: bucket.get(key) for key in keys}

    with mcp_http_server(sidecar_env) as sidecar_url:
        yield from _started(start_proxies, upstream_url, "s3", env, sidecar_url, store, artifacts)


def _started(
    start_proxies: Callable[..., list[LiteLLMProxy]],
    upstream_url: str,
    backend: str,
    env: dict[str, str | None],
    sidecar_url: str | None,
    store: str,
    artifacts: Callable[[], dict[str, bytes]],
) -> Iterator[Replicas]:
    # The MCP gateway is the second replica's (the tests read through it what the first one
    # cut): LiteLLM lists a gateway server's tools as the proxy starts, which for the stdio
    # server is a process of its own (about 1.1 s of CPU), at each start of the first
    # replica too (the restart test restarts it). Budgetware's settings are the same.
    config = proxy_config(upstream_url)
    gateway = {**config, "mcp_servers": mcp_gateway(sidecar_url)}
    proxies = start_proxies(
        (f"replica-a-{backend}", config, env), (f"replica-b-{backend}", gateway, env)
    )
    # start_proxies stops them at the end of the session, together with every other proxy.
    yield Replicas(proxies, store, artifacts)
