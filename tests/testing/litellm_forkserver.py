"""Warm starts for ``LiteLLMProxy``: a process that imports the proxy once and forks it.

Importing ``litellm.proxy.proxy_server`` takes about 10 s of CPU, and the ``litellm``
command does it on every start. ``ProxyForkServer`` starts one Python child (this file,
run as a script) that imports the proxy once, does once what each proxy would do before
its first answer (``_warm_up``: about 1 s of CPU a proxy), checks that forking it is safe
(one thread, and litellm's Rust extension reserved for forking, so no native runtime
thread is lost), then serves requests over its stdin and stdout (JSON lines). For each
proxy it forks a child that starts a new session (``os.setsid``), changes to the proxy's directory,
replaces ``os.environ`` with the proxy's environment, sends its stdout and stderr to the
proxy's log file and runs the same CLI entry point as the ``litellm`` command
(``litellm.proxy.proxy_cli.run_server``), then exits with its exit code (an exception
writes its traceback to the log and exits 1).

What litellm reads at import time keeps the fork server's value: the fork server's
environment is this process's environment when it starts (plus
``LITELLM_LOCAL_MODEL_COST_MAP=True``, ``PYTHONUNBUFFERED=1`` and ``OPENBLAS_NUM_THREADS=1``,
so that numpy starts no thread pool), and each proxy only
differs from it in what it reads after the fork (config loading, requests): budgetware's
settings, provider keys and API bases, AWS credentials.

The fork server reaps its children and reports their exit codes; signals to a proxy go
through it, so a process group is only signalled while its leader is not yet reaped (its
pid cannot have been reused). It stops when this process closes its stdin (exits, even by
SIGKILL) or when its parent changes, and then stops every proxy it started (SIGTERM to the
process group, SIGKILL after 10 s). Standard library only on this side; POSIX only.

``ProxyForkServer(stand_in=path)`` runs a Python file in place of the proxy, for tests of
the fork server itself (starts, kills, clean-up) that need no LiteLLM: the fork server
runs the file where it would import the proxy, and each fork calls the file's
``serve(args)`` (the same arguments as ``litellm``; its return value is the exit code)
where it would run the proxy's CLI.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["ForkServerError", "ProxyForkServer", "WarmProcess", "shared_fork_server"]

_STOP_GRACE = 10.0


class ForkServerError(RuntimeError):
    """The fork server could not start or fork a proxy (the message says why)."""


# --- this process's side ---------------------------------------------------------------------


class WarmProcess:
    """A proxy process forked by a ``ProxyForkServer``: the part of ``Popen`` the proxy uses.

    ``poll()`` and ``wait()`` return the exit code the fork server reported (negative: the
    signal that ended it), ``signal_group()`` signals the process's group through the fork
    server.
    """

    def __init__(self, server: ProxyForkServer, pid: int) -> None:
        self._server = server
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self._server.pump(0)
            self.returncode = self._server.exit_code(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise subprocess.TimeoutExpired(["litellm (warm)"], timeout or 0.0)
            self._server.pump(0.5 if remaining is None else min(remaining, 0.5))
        assert self.returncode is not None
        return self.returncode

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the process's group (nothing once it has exited)."""
        if self.poll() is None:
            self._server.signal(self.pid, sig)


