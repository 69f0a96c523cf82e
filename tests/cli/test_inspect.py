"""``budgetware inspect``: the page and its API on the scripted agent session
(tests/cli/conftest.py), and the page in a real headless browser (Debian's chromium)."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import openai
import pytest
from testing.agent_session import AgentSession, write_long_session

from budgetware.cli.inspect import Inspector
from budgetware.cli.report import page, page_data
from budgetware.core import observe
from budgetware.core.config import BudgetConfig
from budgetware.core.finalize import finalize_batch
from budgetware.core.models import ToolResult
from budgetware.diagnostics import sessionlog
from budgetware.diagnostics.sessionlog import read_session
from budgetware.http.instrument import instrument
from budgetware.store.local import LocalArtifactStore
from budgetware.testing import FakeProvider
from budgetware.tools import MAX_LIMIT

pytestmark = [pytest.mark.xdist_group("agent_session"), pytest.mark.sdk]


@pytest.fixture(scope="module")
def inspector(agent_session: AgentSession) -> Iterator[Inspector]:
    """The agent session's inspector, one for the module's read-only tests (stopping one
    waits for its server's half-second poll)."""
    served = Inspector(read_session(str(agent_session.path))).start()
    yield served
    served.stop()


def get(inspector: Inspector, path: str, host: str | None = None) -> tuple[int, Any, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", inspector.port, timeout=30)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", host or f"127.0.0.1:{inspector.port}")
        connection.endheaders()
        response = connection.getresponse()
        body = response.read()
        if response.getheader("Content-Type") == "application/json":
            return response.status, json.loads(body), response
        return response.status, body.decode(), response
    finally:
        connection.close()


def api(inspector: Inspector, route: str, **query: object) -> tuple[int, Any]:
    status, body, _ = get(inspector, f"/{inspector.token}/api/{route}?{urlencode(query)}")
    return status, body


def _tool_messages(body: bytes) -> list[str]:
    return [m["content"] for m in json.loads(body)["messages"] if m.get("role") == "tool"]


def test_previews_rebuilt_from_the_store_are_what_the_provider_received(
    agent_session: AgentSession, inspector: Inspector
) -> None:
    session = inspector.session
    for number, body in enumerate(agent_session.bodies):
        sent = iter(_tool_messages(body))
        batches = [session.batches[i] for i in session.requests[number]["batches"]]
        for b, batch in enumerate(batches):
            for i, result in enumerate(batch["results"]):
                text = next(sent)
                if not result["cut"]:
                    continue
                status, rebuilt = api(inspector, "preview", r=number, b=b, i=i)
                assert status == 200
                assert rebuilt["previews"] == [text]
                assert rebuilt["exact"]
        assert next(sent, None) is None


def test_previews_rebuilt_with_priorities_and_preview_settings(tmp_path: Path) -> None:
    config = BudgetConfig(
        batch_budget=6_000,
        tool_policies={"grep": "low", "logs": {"priority": "high", "min_room": 3_000}},
        preview_salient_percent=40,
        preview_tool_hint=True,
        artifact_dir=tmp_path / "artifacts",
    )
    outputs = {
        "grep": "\n".join(f"a.py:{i}: match" for i in range(2000)),
        "logs": "\n".join(
            f"line {i}" + (" ERROR disk full" if i == 900 else "") for i in range(3000)
        ),
        "ls": "x\n" * 10,
    }
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        for i, name in enumerate(outputs)
    ]
    messages: list[Any] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": calls},
    ]
    messages += [
        {"role": "tool", "tool_call_id": f"c{i}", "content": text}
        for i, text in enumerate(outputs.values())
    ]
    sessionlog.start(str(tmp_path / "sessions"))
    try:
        with FakeProvider() as fake, instrument(config=config):
            client = openai.OpenAI(base_url=fake.url + "/v1", api_key="k", max_retries=0)
            client.chat.completions.create(model="m", messages=messages)
            received = _tool_messages(fake.last.body)
    finally:
        written = sessionlog.stop()
    assert written is not None
    inspector = Inspector(read_session(os.path.dirname(written)))
    (request,) = inspector.session.requests
    (batch,) = [inspector.session.batches[i] for i in request["batches"]]
    assert [r["priority"] for r in batch["results"]] == ["low", "high", "normal"]
    assert request["preview"] == {"preview_salient_percent": 40, "preview_tool_hint": True}
    low, high, _ = batch["results"]
    assert low["cut"]
    assert high["cut"]
    assert low["room"] < high["room"]
    assert inspector.preview(0, 0, 0) == {"error": "no full output was kept of this result"}
    assert "Full output" not in received[0]  # its room was too small to name one
    rebuilt = inspector.preview(0, 0, 1)
    assert rebuilt["previews"] == [received[1]]
    assert rebuilt["exact"]
    assert "read_tool_output" in received[1]
    assert "ERROR disk full" in received[1]


