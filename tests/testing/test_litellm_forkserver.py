"""Warm ``LiteLLMProxy`` starts (``warm=True``): forked from a fork server that imported the
proxy once, they fail like the ``litellm`` command and leave nothing behind.

That a warm proxy sends the provider the same bytes as the ``litellm`` command is checked
by ``scripts/check-proxy-extra`` (run by ``.ci/run``), which starts the real command
anyway: here every proxy starts warm.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from budgetware.testing import FakeProvider
from testing import litellm_proxy as litellm_proxy_module
from testing.litellm_forkserver import ProxyForkServer, shared_fork_server
from testing.litellm_proxy import LiteLLMProxy, LiteLLMProxyError

from . import drivers

# Whether the proxy is installed, without importing it (nor litellm, which a submodule's
# find_spec would import): the fork server imports it in its own process, and importing it
# in every test process while collecting cost about 10 s of CPU each.
_LITELLM = importlib.util.find_spec("litellm")
if _LITELLM is None or not any(
    (Path(folder) / "proxy" / "proxy_server.py").is_file()
    for folder in _LITELLM.submodule_search_locations or ()
):
    pytest.skip("budgetware[proxy] is in the dev extra", allow_module_level=True)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.name != "posix", reason="warm starts fork"),
    # The proxy tests' worker: its fork server has imported the proxy already.
    pytest.mark.xdist_group("litellm_proxy"),
]

HANDLER = "budgetware.integrations.litellm.proxy.handler"
# The fork server's life-cycle tests run this instead of the proxy: a fork server of their
# own that imports LiteLLM would cost about 10 s of CPU each.
STAND_IN = Path(__file__).with_name("forkserver_stand_in.py")
BIG = "x" * 6000


def _config(upstream: FakeProvider, *, callback: bool = True) -> dict[str, Any]:
    params = {
        "model": "openai/gpt-4o-mini",
        "api_base": upstream.url + "/v1",
        "api_key": "sk-fake-upstream",
        "max_retries": 0,
    }
    return {
        "model_list": [{"model_name": "gpt-fake", "litellm_params": params}],
        "litellm_settings": {"callbacks": HANDLER} if callback else {},
        "router_settings": {"num_retries": 0},
    }


def _env(artifact_dir: Path, **settings: str) -> dict[str, str | None]:
    env: dict[str, str | None] = {
        name: None for name in os.environ if name.startswith("BUDGETWARE_")
    }
    env["BUDGETWARE_ARTIFACT_DIR"] = str(artifact_dir)
    env["BUDGETWARE_RAISE_ERRORS"] = "1"
    for name, value in settings.items():
        env["BUDGETWARE_" + name.upper()] = value
    return env


def _chat(proxy: LiteLLMProxy, tool_output: str) -> dict[str, Any]:
    import httpx

    messages = drivers.openai_chat_messages([tool_output])
    with httpx.Client(trust_env=False, timeout=60) as http:
        response = http.post(
            proxy.url + "/v1/chat/completions",
            headers={"Authorization": f"Bearer {proxy.master_key}"},
            json={"model": "gpt-fake", "messages": messages},
        )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _upstream_body(upstream: FakeProvider) -> dict[str, Any]:
    requests = [r for r in upstream.requests if r.api is not None]
    assert len(requests) == 1, [r.path for r in requests]
    body: dict[str, Any] = requests[0].json()
    return body


def _group_members(pgid: int) -> list[int]:
    """Processes whose process group is ``pgid`` (Linux /proc; empty elsewhere)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[2]) == pgid:  # state, ppid, pgrp
            members.append(int(entry.name))
    return members


# A fork server that stops gives its proxies a SIGTERM and up to 10 s before a SIGKILL
# (litellm_forkserver._STOP_GRACE), then exits: on a loaded machine a proxy's own shutdown
# uses much of that grace, so "gone" is judged over the grace and as long again.
def _gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if Path(f"/proc/{pid}/stat").exists():
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            if state == "Z":  # a zombie of some other reaper: it no longer runs
                return True
        time.sleep(0.1)
    return False


@pytest.fixture
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def test_a_bad_command_line_fails_a_warm_start_like_the_litellm_command(
    upstream: FakeProvider, tmp_path: Path
) -> None:
    # click's usage error: exit code 2 and its message in the log, as from the command.
    proxy = LiteLLMProxy(
        _config(upstream, callback=False),
        workdir=tmp_path / "args",
        warm=True,
        extra_args=("--no-such-option",),
    )
    with pytest.raises(LiteLLMProxyError) as failed:
        proxy.start()
    assert "exited with code 2 " in str(failed.value)
    assert "No such option" in str(failed.value)


