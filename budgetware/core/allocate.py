"""Max-min fair ("water-fill") split of one budget across the slots of a batch."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["allocate"]


def allocate(lengths: Sequence[int], budget: int) -> list[int]:
    """Split ``budget`` across slots of the given lengths, max-min fair.

    Every slot no longer than the current fair share keeps its full length; the rest share
    what remains equally, the leftover going one unit each to the earliest of them. The
    result depends only on the lengths and their order, and sums to
    ``min(budget, sum(lengths))``.
    """
    if budget < 0:
        raise ValueError("budget must not be negative")
    if any(n < 0 for n in lengths):
        raise ValueError("lengths must not be negative")
    if sum(lengths) <= budget:
        return list(lengths)
    allocation = list(lengths)
    # Shortest first: satisfying slots one at a time in this order is the same as the
    # round-by-round definition, because the fair share never drops when a slot no longer
    # than it leaves the active set.
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    remaining = budget
    active = len(order)
    k = 0
    while k < len(order) and lengths[order[k]] <= remaining // (active - k):
        remaining -= lengths[order[k]]
        k += 1
    rest = sorted(order[k:])
    share, leftover = divmod(remaining, len(rest))
    for rank, i in enumerate(rest):
        allocation[i] = share + (1 if rank < leftover else 0)
    return allocation
