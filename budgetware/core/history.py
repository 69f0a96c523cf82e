"""The history budget's replay: which whole tool results of a request's older batches are
masked, as a pure function of the request's batches (docs/history.md).

Request k+1 of a conversation holds request k's batches plus one: replaying them in order
takes the same steps, so it masks what request k masked until it needs a step of its own.
The prompt prefix changes only at a step, and nothing is remembered between requests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

__all__ = ["Replay", "Result", "replay"]


class Result(NamedTuple):
    """One tool result as the replay sees it."""

    size: int
    """Its size as it will be sent unmasked (after the per-batch finalizer), in the unit."""
    high: bool
    """A ``high`` priority tool's result: masked only after every other candidate."""
    masked: bool = False
    """Already a masked result's stub (an earlier budgetware sent it so): never masked again."""


class Replay(NamedTuple):
    """What the replay decided for a request."""

    masked: frozenset[tuple[int, int]]
    """(batch, result) indexes of the results this request masks."""
    before: int
    """The history total with nothing masked."""
    after: int
    """The history total with the masked results counted as their stubs."""
    new_step: bool
    """Whether the last batch took a step: the masked set grew versus the request before."""
    steps: int
    """How many steps the whole conversation took up to this request."""


def replay(
    batches: Sequence[Sequence[Result]],
    budget: int,
    keep: int,
    step: float,
    stub_size: Callable[[int, int], int],
) -> Replay:
    """Walk the batches oldest first; whenever the total of the batches so far is over
    ``budget``, mask candidates until it is at most ``(1 - step) x budget`` (or none is left).

    Candidates are the results of all but the newest ``keep`` batches so far, not yet
    masked: the non-``high`` ones oldest first, then the ``high`` ones oldest first; one
    whose stub (``stub_size(batch, result)``, asked only of candidates) is no smaller is
    passed over.
    """
    target = int(budget * (1.0 - step))
    masked: set[tuple[int, int]] = set()
    # Masked results of each tier are always a prefix of its candidates, oldest first.
    tiers: tuple[list[tuple[int, int]], list[tuple[int, int]]] = ([], [])
    taken = [0, 0]
    total = before = 0
    steps = 0
    new_step = False
    last = len(batches) - 1
    for k, batch in enumerate(batches):
        added = sum(result.size for result in batch)
        total += added
        before += added
        eligible = k - keep
        if eligible >= 0:
            for index, result in enumerate(batches[eligible]):
                if not result.masked:
                    tiers[result.high].append((eligible, index))
        if total <= budget:
            continue
        took = False
        for tier in (0, 1):
            queue = tiers[tier]
            while total > target and taken[tier] < len(queue):
                b, i = queue[taken[tier]]
                taken[tier] += 1
                size = batches[b][i].size
                stub = stub_size(b, i)
                if stub >= size:
                    continue  # masking it would not shrink the history
                masked.add((b, i))
                total -= size - stub
                took = True
        if took:
            steps += 1
            new_step = k == last
    return Replay(frozenset(masked), before, total, new_step, steps)
