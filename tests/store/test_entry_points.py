"""``artifact_store`` (``BUDGETWARE_ARTIFACT_STORE``) reaches the entry points that are
given no configuration: the anthropic middleware and the MCP boundary, for an ``s3://``
store on the local S3 server and a ``file://`` one. The URL wins over ``artifact_dir``."""

from __future__ import annotations

import runpy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from fs_watch import FILE_APIS

from budgetware.core.artifacts import text_key
from budgetware.testing import FakeProvider

BUDGET = 5000
MCP_SERVER = Path(__file__).parents[1] / "mcp" / "mcp_server_app.py"


@dataclass
class EnvStore:
    prefix: str  # what a reference starts with
    read: Callable[[str], bytes]  # an artifact's bytes, by key
    wrong: Path  # artifact_dir, which the URL overrides


# The store's two file APIs (fs_watch) apply to the file:// store only: an S3 store reaches
# no file, so its tests run once, not once per file API.
TOUCHES_NO_FILES = True  # of the store folder's parametrization: this module's own below


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "env_store" in metafunc.fixturenames:
        metafunc.parametrize(
            ("env_store", "store_file_api"),
            [
                pytest.param("s3", None, id="s3"),
                *(pytest.param("file", api, id=f"file-{api}") for api in FILE_APIS),
            ],
            indirect=True,
        )


@pytest.fixture
def env_store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> EnvStore:
    if request.param == "s3":
        pytest.importorskip("boto3")
        bucket = request.getfixturevalue("s3_bucket")
        url = bucket.url("entry")
        store = EnvStore(
            f"s3://{bucket.name}/entry/", lambda key: bucket.get(f"entry/{key}.txt"), tmp_path
        )
    else:
        directory = tmp_path / "env-store"
        url = f"file://{directory}"
        store = EnvStore(
            f"{directory}/", lambda key: (directory / f"{key}.txt").read_bytes(), tmp_path
        )
    store.wrong = tmp_path / "artifact-dir"
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_STORE", url)
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_DIR", str(store.wrong))
    monkeypatch.setenv("BUDGETWARE_BATCH_BUDGET", str(BUDGET))
    return store


@pytest.mark.sdk
def test_the_anthropic_middleware_takes_its_store_from_the_environment(
    env_store: EnvStore, fake_provider: FakeProvider
) -> None:
    import anthropic

    from budgetware.integrations.anthropic import budget_middleware

    output = "anthropic tool output line\n" * 5000
    with anthropic.Anthropic(
        base_url=fake_provider.url,
        api_key="k",
        max_retries=0,
        middleware=[budget_middleware()],
    ) as client:
        client.messages.create(
            model="claude-test",
            max_tokens=16,
            messages=[
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "u1", "name": "sh", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "u1", "content": output}],
                },
            ],
        )
    sent = fake_provider.last.json()["messages"][2]["content"][0]["content"]
    text = sent if isinstance(sent, str) else sent[0]["text"]
    assert len(text) <= BUDGET
    assert f"{env_store.prefix}{text_key(output)}.txt" in text
    assert env_store.read(text_key(output)) == output.encode()
    assert not env_store.wrong.exists()


async def test_the_mcp_boundary_takes_its_store_from_the_environment(
    env_store: EnvStore,
) -> None:
    from mcp import ClientSession
    from mcp.client._memory import InMemoryTransport

    from budgetware.integrations.mcp import BoundedTransport
    from budgetware.mcp.bound import META_ARTIFACTS

    # The MCP tests' server, served in this process: what is checked is where the boundary
    # (in this process, given no configuration) puts the result it cuts, whatever the
    # transport (tests/mcp/test_mcp_stdio.py runs that server over stdio). A server process
    # of its own cost about 0.9 s of CPU a run.
    server = runpy.run_path(str(MCP_SERVER))["build_server"]()
    async with (
        BoundedTransport(InMemoryTransport(server)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("big_text", {})
    full = "HEAD-MARKER\n" + "x" * 1_000_000 + "MIDDLE-MARKER" + "y" * 1_000_000 + "\nTAIL-MARKER"
    (ref,) = (result.meta or {})[META_ARTIFACTS]
    assert ref == f"{env_store.prefix}{text_key(full)}.txt"
    assert ref in result.content[0].text
    assert env_store.read(text_key(full)) == full.encode()
    assert not env_store.wrong.exists()
