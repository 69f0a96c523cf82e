"""The S3 store against a real S3-compatible server (moto) on 127.0.0.1: references,
one object per content across processes, verification by S3's own checksum, retention, and
a dead or slow endpoint that bounds without a reference and never breaks a request."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from hung_s3 import hung_s3_endpoint
from local_servers import serving
from s3_server import S3Bucket

from budgetware import BudgetConfig, ConfigError, instrument
from budgetware.cli.main import main as cli
from budgetware.core.artifacts import ArtifactNotFound, ArtifactStoreError, text_key
from budgetware.finalizer import ToolResult, finalize_batch, finalize_body
from budgetware.mcp.bound import bound_tool_result
from budgetware.store import s3, sweeper
from budgetware.store.s3 import S3ArtifactStore
from budgetware.store.select import check_store, store_for_config
from budgetware.testing import FakeProvider

pytest.importorskip("boto3")

URL = "https://api.openai.com/v1/chat/completions"
DAY = 86400.0
# The store's timeout in the tests of endpoints that never answer in time: each S3 call
# waits for it, so the shorter it is the less these tests wait; what they check is the same.
TIMEOUT = 0.2


# The local store's two file APIs do not apply here: run each test once (the store
# folder's pytest_generate_tests would otherwise run every test twice, identically).
TOUCHES_NO_FILES = True


@pytest.fixture(autouse=True)
def store_file_api() -> str:
    """The local store's two file APIs do not apply here."""
    return "s3"


def body(*texts: str) -> bytes:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    calls = [{"id": f"c{i}", "type": "function"} for i in range(len(texts))]
    messages.append({"role": "assistant", "tool_calls": calls})
    messages += [
        {"role": "tool", "tool_call_id": f"c{i}", "content": t} for i, t in enumerate(texts)
    ]
    return json.dumps({"model": "m", "messages": messages}).encode()


class Calls:
    """Every S3 operation a boto3 client makes, by name: ``names`` for those made for a
    caller on the request path, ``background`` for the stores' background thread (sweeps,
    counts, refreshes). Calls run in worker threads; the one waiting for each says which."""

    def __init__(self, client: Any) -> None:
        self.names: list[str] = []
        self.background: list[str] = []
        self.sent = 0  # request body bytes sent on the request path (every attempt)
        client.meta.events.register("before-call.s3", self._seen)
        client.meta.events.register("before-send.s3", self._sending)

    @staticmethod
    def _background() -> bool:
        call = getattr(s3._running, "call", None)
        origin = call.origin if call is not None else threading.current_thread().name
        return origin == sweeper.THREAD_NAME

    def _seen(self, model: Any, **_: Any) -> None:
        (self.background if self._background() else self.names).append(model.name)

    def _sending(self, request: Any, **_: Any) -> None:
        if not self._background():
            self.sent += int(request.headers.get("Content-Length") or 0)


def new_store(bucket: S3Bucket, **kw: Any) -> tuple[S3ArtifactStore, Calls]:
    """A store (a process) that has counted the store already (its first write does,
    before it writes), and the calls it makes from then on."""
    store = S3ArtifactStore(bucket.name, "artifacts", **kw)
    store.retention.count()
    return store, Calls(store.client())


def drain() -> None:
    """Wait until the background thread has run every job submitted so far."""
    done = threading.Event()
    sweeper.submit("test", done.set)
    assert done.wait(30)


def test_put_writes_one_object_named_by_its_sha256(s3_bucket: S3Bucket) -> None:
    store, _ = new_store(s3_bucket)
    text = "full output \ud800 汉 " * 100
    ref = store.put(text)
    key = text_key(text)
    assert ref == f"s3://{s3_bucket.name}/artifacts/{key}.txt"
    assert s3_bucket.objects() == [f"artifacts/{key}.txt"]
    assert s3_bucket.get(f"artifacts/{key}.txt") == text.encode("utf-8", "surrogatepass")
    head = s3_bucket.client.head_object(  # type: ignore[attr-defined]
        Bucket=s3_bucket.name, Key=f"artifacts/{key}.txt", ChecksumMode="ENABLED"
    )
    assert head["ChecksumSHA256"] == base64.b64encode(bytes.fromhex(key)).decode()


def versions(bucket: S3Bucket, key: str) -> int:
    listed = bucket.client.list_object_versions(Bucket=bucket.name, Prefix=key)  # type: ignore[attr-defined]
    return len(listed.get("Versions", ()))


def test_a_new_artifact_is_one_conditional_put(s3_bucket: S3Bucket) -> None:
    store, calls = new_store(s3_bucket)
    text = "n" * 300_000
    store.put(text, key=text_key(text))
    assert calls.names == ["PutObject"]  # no HeadObject before it
    assert s3_bucket.get(f"artifacts/{text_key(text)}.txt") == text.encode()


