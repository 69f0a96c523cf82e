"""instrument() / uninstrument(): patch send once, restore it exactly, never bound twice."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import httpx2
import pytest
import wrapt
from http_helpers import big_results, tool_result_texts
from test_transport import URL, chat_body, mock

import budgetware.http.transport as transport_module
from budgetware.core.config import BudgetConfig
from budgetware.core.errors import BudgetwareWarning
from budgetware.http import instrument as _instrument
from budgetware.http.instrument import PATCH_TARGETS, PatchTarget, instrument, uninstrument
from budgetware.http.transport import AsyncBudgetTransport, BudgetTransport


@pytest.fixture(params=["httpx", "httpx2"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


def _originals() -> list[Any]:
    return [
        vars(cls)["send"]
        for cls in (httpx.Client, httpx.AsyncClient, httpx2.Client, httpx2.AsyncClient)
    ]


def _installed(target: PatchTarget) -> bool:
    try:
        return importlib.util.find_spec(target.module) is not None
    except ModuleNotFoundError:  # the parent package is missing (google-genai on 3.10)
        return False


def test_every_patch_target_exists_in_the_installed_libraries() -> None:
    for target in PATCH_TARGETS:
        if not _installed(target) and target.module.startswith("google."):
            continue  # google-genai 3 needs Python 3.11 (the CI matrix runs 3.10 without it)
        module = importlib.import_module(target.module)
        cls = getattr(module, target.cls)
        assert callable(vars(cls).get(target.method)), target.name


def test_instrument_patches_send_of_both_libraries() -> None:
    originals = _originals()
    installed = [t for t in PATCH_TARGETS if _installed(t)]
    for target in installed:
        importlib.import_module(target.module)
    handle = instrument()
    assert set(handle.patched) == {t.name for t in installed}
    assert all(now is not before for now, before in zip(_originals(), originals))


def test_uninstrument_restores_the_exact_original_functions() -> None:
    originals = _originals()
    instrument()
    uninstrument()
    assert all(now is before for now, before in zip(_originals(), originals))


def test_instrumenting_twice_patches_once() -> None:
    originals = _originals()
    instrument()
    once = _originals()
    instrument()
    assert all(now is first for now, first in zip(_originals(), once))
    uninstrument()
    assert all(now is before for now, before in zip(_originals(), originals))


def test_instrument_as_a_context_manager_uninstruments_on_exit() -> None:
    originals = _originals()
    with instrument():
        assert _instrument.is_instrumented()
    assert not _instrument.is_instrumented()
    assert all(now is before for now, before in zip(_originals(), originals))


def test_instrumented_client_sends_bounded_body(lib: ModuleType, tmp_path: Path) -> None:
    seen: list[Any] = []
    config = BudgetConfig(batch_budget=20_000, artifact_dir=tmp_path)
    with instrument(config=config), lib.Client(transport=mock(lib, seen)) as client:
        client.post(URL, content=chat_body(big_results(3, 50_000)))
    texts = tool_result_texts("openai_chat", json.loads(seen[0].content))
    assert sum(len(t) for t in texts) <= 20_000


async def test_instrumented_async_client_sends_bounded_body(
    lib: ModuleType, tmp_path: Path
) -> None:
    seen: list[Any] = []
    with instrument(config=BudgetConfig(batch_budget=20_000, artifact_dir=tmp_path)):
        async with lib.AsyncClient(transport=mock(lib, seen)) as client:
            await client.post(URL, content=chat_body(big_results(3, 50_000)))
    texts = tool_result_texts("openai_chat", json.loads(seen[0].content))
    assert sum(len(t) for t in texts) <= 20_000


def test_uninstrumented_client_sends_the_original_body(lib: ModuleType) -> None:
    seen: list[Any] = []
    body = chat_body(big_results(3, 50_000))
    with instrument(config=BudgetConfig(batch_budget=20_000)):
        pass
    with lib.Client(transport=mock(lib, seen)) as client:
        client.post(URL, content=body)
    assert seen[0].content == body


def test_request_through_a_budget_transport_is_bounded_once(
    lib: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = transport_module.finalize_body

    def counting(*args: Any, **kwargs: Any) -> bytes:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(transport_module, "finalize_body", counting)
    seen: list[Any] = []
    config = BudgetConfig(batch_budget=20_000, artifact_dir=tmp_path)
    wrapped = BudgetTransport(mock(lib, seen), config=config)
    with instrument(config=config), lib.Client(transport=wrapped) as client:
        client.post(URL, content=chat_body(big_results(3, 50_000)))
    assert len(calls) == 1


def test_per_client_transport_config_wins_over_instrument(lib: ModuleType, tmp_path: Path) -> None:
    seen: list[Any] = []
    body = chat_body(big_results(3, 50_000))
    with instrument(config=BudgetConfig(batch_budget=20_000, artifact_dir=tmp_path)):
        disabled = BudgetTransport(mock(lib, seen), config=BudgetConfig(batch_budget=0))
        with lib.Client(transport=disabled) as client:
            client.post(URL, content=body)
    assert seen[0].content == body


def test_a_missing_patch_target_warns_and_patches_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gone = PatchTarget("httpx2", "Client", "send_that_was_removed", _instrument._sync_send)
    monkeypatch.setattr(_instrument, "PATCH_TARGETS", (*PATCH_TARGETS, gone))
    with pytest.warns(BudgetwareWarning, match="httpx2.Client.send_that_was_removed"):
        handle = instrument()
    assert "httpx2.Client.send" in handle.patched


def test_library_imported_after_instrument_is_patched_on_import() -> None:
    code = (
        "import sys, budgetware.http.instrument as i\n"
        "assert 'httpx2' not in sys.modules\n"
        "i.instrument()\n"
        "import httpx2\n"
        "assert 'httpx2.Client.send' in i.Instrumentation().patched\n"
        "assert type(vars(httpx2.Client)['send']).__name__ == 'FunctionWrapper'\n"
    )
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True, timeout=60)


def test_instrument_without_warnings_on_a_healthy_install() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing patch target would warn, and so fail
        instrument()
    assert _instrument.is_instrumented()


def test_http_layer_modules_import_no_http_library_or_sdk() -> None:
    code = (
        "import sys\n"
        "import budgetware.http.transport, budgetware.http.instrument, budgetware.wire.payload\n"
        "import budgetware.integrations.openai, budgetware.integrations.anthropic\n"
        "import budgetware.integrations.google_genai, budgetware.integrations.litellm\n"
        "sdks = {'httpx', 'httpx2', 'openai', 'anthropic', 'google', 'litellm'}\n"
        "loaded = sdks & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True, timeout=60)


@pytest.mark.parametrize("wrapped", [False, True], ids=["plain", "budget-transport"])
async def test_instrumented_send_delivers_each_response_through_the_rewriters_once(
    lib: ModuleType, wrapped: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from budgetware.http import hooks as _hooks

    calls: list[int] = []

    def rewriter(request: Any, response: Any) -> Any:
        calls.append(response.status_code)
        return response

    monkeypatch.setattr(_hooks, "RESPONSE_REWRITERS", [rewriter])
    sync_inner, async_inner = mock(lib, []), mock(lib, [])
    sync_transport = BudgetTransport(sync_inner) if wrapped else sync_inner
    async_transport = AsyncBudgetTransport(async_inner) if wrapped else async_inner
    with instrument(), lib.Client(transport=sync_transport) as client:
        client.post(URL, content=b"{}")
        async with lib.AsyncClient(transport=async_transport) as aclient:
            await aclient.post(URL, content=b"{}")
    assert calls == [200, 200]


def _fresh(code: str, **env: str) -> list[str]:
    """Run ``code`` in a new interpreter without any BUDGETWARE_* variable; its stdout lines."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETWARE_")}
    environ.update(env)
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


