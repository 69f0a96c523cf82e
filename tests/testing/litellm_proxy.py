"""A real LiteLLM Proxy server (``litellm --config``) in a subprocess on 127.0.0.1, for
budgetware's own tests, benchmarks and ``scripts/check-proxy-extra``.

Standard library only: it starts the ``litellm`` command of the running interpreter's
environment (``budgetware[proxy]`` installs it), waits until the proxy answers, and stops
it. Several can run side by side (replicas), each on its own free port with its own log
file. ``warm=True`` forks the proxy from a process that imported it once
(``litellm_forkserver``) instead.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from .litellm_forkserver import (
    ForkServerError,
    ProxyForkServer,
    shared_fork_server,
)

__all__ = ["LiteLLMProxy", "LiteLLMProxyError"]

# The proxy refuses to start without one (litellm 1.110); clients send it as their api key.
DEFAULT_MASTER_KEY = "sk-budgetware-proxy-test"
_READY_PATH = "/health/liveliness"
# Loopback only: never through an HTTP proxy the environment names.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class LiteLLMProxyError(RuntimeError):
    """The proxy did not start (the message ends with the tail of its log)."""


def _litellm_command() -> list[str]:
    # The console script of this interpreter's environment first: PATH may hold another.
    here = Path(sys.executable).parent / ("litellm.exe" if os.name == "nt" else "litellm")
    if here.exists():
        return [str(here)]
    found = shutil.which("litellm")
    if found is None:
        raise LiteLLMProxyError(
            'no `litellm` command: install the proxy with pip install "budgetware[proxy]"'
        )
    return [found]


class _ProxyProcess(Protocol):
    """What ``LiteLLMProxy`` uses of its process: a ``Popen`` or a ``WarmProcess``."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def signal_group(self, sig: int) -> None: ...


