"""Max-min fair ("water-fill") split of one budget across the slots of a batch."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["allocate", "allocate_by_priority"]


def allocate(lengths: Sequence[int], budget: int) -> list[int]:
    """Split ``budget`` across slots of the given lengths, max-min fair.

    Slots no longer than the fair share keep their length; the rest share what remains
    equally, the leftover one unit each to the earliest. Sums to ``min(budget, sum(lengths))``.
    """
    if budget < 0:
        raise ValueError("budget must not be negative")
    if any(n < 0 for n in lengths):
        raise ValueError("lengths must not be negative")
    if sum(lengths) <= budget:
        return list(lengths)
    allocation = list(lengths)
    # Shortest first: the fair share never drops when a slot below it leaves.
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
    lengths: Sequence[int],
    budget: int,
    ranks: Sequence[int],
    floors: Sequence[int],
    least: Sequence[int] = (),
) -> list[int]:
    """Split ``budget`` by priority: floors first, then rank 0 (high), 1, 2 (low) in turn.

    ``least`` (a compact preview's room) is kept by whole ranks from the highest while it
    fits; ``floors`` (``min_room``) above it likewise, the first rank that does not fit
    sharing what is left max-min fair. The rest fills rank by rank, max-min fair on each
    slot's total. Sums to ``min(budget, sum(lengths))``.
    """
    if budget < 0:
        raise ValueError("budget must not be negative")
    if sum(lengths) <= budget:
        return list(lengths)
    order = sorted(set(ranks))
    members = {rank: [i for i, r in enumerate(ranks) if r == rank] for rank in order}
    small = [min(f, n) for f, n in zip(least, lengths)] if least else [0] * len(lengths)
    floor = [0] * len(lengths)
    remaining = budget
    for rank in order:  # least: whole ranks, from the highest, while they fit
        need = sum(small[i] for i in members[rank])
        if need > remaining:
            break
        for i in members[rank]:
            floor[i] = small[i]
        remaining -= need
    for rank in order:  # min_room above it, from the highest, while there is room
        if remaining <= 0:
            break
        mine = members[rank]
        want = [max(min(floors[i], lengths[i]) - floor[i], 0) for i in mine]
        grant = want if sum(want) <= remaining else allocate(want, remaining)
        for i, extra in zip(mine, grant):
            floor[i] += extra
        remaining -= sum(grant)
    out = list(floor)
    for rank in order:
        mine = members[rank]
        want_more = sum(lengths[i] - floor[i] for i in mine)
        give = min(remaining, want_more)
        if give <= 0:
            continue
        total = sum(floor[i] for i in mine) + give
        shares = _fill([lengths[i] for i in mine], [floor[i] for i in mine], total)
        for i, share in zip(mine, shares):
            out[i] = share
        remaining -= give
    return out


def _fill(lengths: list[int], floors: list[int], total: int) -> list[int]:
    """``clamp(level, floor, length)`` per slot summing to ``total``, the leftover one unit
    each to the earliest slots that can still grow."""

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
