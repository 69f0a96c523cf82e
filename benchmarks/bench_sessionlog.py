"""The session log (``budgetware run``'s default) and ``budgetware inspect``'s page.

1. What the log costs a request. The same request through ``BudgetTransport`` over an
   in-memory transport (no network), with the log off (nothing subscribed: no report is
   built) and on (the report built and queued; the background thread writes it meanwhile,
   as in a program), interleaved round by round; the median paired ratio on / off, with an
   A/A row for the noise floor. Then the writer's own work per request (the line built and
   written, on the background thread), timed alone, beside the request it logs.
2. What the page costs: a 1,000-request session (each request carrying its last 20 turns),
   written through the real log; the server's answer for the page (the session read and
   summarized); the page loaded in headless chromium (Debian's, when installed) until its
   chart and table are drawn, served and as ``report --html``'s file.

Run: ``.venv/bin/python benchmarks/bench_sessionlog.py``.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _harness import print_table
from bench_telemetry import chat_body, sender
from testing.agent_session import write_long_session

from budgetware.cli.inspect import Inspector
from budgetware.cli.report import page, page_data
from budgetware.core import observe
from budgetware.core.config import BudgetConfig
from budgetware.diagnostics import sessionlog
from budgetware.diagnostics.sessionlog import read_session


def compare(
    fn: Callable[[], object], on_a: bool, on_b: bool, rounds: int, number: int
) -> tuple[float, float]:
    """(best seconds per call with ``on_a``, median paired ratio a / b)."""
    sides = [(on_a, "a"), (on_b, "b")]
    measured: dict[str, list[float]] = {"a": [], "b": []}
    gc.collect()
    gc.disable()
    try:
        for round_ in range(rounds):
            for on, side in sides if round_ % 2 == 0 else reversed(sides):
                subscription = observe.subscribe(request=sessionlog.log_request) if on else None
                start = time.perf_counter()
                for _ in range(number):
                    fn()
                measured[side].append((time.perf_counter() - start) / number)
                if subscription is not None:
                    subscription.close()
    finally:
        gc.enable()
    ratios = [a / b for a, b in zip(measured["a"], measured["b"])]
    return min(measured["a"]), statistics.median(ratios)


def writer_share(send: Callable[[], object]) -> tuple[float, float]:
    """(seconds the writer takes per request, seconds of the request with the log off)."""
    captured: list[observe.RequestReport] = []
    with observe.subscribe(request=captured.append):
        send()
    report = captured[-1]
    log = sessionlog._LOG
    assert log is not None
    samples = []
    for _ in range(21):
        start = time.perf_counter()
        for _ in range(200):
            log._write_request(time.time(), report)
        samples.append((time.perf_counter() - start) / 200)
    request = []
    for _ in range(31):
        start = time.perf_counter()
        send()
        request.append(time.perf_counter() - start)
    return statistics.median(samples), statistics.median(request)


def request_costs(tmp: Path) -> list[tuple[str, ...]]:
    sessionlog.start(str(tmp / "sessions"))
    assert sessionlog._SUBSCRIPTION is not None
    sessionlog._SUBSCRIPTION.close()  # the rounds subscribe and unsubscribe themselves
    config = BudgetConfig(batch_budget=200_000, artifact_dir=tmp / "artifacts")
    big = sender(chat_body(10, 300_000), config)  # 3 MB, every batch over budget
    small = sender(chat_body(3, 200), config)  # 1 KB, under budget
    big()
    rows: list[tuple[str, ...]] = []
    _, aa = compare(big, False, False, rounds=101, number=2)
    rows.append(("noise floor: off vs off, 3 MB", "", f"{aa:.4f}"))
    for name, fn, rounds, number in (
        ("bounded 3 MB request (10 x 300 KB)", big, 101, 2),
        ("small request (3 tool results, 1 KB)", small, 101, 200),
    ):
        best, ratio = compare(fn, True, False, rounds=rounds, number=number)
        rows.append((name, f"{best * 1e6:,.1f} us", f"{ratio:.4f}"))
    for name, fn in (("3 MB", big), ("1 KB", small)):
        writing, request = writer_share(fn)
        rows.append(
            (
                f"the writer alone, {name} request",
                f"{writing * 1e6:,.1f} us",
                f"{1 + writing / request:.4f}",
            )
        )
    sessionlog.stop()
    return rows


def page_costs(tmp: Path) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    start = time.perf_counter()
    path = write_long_session(tmp / "long", requests=1000)
    written = time.perf_counter() - start
    size = sum(f.stat().st_size for f in Path(path).iterdir())
    rows.append(
        ("write 1,000 requests (20 turns each)", f"{written * 1e3:,.0f} ms", f"{size:,} bytes")
    )
    start = time.perf_counter()
    session = read_session(path)
    answer = json.dumps(page_data(session, embed_batches=False))
    served = time.perf_counter() - start
    rows.append(
        ("read + summarize for the page", f"{served * 1e3:,.0f} ms", f"{len(answer):,} bytes")
    )
    report = tmp / "report.html"
    start = time.perf_counter()
    report.write_text(page(page_data(session, embed_batches=True)))
    rows.append(
        (
            "report --html",
            f"{(time.perf_counter() - start) * 1e3:,.0f} ms",
            f"{report.stat().st_size:,} bytes",
        )
    )
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        rows.append(("page in chromium", "not installed (scripts/browser)", ""))
        return rows
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    flags = "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
    flags += "--disable-background-networking --disable-component-update --disable-sync"
    for flag in flags.split():
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp / 'profile'}")
    options.binary_location = chromium
    browser = webdriver.Chrome(options=options, service=Service(driver))
    inspector = Inspector(session).start()
    try:
        for name, url in (("served page", inspector.url), ("report --html file", report.as_uri())):
            loads = []
            for _ in range(5):
                browser.get("about:blank")
                browser.get(url)
                body = WebDriverWait(browser, 30).until(
                    lambda d: d.find_element(By.CSS_SELECTOR, "body[data-loaded-ms]")
                )
                loads.append(float(body.get_attribute("data-loaded-ms")))
            rows.append(
                (
                    f"{name}: navigation to chart and table drawn",
                    f"{statistics.median(loads):,.0f} ms",
                    "median of 5",
                )
            )
    finally:
        browser.quit()
        inspector.stop()
    return rows


def main() -> int:
    logging.getLogger("budgetware").setLevel(logging.WARNING)
    assert not observe.watching(), "something already listens: this would not measure off"
    tmp = Path(tempfile.mkdtemp(prefix="budgetware-bench-sessionlog-"))
    try:
        print_table(
            "session log on vs off (BudgetTransport, in-memory transport)",
            request_costs(tmp),
            ("case", "on, best", "on / off (median)"),
        )
        print_table(
            "a 1,000-request session in budgetware inspect", page_costs(tmp), ("step", "time", "")
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    raise SystemExit(main())
