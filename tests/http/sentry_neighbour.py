"""Run in a subprocess by test_neighbours.py: sentry-sdk's httpx integration beside
budgetware's instrument(), in the order given, then uninstrument().

sentry-sdk replaces ``httpx.Client.send`` once per process (its ``setup_once``) and cannot
be taken off again, so each order gets a process of its own. Prints one JSON line: the
sentry spans of each send, and what ``httpx.Client.send`` is at the end.

    python sentry_neighbour.py ORDER PROVIDER_URL ARTIFACT_DIR
"""

from __future__ import annotations

import json
import sys
from typing import Any, ClassVar

import httpx
import sentry_sdk
from sentry_sdk.envelope import Envelope
from sentry_sdk.integrations.httpx import HttpxIntegration
from sentry_sdk.transport import Transport

from budgetware.core.config import BudgetConfig
from budgetware.http.instrument import instrument, uninstrument


class Capture(Transport):
    """Keeps every envelope in memory: nothing leaves the process."""

    envelopes: ClassVar[list[Envelope]] = []

    def capture_envelope(self, envelope: Envelope) -> None:
        self.envelopes.append(envelope)


def _http_spans() -> int:
    spans = 0
    for envelope in Capture.envelopes:
        for item in envelope.items:
            payload = item.payload.json
            if item.type == "transaction" and payload is not None:
                spans += sum(1 for s in payload.get("spans", []) if s.get("op") == "http.client")
    Capture.envelopes.clear()
    return spans


def _send(url: str, results: list[str]) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    calls = [{"id": f"c{i}", "type": "function"} for i in range(len(results))]
    messages.append({"role": "assistant", "tool_calls": calls})
    messages += [
        {"role": "tool", "tool_call_id": f"c{i}", "content": r} for i, r in enumerate(results)
    ]
    with sentry_sdk.start_transaction(name="agent turn"), httpx.Client() as client:
        client.post(url + "/v1/chat/completions", json={"model": "m", "messages": messages})


def main(order: str, url: str, artifact_dir: str) -> None:
    original = httpx.Client.__dict__["send"]

    def sentry_on() -> None:
        sentry_sdk.init(
            dsn="http://public@127.0.0.1:9/1",
            transport=Capture,
            traces_sample_rate=1.0,
            default_integrations=False,
            integrations=[HttpxIntegration()],
        )

    config = BudgetConfig(batch_budget=20_000, artifact_dir=artifact_dir)
    if order == "sentry_first":
        sentry_on()
        instrument(config=config)
    else:
        instrument(config=config)
        sentry_on()
    results = [c * 50_000 for c in "abc"]
    _send(url, results)
    spans_instrumented = _http_spans()
    uninstrument()
    _send(url, results)
    spans_after = _http_spans()
    send = httpx.Client.__dict__["send"]
    print(
        json.dumps(
            {
                "spans_instrumented": spans_instrumented,
                "spans_after": spans_after,
                "send_is_sentrys": "sentry_sdk" in getattr(send, "__code__", send).co_filename,
                "send_is_original": send is original,
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:4])
