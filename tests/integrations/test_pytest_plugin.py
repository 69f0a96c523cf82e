"""The pytest plugin users get by installing budgetware, run the way they would run it.

Each test writes a test module and runs pytest on it (``pytester``, in process): the
plugin comes from the ``pytest11`` entry point, as in a user's suite.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.sdk


@pytest.fixture(autouse=True)
def _user_ini(pytester: pytest.Pytester) -> None:
    # A user's suite as budgetware's own settings would not be: explicit, warnings as errors.
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n"
    )


HEADER = '''
import json
import openai
import pytest
import budgetware
from budgetware.testing import FakeProvider


def agent_turn(url, size=300_000, count=10):
    """One request with `count` tool results of `size` chars, as an agent would send it."""
    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
             for i in range(count)]
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": calls}]
    messages += [{"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} " + "x" * size}
                 for i in range(count)]
    client.chat.completions.create(model="m", messages=messages)


@pytest.fixture
def fake():
    with FakeProvider() as provider:
        yield provider


def sent(fake, index=-1):
    body = json.loads(fake.requests[index].body)
    return [m["content"] for m in body["messages"] if m.get("role") == "tool"]


def sent_first(fake):
    return sent(fake, 0)
'''


def test_the_capture_records_batches_and_asserts_the_budget(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
@pytest.mark.budgetware(batch_budget=20_000)
def test_agent(budgetware_capture, fake):
    agent_turn(fake.url)
    agent_turn(fake.url, size=100, count=2)
    budgetware_capture.assert_within_budget()
    first, second = budgetware_capture.requests
    assert first.bounded and not second.bounded
    (batch,) = first.batches
    assert (batch.results, batch.cut, batch.budget) == (10, 10, 20_000)
    assert batch.size_before == 3_000_020 and batch.size_after <= 20_000
    assert len(budgetware_capture.artifacts) == 10
    assert budgetware_capture.results_cut == 10
    assert first.bytes_after == len(fake.requests[0].body) < first.bytes_before
    assert sum(len(t) for t in sent_first(fake)) <= 20_000
    assert budgetware_capture.settings == {"batch_budget": 20_000}
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_capture_pairs_each_request_with_the_providers_counters(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        HEADER
        + """
def test_agent(budgetware_capture, fake):
    agent_turn(fake.url, size=3_000, count=2)
    agent_turn(fake.url, size=3_000, count=2)  # the same prompt: read from the cache
    first, second = budgetware_capture.requests
    assert first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens >= 1024
    assert second.usage.input_tokens == fake.last.usage.input_tokens
    assert budgetware_capture.usage == [first.usage, second.usage]
    assert second.usage.request is second
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_assert_within_budget_says_which_batch_is_over(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
@pytest.mark.budgetware(batch_budget=50_000)
def test_agent(budgetware_capture, fake):
    agent_turn(fake.url)
    budgetware_capture.assert_within_budget(budget=10_000)
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*tool results over budget:*",
            "*request 1 (openai_chat), batch 1: *chars sent, budget 10,000*",
        ]
    )