def test_a_result_of_several_texts(tmp_path: Path) -> None:
    """An Anthropic tool result of two text blocks: two slots, each fitted to its room."""
    blocks = [{"type": "text", "text": f"block {n}\n" + "y" * 30_000} for n in (1, 2)]
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "dump", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": blocks}],
            },
        ],
    }
    config = BudgetConfig(batch_budget=8_000, artifact_dir=tmp_path / "artifacts")
    sessionlog.start(str(tmp_path / "sessions"))
    try:
        with FakeProvider() as fake, instrument(config=config):
            httpx.post(fake.url + "/v1/messages", json=body, timeout=30).raise_for_status()
            sent = json.loads(fake.last.body)["messages"][2]["content"][0]["content"]
    finally:
        written = sessionlog.stop()
    assert written is not None
    inspector = Inspector(read_session(os.path.dirname(written)))
    (result,) = inspector.session.batches[0]["results"]
    assert result["slots"] == [[30_008, 4_000], [30_008, 4_000]]
    rebuilt = inspector.preview(0, 0, 0)
    assert rebuilt["previews"] == [block["text"] for block in sent]
    assert rebuilt["exact"]


def test_a_result_that_was_a_producers_preview_is_said_so(tmp_path: Path) -> None:
    """A result an MCP server had cut already names its full output: the preview rebuilt
    from that output is not what was sent, and the page is told."""
    store = LocalArtifactStore(tmp_path / "artifacts")
    full = "line\n" * 20_000
    ref = store.put(full)
    given = ToolResult(
        "c1",
        "fetch",
        (f"[cut by the server. Full output: {ref}]\n" + full[:9_000],),
        persisted_output_files=(ref,),
    )
    config = BudgetConfig(batch_budget=2_000)
    after = finalize_batch([given], config=config, store=store)
    batch = observe.BatchReport("request", [given], after, 2_000, "chars", cut=1)
    sessionlog.start(str(tmp_path / "sessions"))
    try:
        sessionlog.log_request(
            observe.RequestReport(
                "openai_chat", 1, 1, 2_000, "chars", 0.0, (batch,), config=config
            )
        )
    finally:
        written = sessionlog.stop()
    assert written is not None
    inspector = Inspector(read_session(os.path.dirname(written)))
    rebuilt = inspector.preview(0, 0, 0)
    assert rebuilt["ref"] == ref
    assert rebuilt["chars"] == len(full)
    assert not rebuilt["exact"]


def test_the_page_is_refused_without_its_token_or_from_another_host(
    inspector: Inspector,
) -> None:
    token = inspector.token
    for path in ("/", "/api/session", f"/{token[:-1]}/", f"/{token}", f"/x{token}/"):
        status, body, _ = get(inspector, path)
        assert status == 403, path
        assert "forbidden" in body
        assert token not in body
    # A page on another site that resolves its name to 127.0.0.1 (DNS rebinding).
    status, _, _ = get(inspector, f"/{token}/", host=f"evil.example:{inspector.port}")
    assert status == 403
    status, html, response = get(inspector, f"/{token}/")
    assert status == 200
    assert "default-src 'none'" in response.getheader("Content-Security-Policy")
    assert response.getheader("Referrer-Policy") == "no-referrer"
    assert "<script src" not in html
    assert "<link" not in html
    status, _, _ = get(inspector, f"/{token}/", host=f"localhost:{inspector.port}")
    assert status == 200


