"""Run in a subprocess by test_history_processes.py: an agent process that, for each number
n read from stdin, sends the first n turns of one fixed conversation through the openai SDK
under ``budgetware.instrument()`` (settings from the environment), then prints ``sent``."""

from __future__ import annotations

import sys

import openai
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


def main() -> None:
    budgetware.instrument()
    batches = conversation()
    with openai.OpenAI(
        base_url=sys.argv[1] + "/v1", api_key=drivers.DUMMY_KEY, max_retries=0
    ) as client:
        for line in sys.stdin:
            n = int(line)
            client.chat.completions.create(
                model=drivers.OPENAI_MODEL,
                messages=_bodies.openai_chat(batches[:n])[0]["messages"],
            )
            print("sent", flush=True)


if __name__ == "__main__":
    main()