def test_the_fork_server_and_its_proxies_end_with_the_process_that_started_them(
    upstream: FakeProvider, tmp_path: Path
) -> None:
    # A process that starts a warm proxy and is then killed (no clean-up at all).
    script = textwrap.dedent(
        f"""
        import json, os, signal, sys
        sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
        from testing.litellm_proxy import LiteLLMProxy
        from testing.litellm_forkserver import ProxyForkServer

        server = ProxyForkServer(stand_in={str(STAND_IN)!r})
        config = {json.dumps(_config(upstream, callback=False))!r}
        proxy = LiteLLMProxy(json.loads(config), workdir={str(tmp_path)!r}, fork_server=server)
        proxy.start()
        print(json.dumps({{"server": server.pid, "proxy": proxy.pid}}), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    # Its fork server's log and directory, never removed (no clean-up), in tmp_path.
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=env,
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    pids = json.loads(run.stdout)
    assert _gone(pids["server"]), "the fork server outlived its parent"
    assert _gone(pids["proxy"]), "a warm proxy outlived the fork server"
    assert _group_members(pids["proxy"]) == []


def test_proxies_end_with_a_killed_fork_server(upstream: FakeProvider, tmp_path: Path) -> None:
    # Its own, and no LiteLLM (its stand-in, whose "import" takes half a second).
    environ = {**os.environ, "STAND_IN_IMPORT_SECONDS": "0.5"}
    server = ProxyForkServer(environ, stand_in=STAND_IN)
    try:
        # A start that gives up before the fork server has imported the proxy: the proxy it
        # forks later is stopped at once, never left running.
        gave_up = LiteLLMProxy(
            _config(upstream, callback=False),
            workdir=tmp_path / "impatient",
            fork_server=server,
            startup_timeout=0.01,
        )
        with pytest.raises(LiteLLMProxyError, match="did not fork within"):
            gave_up.start()
        proxy = LiteLLMProxy(
            _config(upstream, callback=False), workdir=tmp_path, fork_server=server
        )
        proxy.start()
        pid = proxy.pid
        (abandoned,) = set(server.children()) - {pid}
        deadline = time.monotonic() + 15
        while server.children()[abandoned] is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.children()[abandoned] == -signal.SIGKILL
        assert _gone(abandoned)
        assert server.pid is not None
        os.kill(server.pid, signal.SIGKILL)  # no clean-up at all
        assert _gone(pid), "a warm proxy outlived its killed fork server"
        assert not proxy.running
        assert server.ended
        proxy.stop()
        with pytest.raises(LiteLLMProxyError, match="fork server exited"):
            LiteLLMProxy(_config(upstream), workdir=tmp_path / "b", fork_server=server).start()
    finally:
        server.close()


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


def test_warm_proxies_share_one_fork_server_each_with_its_own_environment_and_port(
    upstream: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = shared_fork_server()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        # The first proxy is given a port another process holds: it tries another.
        ports = [taken.getsockname()[1]]
        real_free_port = litellm_proxy_module._free_port
        monkeypatch.setattr(
            litellm_proxy_module,
            "_free_port",
            lambda: ports.pop() if ports else real_free_port(),
        )
        proxies = [
            LiteLLMProxy(
                _config(upstream),
                env=_env(tmp_path / name / "artifacts", batch_budget=budget),
                workdir=tmp_path / name,
                warm=True,
            )
            for name, budget in (("small", "2000"), ("large", "500000"))
        ]
        try:
            for proxy in proxies:  # at once
                proxy.launch()
            for proxy in proxies:
                proxy.wait_ready()
            small, large = proxies
            assert small.port != taken.getsockname()[1]
            assert "address already in use" in small.log_since(0).lower()
            # Both forked from the one fork server, each a process of its own.
            assert small.pid != large.pid
            assert _parent(small.pid) == _parent(large.pid) == server.pid
            # It did once what each proxy would do before its first answer: the server's
            # modules imported, every route's state built, the imported objects frozen.
            warm_up = re.search(
                r"warm-up: (\d+) of (\d+) modules imported, (\d+) routes matched, "
                r"(\d+) objects frozen",
                server.log_tail(),
            )
            assert warm_up is not None, server.log_tail()
            imported, modules, routes, frozen = map(int, warm_up.groups())
            assert imported == modules
            assert routes > 50
            assert frozen > 100_000
            sent = {}
            for proxy, name in zip(proxies, ("small", "large"), strict=True):
                upstream.clear()
                _chat(proxy, BIG)
                sent[name] = json.dumps(_upstream_body(upstream))
            assert BIG not in sent["small"]  # bounded by its own budget
            assert BIG in sent["large"]  # under its budget: unchanged
            # Its own session, process group and directory; stop() leaves nothing of it.
            pid = small.pid
            assert os.getpgid(pid) == pid
            assert os.getsid(pid) == pid
            assert Path(os.readlink(f"/proc/{pid}/cwd")) == (tmp_path / "small").resolve()
            small.stop()
            assert not small.running
            assert _gone(pid)
            assert _group_members(pid) == []
            with (
                pytest.raises(OSError),
                socket.create_connection(("127.0.0.1", proxy_port(small))),
            ):
                pass
            assert large.running  # the other one goes on
        finally:
            for proxy in proxies:
                proxy.stop()


def proxy_port(proxy: LiteLLMProxy) -> int:
    # stop() forgets the port; the log names it (the last one it tried).
    for line in reversed(proxy.log_since(0).splitlines()):
        if "Uvicorn running on" in line:
            return int(line.rsplit(":", 1)[1].split()[0])
    raise AssertionError(proxy.log_since(0))