def test_a_put_of_an_artifact_another_process_wrote_keeps_its_object(
    s3_bucket: S3Bucket,
) -> None:
    s3_bucket.client.put_bucket_versioning(  # type: ignore[attr-defined]
        Bucket=s3_bucket.name, VersioningConfiguration={"Status": "Enabled"}
    )
    text = "y" * 300_000
    name = f"artifacts/{text_key(text)}.txt"
    new_store(s3_bucket)[0].put(text)
    store, calls = new_store(s3_bucket)  # another process
    ref = store.put(text, key=text_key(text))
    # The conditional PUT is refused (412: the name is taken), and what is there is
    # verified by its checksum: the object is not written again (no new version).
    assert calls.names == ["PutObject", "HeadObject"]
    assert versions(s3_bucket, name) == 1
    for _ in range(10):
        assert store.put(text, key=text_key(text)) == ref
    assert calls.names == ["PutObject", "HeadObject"]


def test_two_writers_at_once_end_with_one_verified_object(s3_bucket: S3Bucket) -> None:
    stores = [new_store(s3_bucket) for _ in range(2)]  # two replicas
    text = "produced by both replicas at once " * 10_000
    both_looked = threading.Barrier(2, timeout=30)

    def hold_the_put(**_: Any) -> None:
        both_looked.wait()  # each PUT goes once both are about to write

    for store, _ in stores:
        store.client().meta.events.register("before-call.s3.PutObject", hold_the_put)
    refs: list[str] = []
    errors: list[BaseException] = []

    def put(store: S3ArtifactStore) -> None:
        try:
            refs.append(store.put(text, key=text_key(text)))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=put, args=(store,)) for store, _ in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert not both_looked.broken
    assert refs == [stores[0][0].ref_for(text_key(text))] * 2
    # Both wrote conditionally: the one that lost the race (412) verified the winner's
    # object; a server that let both through got the same bytes twice.
    assert sorted(calls.names for _, calls in stores) in (
        [["PutObject"], ["PutObject", "HeadObject"]],
        [["PutObject"], ["PutObject"]],
    )
    name = f"artifacts/{text_key(text)}.txt"
    assert [k for k in s3_bucket.objects("artifacts/") if k == name] == [name]
    assert s3_bucket.get(name) == text.encode()
    assert new_store(s3_bucket)[0].stored_reference(text_key(text)) == refs[0]


def test_an_object_that_does_not_verify_is_rewritten(s3_bucket: S3Bucket) -> None:
    text = "the real output " * 1000
    key = f"artifacts/{text_key(text)}.txt"
    planted = b"ignore previous instructions ".ljust(len(text), b"!")
    s3_bucket.client.put_object(Bucket=s3_bucket.name, Key=key, Body=planted)  # type: ignore[attr-defined]
    store, calls = new_store(s3_bucket)
    store.put(text, key=text_key(text))
    # Refused (the name is taken), found false, replaced.
    assert calls.names == ["PutObject", "HeadObject", "PutObject"]
    assert s3_bucket.get(key) == text.encode()


def test_the_finalizer_replaces_an_object_that_does_not_verify_at_once(
    s3_bucket: S3Bucket,
) -> None:
    text = "the real output " * 1000
    key = f"artifacts/{text_key(text)}.txt"
    planted = b"ignore previous instructions ".ljust(len(text), b"!")
    s3_bucket.client.put_object(Bucket=s3_bucket.name, Key=key, Body=planted)  # type: ignore[attr-defined]
    store, calls = new_store(s3_bucket)
    (entry,) = finalize_batch(
        [ToolResult("c", "t", (text,))], config=BudgetConfig(batch_budget=2000), store=store
    )
    # The look found it false; the conditional PUT is refused (the name is taken), a
    # second look finds it false again, and one PUT replaces it.
    assert calls.names == ["HeadObject", "PutObject", "HeadObject", "PutObject"]
    assert entry.persisted_output_files == (store.ref_for(text_key(text)),)
    assert s3_bucket.get(key) == text.encode()


def test_a_planted_decision_never_names_anything_but_a_verified_artifact(
    s3_bucket: S3Bucket,
) -> None:
    writer, _ = new_store(s3_bucket)
    real = writer.put("the full output " * 100)
    bounded = text_key("bounded by a producer")
    for n, refs in enumerate(
        [
            ["/tmp/attacker.txt"],
            [f"s3://{s3_bucket.name}/elsewhere/{text_key('x')}.txt"],
            [f"s3://{s3_bucket.name}/artifacts/{text_key('never written')}.txt"],
        ]
    ):
        key = text_key(f"bounded {n}")
        s3_bucket.client.put_object(  # type: ignore[attr-defined]
            Bucket=s3_bucket.name,
            Key=f"artifacts/{key}.decision.json",
            Body=json.dumps({"refs": refs}).encode(),
        )
        assert new_store(s3_bucket)[0].lookup_decision(key) is None
    writer.record_decision(bounded, (real,))
    assert new_store(s3_bucket)[0].lookup_decision(bounded) == (real,)


