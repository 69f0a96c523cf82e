"""The fake provider caches prompts with each API's own rules, read back through the real SDKs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from budgetware.testing import FakeProvider, Usage

pytestmark = pytest.mark.sdk

# About 1,500 tokens of 4 bytes: over every minimum, whatever the JSON around it.
LONG = "The quick brown fox jumps over the lazy dog. " * 135
SHORT = "A short system prompt. " * 10


class Clock:
    """The injected clock: seconds that pass only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def fp(clock: Clock) -> Iterator[FakeProvider]:
    with FakeProvider(clock=clock) as provider:
        yield provider


def _step_floor(tokens: int) -> int:
    """The longest cacheable prefix of a prompt of ``tokens`` (OpenAI: 1,024, then 128s)."""
    return 0 if tokens < 1024 else 1024 + (tokens - 1024) // 128 * 128


# --- OpenAI Chat Completions and Responses --------------------------------------------------


def _chat(fp: FakeProvider, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
    with openai.OpenAI(base_url=fp.url + "/v1", api_key="k", max_retries=0) as client:
        return client.chat.completions.create(model="gpt-4o", messages=messages, **kwargs)  # type: ignore[arg-type]


def test_openai_chat_reads_the_previous_prompt_in_128_token_steps(fp: FakeProvider) -> None:
    first_turn = [{"role": "system", "content": LONG}, {"role": "user", "content": "hi"}]
    first = _chat(fp, first_turn).usage
    assert first.prompt_tokens > 1024
    assert first.prompt_tokens_details.cached_tokens == 0  # nothing cached yet
    grown = [
        *first_turn,
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "and?"},
    ]
    second = _chat(fp, grown).usage
    # The first prompt is a prefix of the second: read up to its last whole step.
    assert second.prompt_tokens_details.cached_tokens == _step_floor(first.prompt_tokens)
    assert second.prompt_tokens_details.cached_tokens % 128 == 0
    assert fp.last.usage == Usage(
        second.prompt_tokens,
        second.completion_tokens,
        cache_read_tokens=_step_floor(first.prompt_tokens),
    )
    # The same prompt again: all of it up to the last whole step.
    again = _chat(fp, grown).usage
    assert again.prompt_tokens_details.cached_tokens == _step_floor(second.prompt_tokens)


def test_openai_chat_under_the_minimum_or_a_changed_start_reads_nothing(fp: FakeProvider) -> None:
    short = [{"role": "user", "content": SHORT}]
    assert _chat(fp, short).usage.prompt_tokens < 1024
    assert _chat(fp, short).usage.prompt_tokens_details.cached_tokens == 0
    long = [{"role": "system", "content": LONG}]
    _chat(fp, long)
    changed = [{"role": "system", "content": "Now: 12:00. " + LONG}]
    assert _chat(fp, changed).usage.prompt_tokens_details.cached_tokens == 0
    # Another model has a cache of its own.
    with openai.OpenAI(base_url=fp.url + "/v1", api_key="k", max_retries=0) as client:
        other = client.chat.completions.create(model="gpt-4.1", messages=long)  # type: ignore[arg-type]
    assert other.usage is not None
    assert other.usage.prompt_tokens_details.cached_tokens == 0  # type: ignore[union-attr]


