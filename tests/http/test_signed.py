"""Signed (AWS SigV4) requests leave untouched, with one warning per client; anthropic
middleware bounds Bedrock requests before they are signed."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import httpx2
import pytest
from http_helpers import assert_bounded, big_results
from test_transport import chat_body
from testing.drivers import anthropic_messages

from budgetware.core.config import BudgetConfig
from budgetware.core.errors import BudgetwareWarning
from budgetware.http.instrument import instrument
from budgetware.http.transport import BudgetTransport
from budgetware.testing import FakeProvider, RecordedRequest

botocore_auth = pytest.importorskip("botocore.auth")
from botocore.awsrequest import AWSRequest  # noqa: E402
from botocore.credentials import Credentials  # noqa: E402

CREDENTIALS = Credentials("AKIDEXAMPLE", "s3cr3t")
REGION = "us-east-1"


def signed_request(url: str, body: bytes, extra: dict[str, str] | None = None) -> httpx2.Request:
    headers = {"content-type": "application/json", **(extra or {})}
    aws = AWSRequest(method="POST", url=url, data=body, headers=headers)
    botocore_auth.SigV4Auth(CREDENTIALS, "bedrock", REGION).add_auth(aws)
    return httpx2.Request("POST", url, content=body, headers=dict(aws.headers.items()))


def signature_is_valid(recorded: RecordedRequest, url_root: str) -> bool:
    """Recompute the SigV4 signature over exactly what the server received."""
    authorization = recorded.headers["authorization"]
    fields = dict(part.strip().split("=", 1) for part in authorization.split(" ", 1)[1].split(","))
    signed = fields["SignedHeaders"].split(";")
    aws = AWSRequest(
        method=recorded.method,
        url=url_root + recorded.path,
        data=recorded.body,
        headers={name: recorded.headers[name] for name in signed},
    )
    aws.context["timestamp"] = recorded.headers["x-amz-date"]
    signer = botocore_auth.SigV4Auth(CREDENTIALS, "bedrock", REGION)
    string_to_sign = signer.string_to_sign(aws, signer.canonical_request(aws))
    return bool(signer.signature(string_to_sign, aws) == fields["Signature"])


def _send_twice(client: httpx2.Client, url: str, body: bytes) -> None:
    for _ in range(2):
        client.send(signed_request(url, body))


def test_signed_request_through_a_transport_is_sent_untouched_with_one_warning(
    fake_provider: FakeProvider, config: BudgetConfig
) -> None:
    body = chat_body(big_results(3, 100_000))
    url = fake_provider.url + "/v1/chat/completions"
    transport = BudgetTransport(httpx2.HTTPTransport(), config=config)
    with warnings.catch_warnings(record=True) as caught, httpx2.Client(transport=transport) as c:
        warnings.simplefilter("always")
        _send_twice(c, url, body)
    assert [str(w.message) for w in caught if w.category is BudgetwareWarning]
    assert len([w for w in caught if w.category is BudgetwareWarning]) == 1
    assert [r.body for r in fake_provider.requests] == [body, body]
    assert all(signature_is_valid(r, fake_provider.url) for r in fake_provider.requests)


def test_signed_request_under_instrument_is_sent_untouched_with_one_warning_per_client(
    fake_provider: FakeProvider, config: BudgetConfig
) -> None:
    body = chat_body(big_results(3, 100_000))
    url = fake_provider.url + "/v1/chat/completions"
    with warnings.catch_warnings(record=True) as caught, instrument(config=config):
        warnings.simplefilter("always")
        for _ in range(2):
            with httpx2.Client() as client:
                _send_twice(client, url, body)
    found = [w for w in caught if w.category is BudgetwareWarning]
    assert len(found) == 2
    assert "middleware" in str(found[0].message)
    assert all(r.body == body for r in fake_provider.requests)
    assert all(signature_is_valid(r, fake_provider.url) for r in fake_provider.requests)


def test_signed_budgetware_header_stays_and_unsigned_one_is_removed(
    fake_provider: FakeProvider, config: BudgetConfig
) -> None:
    url = fake_provider.url + "/v1/chat/completions"
    request = signed_request(url, b"{}", {"x-budgetware-disable": "1"})
    request.headers["x-budgetware-batch-budget"] = "10"  # added after signing
    transport = BudgetTransport(httpx2.HTTPTransport(), config=config)
    with httpx2.Client(transport=transport) as client, pytest.warns(BudgetwareWarning):
        client.send(request)
    recorded = fake_provider.last
    assert recorded.headers["x-budgetware-disable"] == "1"
    assert "x-budgetware-batch-budget" not in recorded.headers
    assert signature_is_valid(recorded, fake_provider.url)


def _bedrock(base_url: str, **kwargs: Any) -> Any:
    import anthropic

    return anthropic.AnthropicBedrock(
        base_url=base_url,
        aws_access_key=CREDENTIALS.access_key,
        aws_secret_key=CREDENTIALS.secret_key,
        aws_region=REGION,
        max_retries=0,
        **kwargs,
    )


def _create(client: Any, results: list[str], **kwargs: Any) -> None:
    import anthropic

    # The fake provider has no Bedrock route: it records the request and answers 404.
    with pytest.raises(anthropic.NotFoundError):
        client.messages.create(
            model="anthropic.claude-haiku",
            max_tokens=64,
            messages=anthropic_messages(results),
            **kwargs,
        )


@pytest.mark.sdk
def test_anthropic_bedrock_request_is_sent_untouched_under_instrument(
    fake_provider: FakeProvider, config: BudgetConfig
) -> None:
    results = big_results(3, 100_000)
    with _bedrock(fake_provider.url) as client:
        _create(client, results)
        plain = fake_provider.last.body
        with instrument(config=config), pytest.warns(BudgetwareWarning, match="signed"):
            _create(client, results)
    assert fake_provider.last.body == plain
    assert signature_is_valid(fake_provider.last, fake_provider.url)


@pytest.mark.sdk
def test_anthropic_middleware_bounds_bedrock_before_signing(
    fake_provider: FakeProvider, config: BudgetConfig, artifact_dir: Path
) -> None:
    from budgetware.integrations.anthropic import budget_middleware

    results = big_results(10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no signed-request warning: nothing left to bound
        with (
            instrument(config=config),
            _bedrock(fake_provider.url, middleware=[budget_middleware(config=config)]) as client,
        ):
            _create(client, results, extra_headers={"x-budgetware-batch-budget": "50000"})
    recorded = fake_provider.last
    assert recorded.route == "/model/anthropic.claude-haiku/invoke"
    assert not [h for h in recorded.headers if h.startswith("x-budgetware")]
    assert_bounded("anthropic", json.loads(recorded.body), results, artifact_dir)
    assert signature_is_valid(recorded, fake_provider.url)