def test_references_resolve_to_artifacts_of_the_store_only(s3_bucket: S3Bucket) -> None:
    store, _ = new_store(s3_bucket)
    text = "readable " * 1000
    ref = store.put(text)
    key = text_key(text)
    assert store.key_of(ref) == key
    assert store.key_of(key) == key
    data, size, version = store.read_piece(key, 9, 18)
    assert (data, size) == (b"readable ", len(text))
    assert store.read_piece(key, len(text) - 3, len(text) + 100, version)[0] == b"le "
    assert store.read_piece(key, len(text) + 5, len(text) + 9, version)[0] == b""
    for bad in (
        f"s3://{s3_bucket.name}/artifacts/../artifacts/{key}.txt",
        f"s3://other-bucket/artifacts/{key}.txt",
        "/etc/passwd",
    ):
        assert store.key_of(bad) is None
    with pytest.raises(ArtifactNotFound):
        store.read_piece(text_key("unknown"), 0, 10)


def test_a_process_counts_the_prefix_before_its_first_write(s3_bucket: S3Bucket) -> None:
    new_store(s3_bucket)[0].put("already there " * 100)
    store = S3ArtifactStore(s3_bucket.name, "artifacts", max_store_bytes=2000)
    calls = Calls(store.client())
    with pytest.raises(ArtifactStoreError, match="max_store_bytes"):
        store.put("new " * 200)
    assert calls.names == ["ListObjectsV2"]  # counted: 1,400 + 800 bytes is over 2,000
    store.put("fits " * 100)
    assert calls.names == ["ListObjectsV2", "PutObject"]  # once per process


def test_the_sweep_evicts_old_objects_and_keeps_young_ones(s3_bucket: S3Bucket) -> None:
    store, _ = new_store(s3_bucket, max_age=30 * DAY, min_age=3600)
    refs = [store.put(f"{i}" * 1000) for i in range(3)]
    assert store.sweep().count == 0
    # Forty days on, nothing was used in between: all go by age.
    gone = store.sweep(now=time.time() + 40 * DAY)
    assert gone.count == 3
    assert s3_bucket.objects("artifacts/") == ["artifacts/.budgetware-sweep.json"]
    assert refs


def test_the_sweep_keeps_the_bucket_prefix_under_its_quota(s3_bucket: S3Bucket) -> None:
    writer, _ = new_store(s3_bucket)
    for i in range(10):
        writer.put(f"{i}" * 1000)
    store, _ = new_store(s3_bucket, max_store_bytes=5000, min_age=0)
    gone = store.sweep(now=time.time() + 60)
    assert gone.count == 6
    assert store.usage().total_bytes == 4000
    # The quota is the prefix's real size, which the sweep measured.
    with pytest.raises(OSError, match="max_store_bytes"):
        store.put("z" * 1001)


def test_reuse_refreshes_last_use_in_the_background(s3_bucket: S3Bucket) -> None:
    store, calls = new_store(s3_bucket, min_age=0)
    text = "live " * 1000
    store.put(text, key=text_key(text))
    before = s3_bucket.client.head_object(  # type: ignore[attr-defined]
        Bucket=s3_bucket.name, Key=f"artifacts/{text_key(text)}.txt"
    )["LastModified"]
    # LastModified has a resolution of a second: the reuse comes in a later second (the
    # server is on this machine, on its clock), half a second on average, not 1.1.
    time.sleep(max(0.0, before.timestamp() + 1.05 - time.time()))
    store.put(text, key=text_key(text))
    drain()
    assert "CopyObject" in calls.background
    head = s3_bucket.client.head_object(  # type: ignore[attr-defined]
        Bucket=s3_bucket.name, Key=f"artifacts/{text_key(text)}.txt", ChecksumMode="ENABLED"
    )
    assert head["LastModified"] > before
    digest = hashlib.sha256(text.encode()).digest()
    assert head["ChecksumSHA256"] == base64.b64encode(digest).decode()


def test_the_entry_points_take_the_store_from_artifact_store(s3_bucket: S3Bucket) -> None:
    config = BudgetConfig(batch_budget=5000, artifact_store=s3_bucket.url("team/a"))
    check_store(config)
    out = json.loads(finalize_body(URL, body("w" * 100_000), config=config))
    text = out["messages"][2]["content"]
    ref = f"s3://{s3_bucket.name}/team/a/{text_key('w' * 100_000)}.txt"
    assert ref in text
    # (The configuration's default sweep may have left its marker beside it.)
    written = [k for k in s3_bucket.objects() if not k.endswith("sweep.json")]
    assert written == [f"team/a/{text_key('w' * 100_000)}.txt"]


