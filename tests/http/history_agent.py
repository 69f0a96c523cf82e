"""Run in a subprocess by test_history_processes.py: an agent process that, for each number
n read from stdin, sends the first n turns of one fixed conversation (an OpenAI chat request,
with httpx: what is masked depends on the request alone, not on the client) under
``budgetware.instrument()`` (settings from the environment), then prints ``sent``."""

from __future__ import annotations

import sys

import httpx
from testing import drivers
from wire import _bodies

import budgetware

TURNS = 16


def conversation() -> list[list[str]]:
    """The same turns in every process: each a command's output of 1,000 to 7,000 chars."""
    return [
        [
            f"$ make test-{t}-{i}\n" + "".join(f"line {n}: result {t}.{i}\n" for n in range(size))
            for i, size in enumerate((40 + 37 * t % 200, 60 + 53 * t % 250)[: 1 + t % 2])
        ]
        for t in range(TURNS)
    ]


def send(client: httpx.Client, url: str, n: int) -> None:
    """Turns 1 to n of the conversation, as one chat completions request."""
    messages = _bodies.openai_chat(conversation()[:n])[0]["messages"]
    answer = client.post(
        url + "/v1/chat/completions",
        json={"model": drivers.OPENAI_MODEL, "messages": messages},
        headers={"authorization": f"Bearer {drivers.DUMMY_KEY}"},
    )
    answer.raise_for_status()


def main() -> None:
    budgetware.instrument()
    with httpx.Client(timeout=60) as client:
        for line in sys.stdin:
            send(client, sys.argv[1], int(line))
            print("sent", flush=True)


if __name__ == "__main__":
    main()