def test_the_capture_reports_the_history_budget_and_holds_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
def conversation(url, turns, size):
    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    messages = [{"role": "user", "content": "go"}]
    for t in range(turns):
        call = {"id": f"c{t}", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
        messages.append({"role": "assistant", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{t}", "content": f"{t} " + "x" * size})
        client.chat.completions.create(model="m", messages=messages)


@pytest.mark.budgetware(history_budget=30_000)
def test_within(budgetware_capture, fake):
    conversation(fake.url, 8, 5_000)
    budgetware_capture.assert_within_budget()
    last = budgetware_capture.requests[-1]
    assert last.history.masked >= 1 and last.history.after <= 30_000
    # The first requests are within every budget: not even read (no history report).
    assert budgetware_capture.requests[0].history is None
    assert any(r.history and r.history.new_step for r in budgetware_capture.requests)


@pytest.mark.budgetware(history_budget=30_000)
def test_over(budgetware_capture, fake):
    conversation(fake.url, 3, 20_000)
    budgetware_capture.assert_within_budget()
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*tool results over budget:*",
            "*request 3 (openai_chat): history of *chars sent, history budget 30,000*",
        ]
    )


def test_a_failing_budget_shows_the_users_line_not_the_plugins_source(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        HEADER
        + """
@pytest.mark.budgetware(batch_budget=50_000)
def test_agent(budgetware_capture, fake):
    agent_turn(fake.url)
    budgetware_capture.assert_within_budget(budget=10_000)
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    shown = result.stdout.str()
    assert ">       budgetware_capture.assert_within_budget(budget=10_000)" in shown
    assert "problems.append" not in shown  # the plugin's own source stays out of it
    assert "pytest_plugin/__init__.py" not in shown


def test_a_mistyped_setting_in_the_marker_says_what_was_meant(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
import pytest

@pytest.mark.budgetware(batch_budgett=5)
def test_typo(budgetware_capture):
    pass
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*unknown budgetware setting(s): batch_budgett (did you mean batch_budget?)*"]
    )


def test_the_marker_alone_instruments_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
@pytest.mark.budgetware(batch_budget=15_000, persist=False)
def test_marked(fake):
    assert budgetware.is_instrumented()
    agent_turn(fake.url)
    assert sum(len(t) for t in sent(fake)) <= 15_000


def test_unmarked(fake, request):
    assert not budgetware.is_instrumented()
    assert "budgetware_capture" not in request.fixturenames
    agent_turn(fake.url)
    assert sum(len(t) for t in sent(fake)) == 3_000_020
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_a_bad_setting_in_the_marker_is_an_error_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
import pytest

@pytest.mark.budgetware(batch_budget="lots")
def test_bad(budgetware_capture):
    pass

@pytest.mark.budgetware(bach_budget=5)
def test_unknown(budgetware_capture):
    pass

@pytest.mark.budgetware(5)
def test_positional(budgetware_capture):
    pass
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(
        [
            "*ConfigError: invalid budgetware setting: batch_budget*",
            "*bach_budget*",
            "*takes settings as keywords*",
        ],
        consecutive=False,
    )


def test_the_plugin_is_registered_by_installing_budgetware(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
def test_registered(pytestconfig):
    assert pytestconfig.pluginmanager.hasplugin("budgetware")
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=1)
    result = pytester.runpytest("-p", "no:cacheprovider", "--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.budgetware(**settings):*"])


def test_importing_the_plugin_imports_no_sdk_and_no_http_layer() -> None:
    code = (
        "import sys, budgetware.integrations.pytest_plugin\n"
        "heavy = ('openai', 'httpx', 'httpx2', 'pydantic', 'budgetware.http.instrument')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


# The documented example's agent sends its turn with httpx, not the openai SDK, in the two
# processes of its own that run it (the plugin bounds every httpx client alike; the SDK's
# import cost about 1 s of CPU a run, and the tests above keep the SDK).
SDK_TURN = HEADER[HEADER.index("def agent_turn(") : HEADER.index("@pytest.fixture")]
HTTPX_TURN = '''def agent_turn(url, size=300_000, count=10):
    """One request with `count` tool results of `size` chars, as an agent would send it."""
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
             for i in range(count)]
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": calls}]
    messages += [{"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} " + "x" * size}
                 for i in range(count)]
    with httpx.Client(base_url=url + "/v1", timeout=60) as client:
        client.post("/chat/completions", json={"model": "m", "messages": messages})


'''
HTTPX_HEADER = HEADER.replace("import openai\n", "import httpx\n").replace(SDK_TURN, HTTPX_TURN)
assert "openai" not in HTTPX_HEADER

DOC_EXAMPLE = (
    HTTPX_HEADER
    + """
def run_my_agent(base_url, task):
    agent_turn(base_url[: -len("/v1")])


@pytest.mark.budgetware(batch_budget=20_000)
def test_the_agent_survives_a_huge_grep(budgetware_capture):
    with FakeProvider() as provider:  # or your own recorded/mocked provider
        run_my_agent(base_url=provider.url + "/v1", task="find the failing test")

    budgetware_capture.assert_within_budget()  # every batch sent fits 20,000 chars
    assert budgetware_capture.results_cut >= 1  # the big grep was cut
    assert len(budgetware_capture.artifacts) >= 1  # and its full output was kept
"""
)


def test_the_documented_example_passes_every_run_and_writes_no_users_cache(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A user's suite: no artifact setting, the default store would be the user's cache.
    cache = pytester.path / "user-cache"
    monkeypatch.delenv("BUDGETWARE_ARTIFACT_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    pytester.makepyfile(DOC_EXAMPLE)
    # As a user runs it, in a process of its own; with budgetware's plugin (and asyncio's,
    # which the ini names) alone: the other plugins installed here are not the user's, and
    # loading them costs 0.4 s of CPU a run. The entry point is test_the_plugin_is_registered's.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    plugins = ["-p", "budgetware.integrations.pytest_plugin", "-p", "asyncio"]
    for _ in range(2):  # the second run used to find every artifact there already
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *plugins)
        result.assert_outcomes(passed=1)
    assert not cache.exists()


def test_the_capture_names_every_artifact_referenced_new_or_reused(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BUDGETWARE_ARTIFACT_DIR", raising=False)
    pytester.makepyfile(
        HEADER
        + """
@pytest.mark.budgetware(batch_budget=20_000)
def test_agent(budgetware_capture, fake):
    agent_turn(fake.url)
    agent_turn(fake.url)  # the same outputs again: their artifacts are reused
    first, second = budgetware_capture.requests
    assert len(first.batches[0].written) == 10 and second.batches[0].written == ()
    assert first.batches[0].referenced == second.batches[0].referenced
    assert len(budgetware_capture.artifacts) == 10
    assert budgetware_capture.referenced == budgetware_capture.artifacts
    directory = budgetware_capture.artifact_dir
    assert directory is not None
    assert all(ref.startswith(str(directory)) for ref in budgetware_capture.referenced)


@pytest.mark.budgetware(batch_budget=20_000, artifact_dir="/nonexistent-so-unused", persist=False)
def test_a_named_store_is_the_one_used(budgetware_capture):
    assert budgetware_capture.artifact_dir is None
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_nothing_recorded_is_not_a_pass(pytester: pytest.Pytester) -> None:
    # An agent on aiohttp (or one that never ran) sends nothing budgetware sees.
    pytester.makepyfile(
        """
import pytest

@pytest.mark.budgetware(batch_budget=20_000)
def test_silent(budgetware_capture):
    budgetware_capture.assert_within_budget()

@pytest.mark.budgetware(batch_budget=20_000)
def test_expected_silence(budgetware_capture):
    budgetware_capture.assert_within_budget(min_requests=0)
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*budgetware saw 0 request(s), expected at least 1: nothing proves the budget held*"]
    )