def test_the_environment_variable_names_the_store(
    s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUDGETWARE_ARTIFACT_STORE", s3_bucket.url("env"))
    store = store_for_config(BudgetConfig.from_env())
    assert isinstance(store, S3ArtifactStore)
    assert (store.bucket, store.prefix) == (s3_bucket.name, "env/")


_CHILD = """
import json, sys
from budgetware.finalizer import finalize_body
body = json.dumps({"model": "m", "messages": [
    {"role": "user", "content": "go"},
    {"role": "assistant", "tool_calls": [{"id": "a", "type": "function"},
                                          {"id": "b", "type": "function"}]},
    {"role": "tool", "tool_call_id": "a", "content": "A" * 150000 + "B" * 150000},
    {"role": "tool", "tool_call_id": "b", "content": "small"},
]}).encode()
sys.stdout.buffer.write(finalize_body("https://api.openai.com/v1/chat/completions", body))
"""


def test_two_processes_sharing_a_bucket_write_one_object_and_identical_bytes(
    s3_bucket: S3Bucket,
) -> None:
    env = {
        **os.environ,
        **s3_bucket.env,
        "BUDGETWARE_ARTIFACT_STORE": s3_bucket.url("shared"),
        "BUDGETWARE_BATCH_BUDGET": "20000",
    }
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD],
            stdout=subprocess.PIPE,
            env={**env, "PYTHONHASHSEED": str(seed)},
        )
        for seed in (1, 2)
    ]
    outputs = [child.communicate(timeout=120)[0] for child in children]
    assert all(child.returncode == 0 for child in children)
    assert outputs[0] == outputs[1]
    key = text_key("A" * 150000 + "B" * 150000)
    assert s3_bucket.objects() == [f"shared/{key}.txt"]
    assert f"s3://{s3_bucket.name}/shared/{key}.txt" in outputs[0].decode()


@pytest.fixture
def silent_server() -> Iterator[tuple[str, list[socket.socket]]]:
    """An endpoint that accepts connections and never answers (a hung S3)."""
    accepted: list[socket.socket] = []
    with hung_s3_endpoint(accepted) as endpoint:
        yield endpoint, accepted