def test_full_outputs_are_read_with_read_tool_output_limits(inspector: Inspector) -> None:
    results = [r for b in inspector.session.batches for r in b["results"]]
    refs = sorted({ref for r in results for ref in r.get("refs", ())})
    assert len(refs) == 4
    ref = refs[0]
    status, window = api(inspector, "read", ref=ref, offset=0, limit=10**9)
    assert status == 200
    assert len(window["text"]) == min(MAX_LIMIT, window["total"])
    status, found = api(inspector, "grep", ref=ref, pattern="PASSED|paid|quantize", context=99)
    assert status == 200
    assert 0 < len(found["matches"]) <= 100
    assert len(found["matches"][-1]["before"]) <= 10
    status, answer = api(inspector, "grep", ref=ref, pattern="(unclosed")
    assert status == 400
    assert "regular expression" in answer["error"]
    status, answer = api(inspector, "read", ref=ref, offset=10**9)
    assert status == 400
    assert "past the end" in answer["error"]
    # Only the outputs the session names, whatever else the store holds.
    other = str(Path(ref).with_name("0" * 64 + ".txt"))
    assert api(inspector, "read", ref=other)[0] == 404
    assert api(inspector, "request", r=99)[0] == 404
    assert api(inspector, "preview", r=1, b=0, i=1)[1] == {
        "error": "no full output was kept of this result"
    }


def test_a_session_still_running_is_read_again(
    agent_session: AgentSession, tmp_path: Path
) -> None:
    session = tmp_path / agent_session.path.name
    shutil.copytree(agent_session.path, session)
    (log,) = session.iterdir()
    served = Inspector(read_session(str(session))).start()
    try:
        assert len(api(served, "session")[1]["requests"]) == 5
        last = [line for line in log.read_text().splitlines() if '"type":"request"' in line][-1]
        with log.open("a") as file:  # the program sent one more request
            file.write(last + "\n")
        assert len(api(served, "session")[1]["requests"]) == 6
    finally:
        served.stop()


# As from a terminal: Ctrl-C interrupts (a test process may have SIGINT ignored, and a
# child inherits that).
INTERACTIVE = (
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('budgetware', run_name='__main__')"
)


