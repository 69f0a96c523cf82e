"""Max-min fair ("water-fill") split of one budget across the slots of a batch."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["allocate", "allocate_by_priority"]


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


def allocate_by_priority(
    lengths: Sequence[int], budget: int, ranks: Sequence[int], floors: Sequence[int]
) -> list[int]:
    """Split ``budget`` by priority: floors first, then rank 0 (high), 1, 2 (low) in turn.

    Every slot first gets its floor (``min(floor, length)``; the floors share the budget
    max-min fair if even they do not fit). What is left goes to the slots of the highest
    rank up to their full lengths, then to the next rank, and so on; within a rank the room
    is max-min fair on the slots' totals, so a slot's floor counts toward its share. With
    one rank and no floors this is ``allocate``. The result sums to
    ``min(budget, sum(lengths))`` and depends only on the arguments.
    """
    if budget < 0:
        raise ValueError("budget must not be negative")
    if sum(lengths) <= budget:
        return list(lengths)
    floor = [min(f, n) for f, n in zip(floors, lengths)]
    if sum(floor) >= budget:
        return allocate(floor, budget)
    out = list(floor)
    remaining = budget - sum(floor)
    for rank in sorted(set(ranks)):
        members = [i for i, r in enumerate(ranks) if r == rank]
        want = sum(lengths[i] - floor[i] for i in members)
        give = min(remaining, want)
        if give <= 0:
            continue
        total = sum(floor[i] for i in members) + give
        shares = _fill([lengths[i] for i in members], [floor[i] for i in members], total)
        for i, share in zip(members, shares):
            out[i] = share
        remaining -= give
    return out


def _fill(lengths: list[int], floors: list[int], total: int) -> list[int]:
    """Max-min fair on totals with lower bounds: ``clamp(level, floor, length)`` summing to
    ``total``, the leftover one unit each to the earliest slots that can still grow."""

    def at(level: int) -> int:
        return sum(min(max(level, f), n) for f, n in zip(floors, lengths))

    low, high = 0, max(lengths, default=0)
    while low < high:  # the largest level whose sum does not exceed the total
        mid = (low + high + 1) // 2
        if at(mid) <= total:
            low = mid
        else:
            high = mid - 1
    out = [min(max(low, f), n) for f, n in zip(floors, lengths)]
    leftover = total - sum(out)
    for i, (f, n) in enumerate(zip(floors, lengths)):
        if leftover <= 0:
            break
        if f <= low < n:
            out[i] += 1
            leftover -= 1
    return out
