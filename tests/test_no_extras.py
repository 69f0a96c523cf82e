"""budgetware works with no extra installed: no HTTP library, no SDK, no orjson.

A fresh interpreter refuses to import every optional package, as if only the core
dependencies (pydantic, pydantic-settings, wrapt) were installed, and then uses the core,
the wire layer and instrument(); an integration raises an ImportError that names the extra
to install.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_BLOCKED = (
    "httpx httpx2 openai anthropic google litellm mcp acp mistralai ollama cohere aiohttp "
    "rich orjson"  # every extra, and orjson
)

_SCRIPT = f"""
import importlib.abc, sys

BLOCKED = set({_BLOCKED!r}.split())

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())

import json, tempfile
import budgetware
from budgetware import BudgetConfig
from budgetware.finalizer import ToolResult, finalize_batch, finalize_body, json_string_bytes

config = BudgetConfig(batch_budget=1_000, artifact_dir=tempfile.mkdtemp())
(entry,) = finalize_batch([ToolResult("c", "t", ("x" * 5_000,))], config=config)
assert len(entry.slots[0]) <= 1_000, "core"
assert json_string_bytes("\\ud800汉") == 2 + 6 + 3, "ruler without orjson"
log = "\\n".join(["INFO ok"] * 3_000 + ["ERROR: disk full"] + ["INFO ok"] * 3_000) + "\\n"
(entry,) = finalize_batch([ToolResult("c", "t", (log,))], config=config)
assert "3001: ERROR: disk full" in entry.slots[0], "salient lines"

tool = {{"role": "tool", "tool_call_id": "c", "content": "y" * 5_000}}
body = json.dumps({{"messages": [tool]}}).encode()
assert len(finalize_body("https://x/v1/chat/completions", body, config=config)) < len(body), "wire"

with budgetware.instrument(config=config):
    pass  # nothing to patch, nothing breaks

from budgetware.integrations import openai as openai_integration
try:
    openai_integration.budget_http_client()
except ImportError as exc:
    assert 'pip install "budgetware[openai]"' in str(exc), str(exc)
else:
    raise AssertionError("the openai integration worked without openai")
print("ok")
"""


def test_core_wire_and_instrument_work_with_no_extra_installed(tmp_path: Path) -> None:
    # Its artifact directory (a mkdtemp) goes with the test's.
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