class _ColdProcess:
    """The ``litellm`` command in a subprocess of its own session."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    def poll(self) -> int | None:
        return self._process.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self._process.wait(timeout)

    def signal_group(self, sig: int) -> None:
        try:
            if os.name == "nt":  # pragma: no cover - platform specific
                self._process.send_signal(sig)
            else:
                os.killpg(self._process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiteLLMProxy:
    """One LiteLLM Proxy process serving ``config`` on a free port of 127.0.0.1.

    ``config`` is the proxy config as a mapping (written to ``config.yaml`` in ``workdir``
    as JSON, which YAML reads as is) or the path of a config file. Without a
    ``general_settings.master_key`` the mapping gets ``master_key``. ``env`` is added to
    this process's environment for the proxy (a value of None removes the variable);
    ``LITELLM_LOCAL_MODEL_COST_MAP`` is always set so the proxy never fetches its price map.
    Use it as a context manager or call ``start()`` and ``stop()``; the proxy's stdout and
    stderr go to ``log_path``.

    ``warm=True`` starts the proxy without importing litellm again: a fork server (one per
    process, started by the first warm proxy, or ``fork_server``) imported the proxy once
    and forks it, and the fork runs the ``litellm`` command's own entry point with the same
    arguments, directory, environment and log. It saves about 10 s of CPU per start (the
    import), for test suites; POSIX only. What litellm reads at import time keeps the fork
    server's value (this process's environment when the server started), so ``env`` may
    only set what the proxy reads later: config loading and requests (budgetware's settings,
    provider keys and API bases, AWS credentials all are). The default, ``warm=False``,
    runs the real ``litellm`` command, as users do.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | str | os.PathLike[str],
        *,
        env: Mapping[str, str | None] | None = None,
        workdir: str | os.PathLike[str] | None = None,
        master_key: str = DEFAULT_MASTER_KEY,
        startup_timeout: float = 120.0,
        extra_args: tuple[str, ...] = (),
        warm: bool = False,
        fork_server: ProxyForkServer | None = None,
    ) -> None:
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="budgetware-litellm-proxy-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.master_key = master_key
        if isinstance(config, Mapping):
            data = dict(config)
            general = dict(data.get("general_settings") or {})
            general.setdefault("master_key", master_key)
            self.master_key = str(general["master_key"])
            data["general_settings"] = general
            self.config_path = self.workdir / "config.yaml"
            self.config_path.write_text(json.dumps(data, indent=2), encoding="utf-8")
        else:
            self.config_path = Path(config)
        self.env = dict(env or {})
        self.startup_timeout = startup_timeout
        self.extra_args = extra_args
        self.log_path = self.workdir / "proxy.log"
        self.warm = warm or fork_server is not None
        self._fork_server = fork_server
        self._process: _ProxyProcess | None = None
        self._port: int | None = None
        self._log_start = 0
        self._terminated = False

    # lifecycle

    def start(self) -> LiteLLMProxy:
        """Start the proxy and return once it answers (raises ``LiteLLMProxyError``)."""
        self.launch()
        self.wait_ready()
        return self

    def launch(self) -> None:
        """Start the proxy process without waiting for it (then call ``wait_ready()``).

        Launching several proxies before waiting for any lets their start-up overlap.
        """
        if self._process is not None:
            return
        self._port = port = _free_port()
        arguments = [
            "--config",
            str(self.config_path),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *self.extra_args,
        ]
        self._log_start = self.log_mark()
        if self.warm:
            server = self._fork_server or shared_fork_server()
            try:
                self._process = server.spawn(
                    arguments,
                    cwd=self.workdir,
                    env=self._environment(),
                    log_path=self.log_path,
                    timeout=self.startup_timeout,
                )
            except ForkServerError as error:
                self._port = None
                raise LiteLLMProxyError(str(error)) from error
            return
        command = [*_litellm_command(), *arguments]
        with open(self.log_path, "ab") as log:
            process = subprocess.Popen(
                command,
                cwd=self.workdir,
                env=self._environment(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # stop() ends the proxy and anything it started
            )
        self._process = _ColdProcess(process)

    def wait_ready(self) -> None:
        """Wait until the launched proxy answers; stop it and raise if it does not."""
        tries = 3  # another process may take the free port before the proxy binds it
        deadline = time.monotonic() + self.startup_timeout
        while True:
            process = self._process
            if process is None:
                raise LiteLLMProxyError("the LiteLLM Proxy was not launched: call launch()")
            if process.poll() is not None:
                output = self.log_since(self._log_start)
                self._process = self._port = None
                tries -= 1
                if tries > 0 and "address already in use" in output.lower():
                    self.launch()
                    continue
                raise LiteLLMProxyError(
                    f"the LiteLLM Proxy exited with code {process.returncode} before it "
                    f"answered:\n{_tail(output)}"
                )
            if self._answers():
                return
            if time.monotonic() > deadline:
                self.stop()
                raise LiteLLMProxyError(
                    f"the LiteLLM Proxy did not answer within {self.startup_timeout:.0f} s:\n"
                    f"{_tail(self.log_since(self._log_start))}"
                )
            time.sleep(0.1)

    def _environment(self) -> dict[str, str]:
        environ = dict(os.environ)
        environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        # Log lines reach the file as they are written, so a test can read them at once.
        environ["PYTHONUNBUFFERED"] = "1"
        for name, value in self.env.items():
            if value is None:
                environ.pop(name, None)
            else:
                environ[name] = value
        return environ

    def _answers(self) -> bool:
        try:
            with _DIRECT.open(self.url + _READY_PATH, timeout=2) as response:
                return int(response.status) == 200
        except (urllib.error.URLError, OSError):
            return False

    def terminate(self) -> None:
        """Send the proxy its SIGTERM and return: ``stop()`` waits for it. Proxies sent
        theirs together end in the time of one (each takes a few tenths of a second)."""
        process = self._process
        if process is not None and not self._terminated and process.poll() is None:
            process.signal_group(signal.SIGTERM)
            self._terminated = True

    def stop(self) -> None:
        """Stop the proxy (SIGTERM, then SIGKILL after 10 s) and everything it started."""
        process = self._process
        terminated, self._terminated = self._terminated, False
        self._process = self._port = None
        if process is None:
            return
        if process.poll() is None:
            if not terminated:
                process.signal_group(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.signal_group(getattr(signal, "SIGKILL", signal.SIGTERM))
                process.wait(timeout=10)
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> LiteLLMProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # where and what

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int:
        if self._process is None:
            raise LiteLLMProxyError("the LiteLLM Proxy is not running: call start()")
        return self._process.pid

    @property
    def port(self) -> int:
        if self._port is None:
            raise LiteLLMProxyError("the LiteLLM Proxy is not running: call start()")
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, without a trailing slash."""
        return f"http://127.0.0.1:{self.port}"

    def log_mark(self) -> int:
        """A position in the log: ``log_since(mark)`` returns what was written after it."""
        try:
            return self.log_path.stat().st_size
        except FileNotFoundError:
            return 0

    def log_since(self, mark: int = 0) -> str:
        """The proxy's output written after ``mark`` (a ``log_mark()``)."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(mark)
                return log.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])