def test_the_command(agent_session: AgentSession) -> None:
    command = [sys.executable, "-c", INTERACTIVE, "inspect", "--no-browser"]
    with subprocess.Popen(
        [*command, str(agent_session.path)], stdout=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            url = line.split(" at ")[1].strip()
            assert line.startswith(f"budgetware inspect: session {agent_session.path.name} at ")
            assert url.startswith("http://127.0.0.1:")
            with urllib.request.urlopen(url, timeout=30) as answer:
                assert answer.status == 200
                assert "<title>budgetware inspect</title>" in answer.read().decode()
            process.send_signal(signal.SIGINT)  # Ctrl-C
            assert process.wait(timeout=30) == 130
        finally:
            process.kill()  # a failure fails the test, never holds the worker


# --- in a real browser --------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
FLAGS = (
    "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
    "--disable-background-networking --disable-component-update --disable-sync "
    "--window-size=1400,1000"
)
SCREENSHOTS = os.environ.get("INSPECT_SCREENSHOTS")  # docs/images: docs/inspect.md says how


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("Debian's chromium and chromium-driver are not installed (scripts/browser)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in FLAGS.split():
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="budgetware-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.binary_location = CHROMIUM
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _wait(driver: Any, condition: Any, timeout: float = 15) -> Any:
    """Until ``condition``; an element the page has just drawn again is looked up again.
    Asked every 50 ms: the page answers a click within tens of milliseconds, and
    WebDriverWait's default half second left the worker idle some 3 s a run."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(
        driver,
        timeout,
        poll_frequency=0.05,
        ignored_exceptions=(StaleElementReferenceException,),
    )
    return wait.until(condition)


def _shot(driver: Any, name: str, top: str) -> None:
    """A screenshot for docs/inspect.md, with the element ``top`` at the top."""
    if SCREENSHOTS:
        driver.execute_script(f"document.getElementById({top!r}).scrollIntoView()")
        driver.save_screenshot(os.path.join(SCREENSHOTS, name))


def _load(driver: Any, url: str) -> float:
    """Open ``url``; milliseconds from navigation to the chart and table drawn."""
    from selenium.webdriver.common.by import By

    driver.get(url)
    body = _wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "body[data-loaded-ms]"))
    return float(body.get_attribute("data-loaded-ms"))


def test_the_page_in_a_browser(
    browser: Any,
    inspector: Inspector,
    agent_session: AgentSession,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    find = browser.find_element
    loaded = _load(browser, inspector.url)
    # The chart: a bar before and a bar sent per request.
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chart rect.b")) == 5
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chart rect.a")) == 5
    # and the provider's cache reads, one a response
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chart circle")) == 5
    assert "5 requests from 1 process; 4 bounded" in find(By.ID, "totals").text
    _shot(browser, "inspect-session.png", "session")
    # A request expanded from its bar: its newest batch first.
    last = browser.find_elements(By.CSS_SELECTOR, "#chart g.bar")[-1]
    ActionChains(browser).move_to_element(
        last.find_element(By.CSS_SELECTOR, "rect.b")
    ).click().perform()
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "button.show-output"))
    assert find(By.ID, "request-title").text.startswith("Request 5: openai_chat")
    cards = browser.find_elements(By.CSS_SELECTOR, ".batch")
    assert [c.find_element(By.TAG_NAME, "h3").text.split(" ·")[0] for c in cards] == [
        "Batch 4",
        "Batch 3",
        "Batch 2",
        "Batch 1",
    ]
    assert "run_tests" in cards[-1].text
    assert "whole" in cards[-1].text
    # A full output beside its preview: the failure the preview kept as a salient line.
    cards[-1].find_element(By.CSS_SELECTOR, "button.show-output").click()
    _wait(browser, lambda d: "of 276,171" in d.find_element(By.ID, "window").text)
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#salient-lines li"))
    preview = find(By.ID, "preview").text
    assert preview.startswith("[Tool output truncated: 276,171 chars")
    salient = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#salient-lines li")]
    assert salient[0] == "3001: FAILED tests/test_cart.py::test_checkout_total - AssertionError"
    assert find(By.CSS_SELECTOR, "#preview mark").text.count("\n") == 3
    assert find(By.ID, "window").text == "chars 0–20,000 of 276,171"
    _shot(browser, "inspect-request.png", "request-section")
    # Paged...
    find(By.ID, "next").click()
    _wait(
        browser, lambda d: d.find_element(By.ID, "window").text.startswith("chars 20,000–40,000")
    )
    assert "test_endpoint_00" in find(By.ID, "full").text
    # ... and searched: a match jumps to its place.
    find(By.ID, "pattern").send_keys("FAILED")
    find(By.CSS_SELECTOR, "#search button").click()
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#matches .hit"))
    assert find(By.CSS_SELECTOR, "#matches p").text == "1 match"
    find(By.CSS_SELECTOR, "#matches .hit").click()
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#full mark"))
    assert find(By.CSS_SELECTOR, "#full mark").text.startswith("FAILED tests/test_cart.py")
    # A salient line jumps to where it is in the full output.
    browser.find_elements(By.CSS_SELECTOR, "#salient-lines li")[1].click()
    _wait(browser, lambda d: "19.98" in d.find_element(By.CSS_SELECTOR, "#full mark").text)
    _shot(browser, "inspect-output.png", "output-title")
    with capsys.disabled():
        print(f"\n[inspect timing] agent session (5 requests): page drawn in {loaded:.0f} ms")


def test_a_long_session_and_the_html_report_in_a_browser(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from selenium.webdriver.common.by import By

    path = write_long_session(tmp_path / "sessions", requests=1000)
    session = read_session(path)
    served = Inspector(session).start()
    try:
        loaded = _load(browser, served.url)
        assert len(browser.find_elements(By.CSS_SELECTOR, "#chart g.bar")) == 1000
        assert len(browser.find_elements(By.CSS_SELECTOR, "#requests tbody tr")) == 50
        rows = browser.find_elements(By.CSS_SELECTOR, "#requests tbody tr")
        rows[-1].click()
        _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".batch"))
        assert len(browser.find_elements(By.CSS_SELECTOR, ".batch")) == 10  # then "more"
        assert find_text(browser, "more-batches").startswith("show 10 more of")
    finally:
        served.stop()
    report = tmp_path / "report.html"
    report.write_text(page(page_data(session, embed_batches=True)))
    started = time.perf_counter()
    from_file = _load(browser, report.as_uri())
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chart g.bar")) == 1000
    browser.find_elements(By.CSS_SELECTOR, "#requests tbody tr")[3].click()
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".batch"))
    with capsys.disabled():
        print(
            f"\n[inspect timing] 1,000 requests: served page drawn in {loaded:.0f} ms; "
            f"report --html file ({report.stat().st_size:,} bytes) drawn in {from_file:.0f} ms "
            f"({(time.perf_counter() - started) * 1000:.0f} ms to its first request shown)"
        )


def find_text(driver: Any, element_id: str) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.ID, element_id).text)