def test_openai_chat_stream_reports_cached_tokens_in_its_last_chunk(fp: FakeProvider) -> None:
    messages = [{"role": "system", "content": LONG}]
    tokens = _chat(fp, messages).usage.prompt_tokens
    chunks = list(_chat(fp, messages, stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].usage.prompt_tokens_details.cached_tokens == _step_floor(tokens)
    assert all(chunk.usage is None for chunk in chunks[:-1])


def test_openai_responses_plain_and_streamed(fp: FakeProvider) -> None:
    with openai.OpenAI(base_url=fp.url + "/v1", api_key="k", max_retries=0) as client:
        first = client.responses.create(model="gpt-5", instructions=LONG, input="hi")
        assert first.usage is not None
        assert first.usage.input_tokens_details.cached_tokens == 0
        second = client.responses.create(model="gpt-5", instructions=LONG, input="hi")
        assert second.usage is not None
        cached = second.usage.input_tokens_details.cached_tokens
        assert cached == _step_floor(first.usage.input_tokens)
        events = list(
            client.responses.create(model="gpt-5", instructions=LONG, input="hi", stream=True)
        )
    (done,) = [event for event in events if event.type == "response.completed"]
    assert done.response.usage.input_tokens_details.cached_tokens == cached


def test_caching_can_be_turned_off() -> None:
    with FakeProvider(caching=False) as fp:
        messages = [{"role": "system", "content": LONG}]
        _chat(fp, messages)
        assert _chat(fp, messages).usage.prompt_tokens_details.cached_tokens == 0
        assert fp.last.usage is not None
        assert fp.last.usage.cache_read_tokens == 0


def test_each_fake_provider_is_an_organization_of_its_own(fp: FakeProvider) -> None:
    messages = [{"role": "system", "content": LONG}]
    _chat(fp, messages)
    with FakeProvider() as other:
        assert _chat(other, messages).usage.prompt_tokens_details.cached_tokens == 0


# --- Anthropic Messages --------------------------------------------------------------------


def _system(text: str = LONG, **control: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral", **control}}]


def _messages(fp: FakeProvider, **kwargs: Any) -> Any:
    kwargs.setdefault("messages", [{"role": "user", "content": "hi"}])
    with anthropic.Anthropic(base_url=fp.url, api_key="k", max_retries=0) as client:
        return client.messages.create(model="claude-sonnet-4-5", max_tokens=10, **kwargs)


def _tokens(fp: FakeProvider, **kwargs: Any) -> int:
    """The prompt's length in tokens, as the fake's count_tokens answers."""
    with anthropic.Anthropic(base_url=fp.url, api_key="k", max_retries=0) as client:
        return client.messages.count_tokens(model="claude-sonnet-4-5", **kwargs).input_tokens


def test_anthropic_writes_then_reads_the_prefix_up_to_a_breakpoint(fp: FakeProvider) -> None:
    prefix = _tokens(fp, system=_system(), messages=[])
    total = _tokens(fp, system=_system(), messages=[{"role": "user", "content": "hi"}])
    first = _messages(fp, system=_system()).usage
    assert (first.cache_read_input_tokens, first.cache_creation_input_tokens) == (0, prefix)
    assert first.input_tokens == total - prefix  # after the breakpoint: not cached
    second = _messages(fp, system=_system()).usage
    assert (second.cache_read_input_tokens, second.cache_creation_input_tokens) == (prefix, 0)
    assert second.input_tokens == total - prefix
    assert fp.last.usage == Usage(total, second.output_tokens, cache_read_tokens=prefix)
    # The order is tools, system, messages: a new tool before the system misses.
    tool = {"name": "grep", "description": "search", "input_schema": {"type": "object"}}
    third = _messages(fp, system=_system(), tools=[tool]).usage
    assert third.cache_read_input_tokens == 0


def test_anthropic_caches_nothing_under_the_minimum_or_without_a_breakpoint(
    fp: FakeProvider,
) -> None:
    for _ in range(2):
        usage = _messages(fp, system=_system(SHORT)).usage
        assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (0, 0)
    for _ in range(2):
        usage = _messages(fp, system=LONG).usage
        assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (0, 0)


def _turn(i: int, *, cached: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": f"turn {i}"}
    if cached:
        block["cache_control"] = {"type": "ephemeral"}
    return {"role": "user" if i % 2 == 0 else "assistant", "content": [block]}


def test_anthropic_looks_back_20_blocks_for_an_earlier_breakpoint(fp: FakeProvider) -> None:
    # Turn after turn the breakpoint moves to the last block, as agents do.
    first = [_turn(0, cached=True)]
    written = _messages(fp, system=LONG, messages=first).usage.cache_creation_input_tokens
    assert written == _tokens(fp, system=LONG, messages=first)
    near = [_turn(0), *(_turn(i) for i in range(1, 20)), _turn(20, cached=True)]
    usage = _messages(fp, system=LONG, messages=near).usage
    assert usage.cache_read_input_tokens == written  # 20 blocks back: found
    total = _tokens(fp, system=LONG, messages=near)
    assert usage.cache_creation_input_tokens == total - written
    assert usage.input_tokens == 0
    # 21 blocks after the last written one: out of reach, unless a breakpoint is nearer.
    far = [*near[:-1], _turn(20), *(_turn(i) for i in range(21, 41)), _turn(41, cached=True)]
    assert _messages(fp, system=LONG, messages=far).usage.cache_read_input_tokens == 0
    far[30] = _turn(30, cached=True)
    fp_usage = _messages(fp, system=LONG, messages=[*far[:-1], _turn(41), _turn(42, cached=True)])
    assert fp_usage.usage.cache_read_input_tokens == _tokens(fp, system=LONG, messages=far)


def test_anthropic_at_most_4_breakpoints_and_a_known_ttl(fp: FakeProvider) -> None:
    five = [_turn(i, cached=True) for i in range(5)]
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4 blocks"):
        _messages(fp, system=LONG, messages=five)
    with pytest.raises(anthropic.BadRequestError, match="ttl"):
        _messages(fp, system=_system(ttl="10m"))


def test_anthropic_entries_live_5_minutes_refreshed_by_a_hit(
    fp: FakeProvider, clock: Clock
) -> None:
    prefix = _tokens(fp, system=_system(), messages=[])
    _messages(fp, system=_system())
    clock.now += 299
    assert _messages(fp, system=_system()).usage.cache_read_input_tokens == prefix
    clock.now += 299  # 598 s after the write, 299 s after the hit that refreshed it
    assert _messages(fp, system=_system()).usage.cache_read_input_tokens == prefix
    clock.now += 301
    expired = _messages(fp, system=_system()).usage
    assert (expired.cache_read_input_tokens, expired.cache_creation_input_tokens) == (0, prefix)


def test_anthropic_one_hour_ttl(fp: FakeProvider, clock: Clock) -> None:
    prefix = _tokens(fp, system=_system(ttl="1h"), messages=[])
    _messages(fp, system=_system(ttl="1h"))
    clock.now += 3000
    assert _messages(fp, system=_system(ttl="1h")).usage.cache_read_input_tokens == prefix
    clock.now += 3601
    assert _messages(fp, system=_system(ttl="1h")).usage.cache_read_input_tokens == 0


def test_anthropic_automatic_caching_marks_the_last_block(fp: FakeProvider) -> None:
    messages = [{"role": "user", "content": LONG}]
    total = _tokens(fp, messages=messages)
    auto = {"extra_body": {"cache_control": {"type": "ephemeral"}}, "messages": messages}
    assert _messages(fp, **auto).usage.cache_creation_input_tokens == total
    usage = _messages(fp, **auto).usage
    assert (usage.cache_read_input_tokens, usage.input_tokens) == (total, 0)


def test_anthropic_stream_carries_the_counters_in_message_start(fp: FakeProvider) -> None:
    prefix = _tokens(fp, system=_system(), messages=[])
    _messages(fp, system=_system())
    client = anthropic.Anthropic(base_url=fp.url, api_key="k", max_retries=0)
    with (
        client,
        client.messages.stream(
            model="claude-sonnet-4-5",
            max_tokens=10,
            system=_system(),  # type: ignore[arg-type]
            messages=[{"role": "user", "content": "hi"}],
        ) as stream,
    ):
        events = list(stream)
        final = stream.get_final_message()
    start = events[0]
    assert start.type == "message_start"
    assert start.message.usage.cache_read_input_tokens == prefix
    assert final.usage.cache_read_input_tokens == prefix


# --- Gemini --------------------------------------------------------------------------------


def test_gemini_implicit_caching_plain_and_streamed(fp: FakeProvider) -> None:
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=fp.url))
    config = types.GenerateContentConfig(system_instruction=LONG)
    try:
        first = client.models.generate_content(
            model="gemini-2.5-flash", contents="hi", config=config
        )
        assert first.usage_metadata is not None
        assert first.usage_metadata.cached_content_token_count is None  # absent when nothing
        tokens = first.usage_metadata.prompt_token_count
        assert tokens is not None
        second = client.models.generate_content(
            model="gemini-2.5-flash", contents="hi", config=config
        )
        assert second.usage_metadata is not None
        assert second.usage_metadata.cached_content_token_count == _step_floor(tokens)
        chunks = list(
            client.models.generate_content_stream(
                model="gemini-2.5-flash", contents="hi", config=config
            )
        )
    finally:
        client.close()
    last = chunks[-1].usage_metadata
    assert last is not None
    assert last.cached_content_token_count == _step_floor(tokens)
