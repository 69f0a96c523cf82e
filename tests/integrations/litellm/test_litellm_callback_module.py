"""How the callback is reached: lazily from the integration, ready-made for the proxy config."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_importing_the_integration_does_not_import_litellm() -> None:
    code = (
        "import sys, budgetware.integrations.litellm\n"
        "assert 'litellm' not in sys.modules, sorted(m for m in sys.modules if 'litellm' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_missing_litellm_raises_import_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from budgetware.integrations import litellm as integration

    # Forget the submodule as if it had never been imported, then hide litellm.
    monkeypatch.delitem(sys.modules, "budgetware.integrations.litellm._callback", raising=False)
    monkeypatch.delattr(integration, "_callback", raising=False)
    for name in [m for m in sys.modules if m == "litellm" or m.startswith("litellm.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "litellm", None)
    with pytest.raises(ImportError, match=r'pip install "budgetware\[litellm\]"'):
        integration.budget_callback()


def test_proxy_config_names_a_ready_budget_callback() -> None:
    from litellm.integrations.custom_logger import CustomLogger
    from litellm.proxy.types_utils.utils import get_instance_fn

    from budgetware.integrations.litellm import BudgetCallback

    handler = get_instance_fn("budgetware.integrations.litellm.proxy.handler")
    assert isinstance(handler, BudgetCallback)
    assert isinstance(handler, CustomLogger)


def test_the_proxy_sees_the_callback_override_its_pre_call_hook() -> None:
    # The proxy only calls async_pre_call_hook of classes that define it themselves.
    from litellm.integrations.custom_logger import CustomLogger

    from budgetware.integrations.litellm import BudgetCallback

    assert "async_pre_call_hook" in vars(BudgetCallback)
    assert BudgetCallback.async_pre_call_hook is not CustomLogger.async_pre_call_hook