LAYER = (
    "'budgetware.http.transport' in sys.modules",
    "'budgetware.wire.body' in sys.modules",
    "'budgetware.store.select' in sys.modules",
    "'budgetware.core.config' in sys.modules",
)
SHOW_LAYER = "print([" + ", ".join(LAYER) + "])"


def test_instrument_loads_the_bounding_layer_at_the_first_body(tmp_path: Path) -> None:
    # budgetware run calls instrument() when the program imports httpx: it must be cheap.
    out = _fresh(
        f"""
        import json, sys
        import httpx
        from budgetware.http.instrument import instrument
        instrument()
        {SHOW_LAYER}
        seen = []
        def handler(request):
            seen.append(request.read())
            return httpx.Response(200, json={{}})
        with httpx.Client(transport=httpx.MockTransport(handler)) as client:
            client.get("http://127.0.0.1:9/health")  # no body: nothing to bound
            {SHOW_LAYER}
            body = {{"model": "m", "messages": [
                {{"role": "assistant", "tool_calls": [{{"id": "c", "type": "function"}}]}},
                {{"role": "tool", "tool_call_id": "c", "content": "x" * 300_000}}]}}
            client.post("{URL}", json=body)
            {SHOW_LAYER}
        print(len(json.loads(seen[-1])["messages"][1]["content"]) <= 200_000)
        """,
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    assert out == [
        "[False, False, False, False]",
        "[False, False, False, False]",
        "[True, True, True, True]",
        "True",
    ]


def test_a_request_without_a_body_through_an_async_client_loads_nothing(tmp_path: Path) -> None:
    out = _fresh(
        f"""
        import asyncio, sys
        import httpx
        from budgetware.http.instrument import instrument
        instrument()
        async def main():
            transport = httpx.MockTransport(lambda request: httpx.Response(200, text="ok"))
            async with httpx.AsyncClient(transport=transport) as client:
                return (await client.get("http://127.0.0.1:9/health")).text
        print(asyncio.run(main()))
        {SHOW_LAYER}
        """,
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    assert out == ["ok", "[False, False, False, False]"]


def test_the_cheap_set_up_still_refuses_an_unusable_default_directory(tmp_path: Path) -> None:
    # No setting at all: the default artifact directory is checked without pydantic, and a
    # directory other users can write is refused as the full check refuses it.
    shared = tmp_path / "cache" / "budgetware" / "artifacts"
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    out = _fresh(
        """
        import sys
        from budgetware.http.instrument import instrument
        try:
            instrument()
        except ValueError as exc:
            print(type(exc).__name__, exc)
        """,
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    (line,) = out
    assert line.startswith("ConfigError invalid budgetware setting: artifact_dir")
    assert "other users can write into it" in line
    shared.chmod(0o700)
    assert _fresh(
        "import sys\nfrom budgetware.http.instrument import instrument\n"
        f"instrument()\n{SHOW_LAYER}\n",
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    ) == ["[False, False, False, False]"]


def test_a_bad_setting_is_still_an_error_at_set_up(tmp_path: Path) -> None:
    for name, value in [
        ("BUDGETWARE_BATCH_BUDGET", "lots"),
        ("BUDGETWARE_MCP_RESULT_BUDGET", "100k"),
    ]:
        out = _fresh(
            """
            from budgetware.http.instrument import instrument
            try:
                instrument()
            except ValueError as exc:
                print(type(exc).__name__, exc)
            """,
            **{name: value, "XDG_CACHE_HOME": str(tmp_path / "cache")},
        )
        # The MCP boundary's settings too, though nothing imported it yet.
        assert out, name
        assert out[0].startswith("ConfigError"), out
        assert name in out[0], out


@pytest.fixture
def xray_patched(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """aws-xray-sdk's httpx patch applied (``httpx.Client = _InstrumentedClient``, a subclass
    that defines no ``send``), and undone after the test."""
    from aws_xray_sdk.core import xray_recorder

    xray_httpx = importlib.import_module("aws_xray_sdk.ext.httpx.patch")
    monkeypatch.setattr(httpx, "Client", httpx.Client)
    monkeypatch.setattr(httpx, "AsyncClient", httpx.AsyncClient)
    monkeypatch.setattr(httpx._api, "Client", httpx._api.Client)
    xray_recorder.configure(context_missing="IGNORE_ERROR", sampling=False)
    xray_httpx.patch()
    assert "send" not in vars(httpx.Client)
    yield xray_httpx
    # The recorder opens a UDP socket for its daemon at import; nothing was sent on it.
    xray_recorder.emitter._socket.close()


async def test_a_client_class_replaced_by_a_subclass_is_still_bounded(
    xray_patched: Any, tmp_path: Path
) -> None:
    seen: list[Any] = []
    body = {
        "model": "m",
        "messages": [{"role": "tool", "tool_call_id": "a", "content": "x" * 50_000}],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "send ... no longer exists"
        handle = instrument(config=BudgetConfig(batch_budget=1_000, artifact_dir=tmp_path))
    assert {"httpx.Client.send", "httpx.AsyncClient.send"} <= set(handle.patched)
    with httpx.Client(transport=mock(httpx, seen)) as client:
        assert isinstance(client, xray_patched._InstrumentedClient)
        client.post("https://api.openai.com/v1/chat/completions", json=body)
    async with httpx.AsyncClient(transport=mock(httpx, seen)) as aclient:
        assert isinstance(aclient, xray_patched._InstrumentedAsyncClient)
        await aclient.post("https://api.openai.com/v1/chat/completions", json=body)
    for request in seen:
        assert len(json.loads(request.content)["messages"][0]["content"]) <= 1_000
    uninstrument()
    assert vars(httpx._client.Client)["send"] is httpx._client.Client.__dict__["send"]
    assert not isinstance(vars(httpx._client.Client)["send"], wrapt.FunctionWrapper)
    assert not isinstance(vars(httpx._client.AsyncClient)["send"], wrapt.FunctionWrapper)


def test_an_unknown_budgetware_variable_is_warned_about_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_instrument, "_SEEN_VARIABLES", set())
    monkeypatch.setenv("BUDGETWARE_BATCHBUDGET", "5000")
    with pytest.warns(BudgetwareWarning, match="ignoring BUDGETWARE_BATCHBUDGET") as record:
        instrument()
    assert "did you mean BUDGETWARE_BATCH_BUDGET?" in str(record[0].message)
    uninstrument()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        instrument()  # said once a process


def test_known_variables_and_budgetware_run_get_no_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_instrument, "_SEEN_VARIABLES", set())
    monkeypatch.setenv("BUDGETWARE_BATCH_BUDGET", "5000")
    monkeypatch.setenv("BUDGETWARE_MCP_RESULT_BUDGET", "5000")
    monkeypatch.setenv("BUDGETWARE_DEBUG_LOG_FILE", "")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        instrument()
        uninstrument()
        # Under budgetware run, its start-up check named the variable once for the run.
        monkeypatch.setenv("BUDGETWARE_BATCHBUDGET", "5000")
        monkeypatch.setenv("BUDGETWARE_RUN_MAIN", str(os.getpid()))
        instrument()