class ProxyForkServer:
    """One fork server process: ``spawn()`` forks a LiteLLM Proxy from it.

    ``environ`` is the fork server's environment (default: this process's, when the server
    starts); ``stand_in`` a Python file run instead of the proxy (module docstring);
    ``start()`` is called by the first ``spawn()``. Thread-safe; ``close()`` stops it and
    every proxy it started.
    """

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        *,
        stand_in: str | os.PathLike[str] | None = None,
    ) -> None:
        self._environ = dict(os.environ if environ is None else environ)
        self._stand_in = None if stand_in is None else os.path.abspath(stand_in)
        if self._stand_in is not None and not os.path.isfile(self._stand_in):
            raise ForkServerError(f"the fork server's stand-in is not a file: {self._stand_in}")
        self._environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        self._environ["PYTHONUNBUFFERED"] = "1"
        # numpy's OpenBLAS starts a thread pool at import; a fork keeps only one thread.
        # The proxies never run BLAS code (and get their own environment anyway).
        self._environ["OPENBLAS_NUM_THREADS"] = "1"
        self._lock = threading.RLock()
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None
        self._workdir: str | None = None
        self._buffer = b""
        self._next_id = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self._exit_codes: dict[int, int] = {}
        self._pids: set[int] = set()
        self._abandoned: set[int] = set()
        self._ended: str | None = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def ended(self) -> bool:
        """The fork server process has exited (its proxies with it)."""
        with self._lock:
            self.pump(0)
            return self._ended is not None

    def start(self) -> None:
        """Start the fork server process (it imports the proxy while ``spawn`` waits)."""
        with self._lock:
            if self._process is not None:
                return
            if os.name != "posix":  # pragma: no cover - platform specific
                raise ForkServerError("warm LiteLLM Proxy starts need fork() (POSIX only)")
            descriptor, name = tempfile.mkstemp(prefix="budgetware-litellm-forkserver-")
            self._log_path = Path(name)
            with os.fdopen(descriptor, "wb") as log:
                self._workdir = tempfile.mkdtemp(prefix="budgetware-litellm-forkserver-")
                self._process = subprocess.Popen(
                    [
                        sys.executable,
                        __file__,
                        str(Path(sys.executable).parent),
                        *([] if self._stand_in is None else [self._stand_in]),
                    ],
                    cwd=self._workdir,  # empty: the proxies get their own
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    env=self._environ,
                    close_fds=True,
                )

    def spawn(
        self,
        args: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        env: Mapping[str, str],
        log_path: str | os.PathLike[str],
        timeout: float,
    ) -> WarmProcess:
        """Fork a proxy running ``litellm *args`` in ``cwd`` with exactly ``env``, its
        output appended to ``log_path``; wait at most ``timeout`` s for the fork server."""
        with self._lock:
            self.start()
            if self._ended is not None:
                raise ForkServerError(f"{self._ended}:\n{self.log_tail()}")
            self._next_id += 1
            request_id = self._next_id
            self._send(
                {
                    "op": "spawn",
                    "id": request_id,
                    "args": list(args),
                    "cwd": str(cwd),
                    "env": dict(env),
                    "log": str(log_path),
                }
            )
            deadline = time.monotonic() + timeout
            while request_id not in self._replies:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._abandoned.add(request_id)  # stopped as soon as it is forked
                    raise ForkServerError(
                        f"the LiteLLM fork server did not fork within {timeout:.0f} s:\n"
                        f"{self.log_tail()}"
                    )
                self.pump(min(remaining, 0.5))
                if self._has_ended() and request_id not in self._replies:
                    raise ForkServerError(f"{self._ended}:\n{self.log_tail()}")
            reply = self._replies.pop(request_id)
            if "error" in reply:
                raise ForkServerError(f"the LiteLLM fork server could not fork: {reply['error']}")
            pid = int(reply["pid"])
            self._pids.add(pid)
            return WarmProcess(self, pid)

    def children(self) -> dict[int, int | None]:
        """Every proxy this fork server forked: its pid and exit code (None: running)."""
        with self._lock:
            self.pump(0)
            return {pid: self._exit_codes.get(pid) for pid in sorted(self._pids)}

    def exit_code(self, pid: int) -> int | None:
        with self._lock:
            return self._exit_codes.get(pid)

    def signal(self, pid: int, sig: int) -> None:
        with self._lock:
            if self._ended is None:
                self._send({"op": "signal", "pid": pid, "sig": int(sig)})

    def pump(self, timeout: float) -> None:
        """Read what the fork server reported, waiting at most ``timeout`` s for it."""
        with self._lock:
            process = self._process
            if process is None or self._ended is not None:
                return
            assert process.stdout is not None
            descriptor = process.stdout.fileno()
            wait = timeout
            while True:
                readable, _, _ = select.select([descriptor], [], [], wait)
                if not readable:
                    return
                data = os.read(descriptor, 65536)
                if not data:
                    self._end("the LiteLLM fork server exited")
                    return
                self._buffer += data
                *lines, self._buffer = self._buffer.split(b"\n")
                for line in lines:
                    if not self._receive(json.loads(line)):
                        return  # the fork server is ending
                wait = 0

    def _has_ended(self) -> bool:
        return self._ended is not None

    def _receive(self, message: dict[str, Any]) -> bool:
        op = message.get("op")
        if op == "exited":
            self._exit_codes[int(message["pid"])] = int(message["code"])
        elif op in {"spawned", "failed"}:
            request_id = int(message["id"])
            if request_id not in self._abandoned:
                self._replies[request_id] = message
            elif "pid" in message:  # its spawn() gave up waiting: nobody would stop it
                self._pids.add(int(message["pid"]))
                self._send({"op": "signal", "pid": message["pid"], "sig": int(signal.SIGKILL)})
        elif op == "unsafe":
            self._end(f"the LiteLLM fork server cannot fork safely: {message['error']}")
            return False
        return True

    def _end(self, reason: str) -> None:
        # The fork server is gone: it stopped every proxy it started on its way out.
        if self._ended is not None:
            return
        self._ended = reason
        process = self._process
        if process is not None:
            try:
                code = process.wait(timeout=_STOP_GRACE * 2)
            except subprocess.TimeoutExpired:  # pragma: no cover - defensive
                process.kill()
                code = process.wait()
            self._ended = f"{reason} (code {code})"
        for pid in self._pids - self._exit_codes.keys():
            self._exit_codes[pid] = -signal.SIGKILL

    def _send(self, message: dict[str, Any]) -> None:
        process = self._process
        assert process is not None
        assert process.stdin is not None
        try:
            process.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
            process.stdin.flush()
        except (OSError, ValueError):  # a broken pipe, or closed by close()
            self._end("the LiteLLM fork server exited")

    def log_tail(self, lines: int = 40) -> str:
        """The end of the fork server's own output (its import errors, for instance)."""
        if self._log_path is None:
            return ""
        try:
            text = self._log_path.read_text("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:
        """Stop the fork server and every proxy it started (waits for them)."""
        with self._lock:
            process = self._process
            if process is None:
                return
            if process.stdin is not None and not process.stdin.closed:
                try:
                    process.stdin.close()  # the fork server stops at the end of its input
                except OSError:
                    pass
            # It stops its proxies, reports their exit codes, then exits: read up to the end.
            deadline = time.monotonic() + _STOP_GRACE * 3
            while not self._has_ended() and time.monotonic() < deadline:
                self.pump(0.5)
            if not self._has_ended():  # pragma: no cover - defensive
                process.kill()
                self._end("the LiteLLM fork server did not stop: killed")
            if process.stdout is not None:
                process.stdout.close()
            if self._log_path is not None:
                self._log_path.unlink(missing_ok=True)
            if self._workdir is not None:
                shutil.rmtree(self._workdir, ignore_errors=True)


_SHARED: ProxyForkServer | None = None
_SHARED_LOCK = threading.Lock()


def shared_fork_server() -> ProxyForkServer:
    """This process's fork server (started by the first warm proxy, closed at exit; a new
    one if it ended, killed for instance)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or _SHARED.ended:
            _SHARED = ProxyForkServer()
            atexit.register(_SHARED.close)
        return _SHARED


# --- the fork server process -----------------------------------------------------------------


def _serve(bin_dir: str, stand_in: str | None) -> int:  # pragma: no cover - fork server
    # Like the `litellm` console script: its directory first on sys.path, not this one's.
    sys.path[0] = bin_dir
    # Replies go to the original stdout; anything else printed goes to the server's log.
    replies = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # this process's parent decides when to stop
    signal.signal(signal.SIGTERM, _raise_exit)

    def reply(message: dict[str, Any]) -> None:
        replies.write(json.dumps(message) + "\n")

    # Importing proxy_cli appends the working directory to sys.path (where the `litellm`
    # command finds a config's custom_auth and callback modules): the proxy's, in a fork.
    path_before = list(sys.path)
    if stand_in is None:
        import litellm.proxy.proxy_cli
        import litellm.proxy.proxy_server  # noqa: F401

        _warm_up()
        run: Callable[[list[str]], int] = _run_litellm
    else:
        import runpy

        run = runpy.run_path(stand_in, run_name="budgetware_fork_server_stand_in")["serve"]

    import_cwd = os.getcwd()
    cwd_entries = [
        index
        for index, entry in enumerate(sys.path)
        if entry == import_cwd and index >= len(path_before)
    ]

    problem = _fork_safety_problem(reserve_litellm=stand_in is None)
    if problem is not None:
        reply({"op": "unsafe", "error": problem})
        return 1
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    parent = os.getppid()
    children: set[int] = set()
    buffer = b""
    try:
        while True:
            readable, _, _ = select.select([0, wake_read], [], [], 1.0)
            if wake_read in readable:
                _drain(wake_read)
            _reap(children, reply)
            if os.getppid() != parent:
                return 0
            if 0 not in readable:
                continue
            data = os.read(0, 65536)
            if not data:
                return 0
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                message = json.loads(line)
                if message["op"] == "spawn":
                    try:
                        pid = os.fork()
                    except OSError as error:
                        reply({"op": "failed", "id": message["id"], "error": str(error)})
                        continue
                    if pid == 0:
                        _child(
                            message,
                            run,
                            close=(replies.fileno(), wake_read, wake_write),
                            cwd_entries=cwd_entries,
                        )
                    children.add(pid)
                    reply({"op": "spawned", "id": message["id"], "pid": pid})
                elif message["op"] == "signal" and message["pid"] in children:
                    # Not reaped yet, so the pid is still this child's: safe to signal.
                    _signal_child(message["pid"], message["sig"])
    finally:
        _stop_all(children, reply)


# Imported by every proxy after its fork whatever its config (the server, its event loop and
# protocols, budgetware's callback without its instance, which reads the environment).
_WARM_MODULES = (
    "anyio._backends._asyncio",
    "uvicorn.lifespan.on",
    "uvicorn.loops.auto",
    "uvicorn.loops.uvloop",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.websockets.auto",
    "websockets.server",
    "budgetware.integrations.litellm._callback",
)


def _warm_up() -> None:  # pragma: no cover - runs in the fork server
    """Do here, once, the work every forked proxy would repeat before its first answer.

    The modules above are imported; FastAPI builds each route's state on the first request
    that reaches its router (about 1.3 s of CPU for the proxy's 94 routes), so one request
    path that matches no route is matched against every route; and ``gc.freeze()`` keeps
    the imported objects (about 900,000) out of every collection in the proxies (a full
    one costs 0.5 s) and their pages shared. A step that fails is skipped (the proxy then
    does that work itself, as a cold one does). What was done goes to the server's log.
    """
    import gc
    import importlib

    done = []
    imported = 0
    for name in _WARM_MODULES:
        try:
            importlib.import_module(name)
            imported += 1
        except Exception as error:
            done.append(f"{name} not imported ({error!r})")
    done.append(f"{imported} of {len(_WARM_MODULES)} modules imported")
    try:
        from litellm.proxy.proxy_server import app

        path = "/budgetware-fork-server-warm-up"
        scope = {
            "type": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "method": "GET",
            "headers": [],
            "query_string": b"",
        }
        routes = 0
        for route in app.router.routes:
            route.matches(scope)
            routes += 1
        done.append(f"{routes} routes matched")
    except Exception as error:
        done.append(f"routes not matched ({error!r})")
    gc.collect()
    gc.freeze()
    done.append(f"{gc.get_freeze_count()} objects frozen")
    print("budgetware fork server warm-up: " + ", ".join(done), file=sys.stderr, flush=True)


def _signal_child(pid: int, sig: int) -> None:  # pragma: no cover - runs in the fork server
    """Signal a child's process group; a child that has not called ``setsid()`` yet (just
    forked) has no group of its own and is signalled alone (it has started nothing)."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    except PermissionError:
        pass


def _raise_exit(signum: int, frame: object) -> None:  # pragma: no cover - fork server
    raise SystemExit(128 + signum)


def _fork_safety_problem(reserve_litellm: bool) -> str | None:  # pragma: no cover
    # Runs in the fork server; a stand-in (no LiteLLM imported) has no runtime to reserve.
    if reserve_litellm:
        problem = _reserve_litellm()
        if problem is not None:
            return problem
    tasks = Path("/proc/self/task")
    threads = len(list(tasks.iterdir())) if tasks.is_dir() else threading.active_count()
    if threads != 1:
        return f"{threads} threads run after importing the proxy (fork() keeps only one)"
    return None


def _reserve_litellm() -> str | None:  # pragma: no cover - runs in the fork server
    try:
        from litellm.rust_bridge.fork_guard import reserve_process_for_forking
    except ImportError:
        return None  # a litellm without the Rust extension
    try:
        # From now on a native call here raises instead of starting runtime threads.
        reserve_process_for_forking("the budgetware LiteLLM fork server")
    except RuntimeError as error:
        return str(error)
    return None


def _drain(descriptor: int) -> None:  # pragma: no cover - runs in the fork server
    try:
        while os.read(descriptor, 4096):
            pass
    except BlockingIOError:
        pass


def _reap(children: set[int], reply: Any) -> None:  # pragma: no cover - fork server
    for pid in list(children):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 255 << 8
        if done:
            children.discard(pid)
            reply({"op": "exited", "pid": pid, "code": os.waitstatus_to_exitcode(status)})


def _stop_all(children: set[int], reply: Any) -> None:  # pragma: no cover - fork server
    for sig, grace in ((signal.SIGTERM, _STOP_GRACE), (signal.SIGKILL, _STOP_GRACE)):
        for pid in children:
            _signal_child(pid, sig)
        deadline = time.monotonic() + grace
        while children and time.monotonic() < deadline:
            try:
                _reap(children, reply)
            except (BrokenPipeError, OSError):
                pass
            time.sleep(0.05)


def _child(  # pragma: no cover - runs in a forked proxy
    message: dict[str, Any],
    run: Callable[[list[str]], int],
    close: tuple[int, ...],
    cwd_entries: list[int],
) -> None:
    code = 1
    server = os.getppid()
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setsid()
        _die_with_parent(server)
        log = os.open(message["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        for descriptor in (log, devnull, *close):
            os.close(descriptor)
        os.chdir(message["cwd"])
        for index in cwd_entries:
            sys.path[index] = os.getcwd()
        os.environ.clear()
        os.environ.update(message["env"])
        code = run(message["args"])
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _die_with_parent(parent: int) -> None:  # pragma: no cover - runs in a forked proxy
    # A fork server that is killed (SIGKILL: no clean-up) takes its proxies with it.
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before prctl took effect
        os._exit(1)


def _run_litellm(args: list[str]) -> int:  # pragma: no cover - runs in a forked proxy
    import click
    from litellm.proxy.proxy_cli import run_server

    sys.argv = [os.path.join(sys.path[0], "litellm"), *args]
    try:
        result = run_server.main(args=args, prog_name="litellm", standalone_mode=False)
    except SystemExit as exit_:
        if exit_.code is None or isinstance(exit_.code, int):
            return exit_.code or 0
        print(exit_.code, file=sys.stderr)
        return 1
    except click.exceptions.ClickException as error:
        error.show()
        return error.exit_code
    except click.exceptions.Abort:
        print("Aborted!", file=sys.stderr)
        return 1
    return result if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover - the fork server process
    sys.exit(_serve(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