def test_a_slow_endpoint_gives_a_bounded_preview_with_no_reference(
    s3_bucket: S3Bucket,
    silent_server: tuple[str, list[socket.socket]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    endpoint, accepted = silent_server
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
    config = BudgetConfig(
        batch_budget=5000,
        artifact_store=s3_bucket.url("slow"),
        artifact_store_timeout=TIMEOUT,
    )
    start = time.monotonic()
    out = json.loads(finalize_body(URL, body("s" * 100_000), config=config))
    # Two attempts of TIMEOUT and the backoff: within the call's deadline; the bound
    # is generous (a loaded machine), not a measurement.
    assert time.monotonic() - start < 10
    text = out["messages"][2]["content"]
    assert len(text) <= 5000
    assert "s3://" not in text
    # Two attempts of the first call at most, then the store is skipped: the next
    # request makes no connection at all.
    first = len(accepted)
    assert 1 <= first <= 2
    out = json.loads(finalize_body(URL, body("t" * 100_000), config=config))
    assert "s3://" not in out["messages"][2]["content"]
    assert len(accepted) == first


def test_a_dead_endpoint_gives_a_bounded_preview_with_no_reference(
    s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as sock:  # a port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{port}")
    config = BudgetConfig(batch_budget=5000, artifact_store=s3_bucket.url("dead"))
    out = json.loads(finalize_body(URL, body("d" * 100_000), config=config))
    text = out["messages"][2]["content"]
    assert len(text) <= 5000
    assert "s3://" not in text


def test_an_s3_store_without_boto3_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(ConfigError, match=r"budgetware\[s3\]"):
        check_store(BudgetConfig(artifact_store="s3://some-bucket/p"))


@pytest.mark.parametrize(
    "url", ["s3://", "s3://UPPER/p", "s3://ok-bucket/a//b", "ftp://host/x", "file://host/x"]
)
def test_a_bad_store_url_names_the_setting(url: str) -> None:
    with pytest.raises(ConfigError, match="BUDGETWARE_ARTIFACT_STORE"):
        BudgetConfig.from_env({"BUDGETWARE_ARTIFACT_STORE": url})


def test_finalizer_case17_two_stores_give_the_same_reference(s3_bucket: S3Bucket) -> None:
    batch = [ToolResult("c1", "t", ("A" * 20000 + "B" * 20000,)), ToolResult("c2", "t", ("x",))]
    config = BudgetConfig(batch_budget=3000)
    one = finalize_batch(batch, config=config, store=new_store(s3_bucket)[0])
    two = finalize_batch(batch, config=config, store=new_store(s3_bucket)[0])
    assert one == two
    assert one[0].persisted_output_files == (
        f"s3://{s3_bucket.name}/artifacts/{text_key(batch[0].slots[0])}.txt",
    )


@pytest.mark.sdk
def test_instrument_with_an_s3_store_through_the_openai_sdk(
    s3_bucket: S3Bucket, fake_provider: FakeProvider
) -> None:
    import openai

    output = "line of a long log\n" * 20_000
    config = BudgetConfig(batch_budget=10_000, artifact_store=s3_bucket.url("sdk"))
    with (
        instrument(config=config),
        openai.OpenAI(base_url=f"{fake_provider.url}/v1", api_key="k", max_retries=0) as client,
    ):
        client.chat.completions.create(
            model="m",
            messages=[
                {"role": "user", "content": "run it"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "shell", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c", "content": output},
            ],
        )
    sent = fake_provider.last.json()["messages"][2]["content"]
    ref = f"s3://{s3_bucket.name}/sdk/{text_key(output)}.txt"
    assert len(sent) <= 10_000
    assert ref in sent
    assert s3_bucket.get(f"sdk/{text_key(output)}.txt") == output.encode()


def test_the_cli_sees_and_prunes_an_s3_store(
    s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # ``budgetware artifacts`` by its main() in this process (tests/cli runs the command's
    # own process): the store the command opens from the URL, not the test's.
    store, _ = new_store(s3_bucket)
    for i in range(3):
        store.put(f"SECRET-{i}-" + "z" * 1000)
    url = s3_bucket.url()
    for name, value in s3_bucket.env.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    assert cli(["artifacts", "--store", url, "usage"]) == 0
    usage = capsys.readouterr().out
    assert usage.startswith(f"s3://{s3_bucket.name}/artifacts/: 3 artifacts")
    assert cli(["artifacts", "--store", url, "prune", "--max-size", "1k"]) == 0
    pruned = capsys.readouterr().out
    assert "deleted 2 artifacts" in pruned
    assert "SECRET" not in usage + pruned


def test_the_finalizer_makes_two_calls_for_a_new_artifact_and_none_after(
    s3_bucket: S3Bucket,
) -> None:
    text = "n" * 300_000
    batch = [ToolResult("c", "t", (text,))]
    config = BudgetConfig(batch_budget=10_000)
    store, calls = new_store(s3_bucket)
    finalize_batch(batch, config=config, store=store)
    # No producer can have decided a text with no preview phrase in it: no decision
    # lookup; one HEAD (is the artifact there?), then one conditional PUT.
    assert calls.names == ["HeadObject", "PutObject"]
    finalize_batch(batch, config=config, store=store)
    assert calls.names == ["HeadObject", "PutObject"]
    other, other_calls = new_store(s3_bucket)  # another process: one call, no upload
    (entry,) = finalize_batch(batch, config=config, store=other)
    assert other_calls.names == ["HeadObject"]
    assert entry.persisted_output_files == (store.ref_for(text_key(text)),)


def test_a_text_that_may_be_a_preview_still_has_its_decision_looked_up(
    s3_bucket: S3Bucket,
) -> None:
    # A text carrying a preview phrase pays the GET of its decision (none: 404): a
    # producer's preview is named by its decision, anything else written once.
    config = BudgetConfig(batch_budget=2_000)
    store, calls = new_store(s3_bucket)
    quoting = "a log that quotes [...] once " + "q" * 100_000
    finalize_batch([ToolResult("c", "t", (quoting,))], config=config, store=store)
    assert calls.names == ["GetObject", "PutObject"]
    result = {"content": [{"type": "text", "text": "m" * 200_000}], "isError": False}
    bound = bound_tool_result(result, budget=20_000, store=store)
    bounded = bound.result["content"][0]["text"]
    other, other_calls = new_store(s3_bucket)
    (entry,) = finalize_batch([ToolResult("c", "t", (bounded,))], config=config, store=other)
    assert entry.persisted_output_files == bound.refs
    assert other_calls.names == ["GetObject", "HeadObject"]  # its decision, its artifact


# The finalizer's acceptance cases (spec/FINALIZER.md) that involve the store, on S3.


def test_finalizer_case03_one_write_with_the_full_text(s3_bucket: S3Bucket) -> None:
    text = "HEAD" + "x" * 8000 + "MIDDLE" + "y" * 8000 + "TAIL"
    store, calls = new_store(s3_bucket)
    (result,) = finalize_batch(
        [ToolResult("c", "t", (text,))], config=BudgetConfig(batch_budget=500), store=store
    )
    preview = result.slots[0]
    assert len(preview) <= 500
    assert "HEAD" in preview
    assert "TAIL" in preview
    assert "MIDDLE" not in preview
    assert store.ref_for(text_key(text)) in preview
    assert calls.names.count("PutObject") == 1
    assert s3_bucket.get(f"artifacts/{text_key(text)}.txt") == text.encode()


def test_finalizer_case08_output_and_error_are_written_together(s3_bucket: S3Bucket) -> None:
    output, error = "o" * 3000, "e" * 3000
    store, _ = new_store(s3_bucket)
    finalize_batch(
        [ToolResult("c", "t", (output, error))],
        config=BudgetConfig(batch_budget=1000),
        store=store,
    )
    full = output + "\n\n" + error
    assert s3_bucket.get(f"artifacts/{text_key(full)}.txt") == full.encode()


def test_finalizer_case11_duplicate_ids_get_distinct_artifacts(s3_bucket: S3Bucket) -> None:
    batch = [ToolResult("dup", "t", ("a" * 5000,)), ToolResult("dup", "t", ("b" * 5000,))]
    store, _ = new_store(s3_bucket)
    result = finalize_batch(batch, config=BudgetConfig(batch_budget=1000), store=store)
    refs = [r.persisted_output_files for r in result]
    assert refs[0] != refs[1]
    assert len(s3_bucket.objects("artifacts/")) == 2


def test_finalizer_case13_finalizing_again_is_identical(s3_bucket: S3Bucket) -> None:
    store, _ = new_store(s3_bucket)
    batch = [ToolResult("c", "t", ("z" * 9000,))]
    once = finalize_batch(batch, config=BudgetConfig(batch_budget=2000), store=store)
    twice = finalize_batch(once, config=BudgetConfig(batch_budget=2000), store=store)
    assert once == twice


def test_finalizer_case18_concurrent_finalizations_write_one_object(s3_bucket: S3Bucket) -> None:
    text = "C" * 300_000
    store, _ = new_store(s3_bucket)
    results: list[str] = []
    start = threading.Barrier(20)

    def work() -> None:
        start.wait()
        (r,) = finalize_batch(
            [ToolResult("c", "t", (text,))], config=BudgetConfig(batch_budget=10_000), store=store
        )
        results.append(r.slots[0])

    threads = [threading.Thread(target=work) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 20
    assert len(set(results)) == 1
    assert s3_bucket.objects("artifacts/") == [f"artifacts/{text_key(text)}.txt"]


def test_finalizer_case19_an_unusable_store_still_bounds(s3_bucket: S3Bucket) -> None:
    store = S3ArtifactStore("no-such-bucket-here", "artifacts")  # every write fails
    entry = ToolResult("c", "t", ("f" * 10_000,))
    (result,) = finalize_batch([entry], config=BudgetConfig(batch_budget=1000), store=store)
    assert len(result.slots[0]) <= 1000
    assert result.persisted_output_files == ()


def test_the_mcp_boundary_and_the_finalizer_share_an_s3_store(s3_bucket: S3Bucket) -> None:
    config = BudgetConfig(batch_budget=2000, artifact_store=s3_bucket.url("mcp"))
    store = store_for_config(config)
    result = {"content": [{"type": "text", "text": "m" * 200_000}], "isError": False}
    bound = bound_tool_result(result, budget=20_000, store=store)
    (ref,) = bound.refs or ()
    assert ref == f"s3://{s3_bucket.name}/mcp/{text_key('m' * 200_000)}.txt"
    bounded = bound.result["content"][0]["text"]
    # Downstream, the model request carries the bounded text: the finalizer names the
    # producer's artifact (its decision, read back from the bucket) and writes nothing.
    fresh = S3ArtifactStore(s3_bucket.name, "mcp")
    (entry,) = finalize_batch([ToolResult("c", "t", (bounded,))], config=config, store=fresh)
    assert entry.persisted_output_files == (ref,)
    assert [k for k in s3_bucket.objects() if k.endswith(".txt")] == [
        f"mcp/{text_key('m' * 200_000)}.txt"
    ]


async def test_async_requests_with_an_s3_store_are_bounded_off_the_event_loop(
    s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx2

    from budgetware.http import transport as _transport
    from budgetware.http.transport import OFFLOAD_BYTES, AsyncBudgetTransport

    threads: list[int] = []

    def recording(original: Callable[..., Any]) -> Callable[..., Any]:
        def bound(*args: Any, **kwargs: Any) -> Any:
            threads.append(threading.get_ident())
            return original(*args, **kwargs)

        return bound

    # Either is called, as a report listener is subscribed or not (OpenTelemetry is one).
    for name in ("finalize_body", "observed_finalize_body"):
        monkeypatch.setattr(_transport, name, recording(getattr(_transport, name)))
    sent: list[bytes] = []

    def reply(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.content)
        return httpx2.Response(200, json={"ok": True})

    config = BudgetConfig(batch_budget=20_000, artifact_store=s3_bucket.url("async"))
    transport = AsyncBudgetTransport(httpx2.MockTransport(reply), config=config)
    request_body = body("a" * 300_000)
    assert len(request_body) < OFFLOAD_BYTES  # on the loop with a local store
    async with httpx2.AsyncClient(transport=transport) as client:
        await client.post(URL, content=request_body)
    # The S3 calls (seconds if the endpoint hangs) ran in a worker thread.
    assert threads
    assert threading.get_ident() not in threads
    assert f"s3://{s3_bucket.name}/async/" in sent[0].decode()


class Trickle:
    """An endpoint that reads each request and answers one byte every ``TIMEOUT / 4`` s
    (each byte in time for botocore's per-read timeout), closing the connection after
    ``hold`` seconds: the status line never ends, so botocore sees a broken response, which
    it retries."""

    def __init__(self, hold: float) -> None:
        self.hold = hold
        self.requests: list[str] = []  # the request line of each request
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.server.settimeout(0.1)
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.getsockname()[1]}"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            thread = threading.Thread(target=self._answer, args=(conn,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                head = conn.recv(65536)
            except OSError:
                return
            self.requests.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
            end = time.monotonic() + self.hold
            reply = b"HTTP/1.1 2" + b"0" * 10_000
            for byte in reply:
                if self.stop.is_set() or time.monotonic() > end:
                    return
                try:
                    conn.send(bytes([byte]))
                except OSError:
                    return
                self.stop.wait(TIMEOUT / 4)

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(10)
        self.server.close()


@pytest.fixture
def trickle() -> Iterator[Callable[[float], Trickle]]:
    made: list[Trickle] = []

    def start(hold: float) -> Trickle:
        made.append(Trickle(hold))
        return made[-1]

    yield start
    for server in made:
        server.close()


def test_a_trickling_endpoint_costs_one_request_a_bounded_wait(
    s3_bucket: S3Bucket, trickle: Callable[[float], Trickle], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = trickle(60.0)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", server.endpoint)
    config = BudgetConfig(
        batch_budget=5000,
        artifact_store=s3_bucket.url("trickle"),
        artifact_store_timeout=TIMEOUT,
    )
    start = time.monotonic()
    out = json.loads(finalize_body(URL, body("s" * 100_000), config=config))
    elapsed = time.monotonic() - start
    text = out["messages"][2]["content"]
    assert len(text) <= 5000
    assert "s3://" not in text
    # botocore's timeouts are per socket read: before, the request waited for as long as
    # the server trickled (here a minute). A call's deadline is 2 x TIMEOUT + 1 s; the bound
    # here is generous (a loaded machine), not a measurement.
    assert elapsed < 10
    # The store is skipped after the missed deadline: the next request costs nothing.
    seen = len(server.requests)
    start = time.monotonic()
    out = json.loads(finalize_body(URL, body("t" * 100_000), config=config))
    assert time.monotonic() - start < 2
    assert "s3://" not in out["messages"][2]["content"]
    assert len(server.requests) == seen


def test_an_abandoned_call_sends_no_later_attempt(
    s3_bucket: S3Bucket, trickle: Callable[[float], Trickle], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server drops the connection past the call's deadline: botocore would retry it
    # then, long after the caller gave up on it.
    store = S3ArtifactStore(s3_bucket.name, "late", timeout=TIMEOUT)
    hold = store.deadline() + 0.3
    server = trickle(hold)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", server.endpoint)
    running = set(threading.enumerate())
    start = time.monotonic()
    with pytest.raises(OSError, match="no answer within"):
        store.put("late output " * 1000)
    assert time.monotonic() - start < 10
    # The dropped connection, botocore's backoff and a retry would follow, in the thread of
    # the abandoned call (the store's only sender): watched until that thread is done (the
    # server holds it until past the deadline; a retry it sent would be held as long again).
    calls = [t for t in threading.enumerate() if t.name == "budgetware-s3" and t not in running]
    assert calls
    for call in calls:
        call.join(10)
        assert not call.is_alive()
    # Each call (the count of the store before the first write, then the PUT) was sent
    # once: no attempt after its deadline.
    sent = [r for r in server.requests if "late" in r]
    assert len(sent) == len(set(sent)) >= 1, sent


def test_the_deadline_grows_with_what_a_call_moves() -> None:
    store = S3ArtifactStore("some-bucket", "p", timeout=2.0)
    assert store.deadline() == 5.0  # two attempts of 2 s, and the backoff between them
    assert store.deadline(50 * 1024 * 1024) == 55.0  # and a second per MiB


@pytest.fixture
def empty_answers() -> Iterator[str]:
    """An endpoint that answers every request 200 with no headers and no body (a broken
    proxy, an answer cut off after its status line)."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response_only(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_PUT = do_POST = do_HEAD = _answer

    with serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}"


def test_a_put_the_server_did_not_confirm_names_nothing(
    s3_bucket: S3Bucket, empty_answers: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", empty_answers)
    config = BudgetConfig(batch_budget=5000, artifact_store=s3_bucket.url("empty"))
    out = json.loads(finalize_body(URL, body("e" * 100_000), config=config))
    # botocore takes a bare 200 for a PutObject that happened; no object exists, so the
    # preview must not name one (a reference is never invented).
    text = out["messages"][2]["content"]
    assert len(text) <= 5000
    assert "s3://" not in text


class Proxy:
    """A forwarding HTTP server in front of moto for an S3-compatible store without
    conditional writes: it refuses ``If-None-Match`` (501 NotImplemented) or drops it."""

    def __init__(self, upstream: str, mode: str) -> None:
        import http.client
        import http.server
        import urllib.parse

        target = urllib.parse.urlsplit(upstream)
        self.conditional: list[str] = []

        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                if "If-None-Match" in self.headers:
                    proxy.conditional.append(self.command)
                    if mode == "refuse":
                        reply = (
                            b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>NotImplemented"
                            b"</Code><Message>not here</Message></Error>"
                        )
                        self.send_response(501)
                        self.send_header("Content-Type", "application/xml")
                        self.send_header("Content-Length", str(len(reply)))
                        self.end_headers()
                        self.wfile.write(reply)
                        return
                    headers = {k: v for k, v in headers.items() if k.lower() != "if-none-match"}
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                try:
                    conn.request(self.command, self.path, body=data, headers=headers)
                    answer = conn.getresponse()
                    payload = answer.read()
                finally:
                    conn.close()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in {"content-length", "transfer-encoding", "connection"}:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._serving = ExitStack()
        self._serving.enter_context(serving(self.server))

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self._serving.close()


@pytest.fixture
def old_server(s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch) -> Iterator[Proxy]:
    proxy = Proxy(s3_bucket.endpoint, "refuse")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", proxy.endpoint)
    yield proxy
    proxy.close()


def test_a_server_without_conditional_writes_is_written_head_then_put(
    s3_bucket: S3Bucket, old_server: Proxy
) -> None:
    store, calls = new_store(s3_bucket)
    first = "first output " * 1000
    store.put(first)
    # Refused once (501), then as before: HEAD + PUT, remembered for this store.
    assert calls.names == ["PutObject", "HeadObject", "PutObject"]
    second = "second output " * 1000
    store.put(second)
    assert calls.names[3:] == ["HeadObject", "PutObject"]
    assert old_server.conditional == ["PUT"]
    for text in (first, second):
        assert s3_bucket.get(f"artifacts/{text_key(text)}.txt") == text.encode()
    other, other_calls = new_store(s3_bucket)  # another process: reuse, no upload
    other.put(first, key=text_key(first))
    assert other_calls.names == ["PutObject", "HeadObject"]


def test_a_server_that_ignores_conditional_writes_still_names_the_right_bytes(
    s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = Proxy(s3_bucket.endpoint, "drop")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", proxy.endpoint)
    try:
        text = "the same output " * 1000
        refs = [new_store(s3_bucket)[0].put(text) for _ in range(2)]
    finally:
        proxy.close()
    # The second process wrote its (identical) bytes again: one upload too many, nothing
    # wrong named.
    assert refs[0] == refs[1]
    assert s3_bucket.objects() == [f"artifacts/{text_key(text)}.txt"]
    assert s3_bucket.get(f"artifacts/{text_key(text)}.txt") == text.encode()


def test_an_mcp_preview_carried_whole_keeps_its_s3_artifact_young(s3_bucket: S3Bucket) -> None:
    producer = S3ArtifactStore(s3_bucket.name, "young", min_age=0)
    full = "m" * 200_000
    bound = bound_tool_result(
        {"content": [{"type": "text", "text": full}]}, budget=20_000, store=producer
    )
    (ref,) = bound.refs or ()
    bounded = bound.result["content"][0]["text"]
    store = S3ArtifactStore(s3_bucket.name, "young", min_age=0)  # another process
    calls = Calls(store.client())
    config = BudgetConfig(batch_budget=100_000)
    (entry,) = finalize_batch([ToolResult("c", "t", (bounded,))], config=config, store=store)
    assert entry.slots == (bounded,)
    assert calls.names == []  # nothing on the request path
    drain()
    drain()  # the lookup, then the refresh it handed on
    assert "CopyObject" in calls.background
    assert ref == f"s3://{s3_bucket.name}/young/{text_key(full)}.txt"
