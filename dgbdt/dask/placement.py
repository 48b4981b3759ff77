"""Which rank trains which partition, for the collective modes (dgbdt.dask.collective_train).

A rank is a worker holding training rows; each partition trains on its worker's rank. Every
rank waits for the slowest at each level's all-reduce, so where Dask placed the partitions
unevenly (3 of 4 on one worker: the others wait for it) whole partitions are moved, on the
client, by giving them to another rank's task: Dask copies them there when the task starts.
The model does not depend on which rank holds a row (exact integer sums, global row ids).
"""
from __future__ import annotations

import logging

logger = logging.getLogger("dgbdt.dask")


def assign(workers: list[str], ranks: list[str]) -> list[int]:
    """The rank of each partition: its worker's, or round-robin for partitions elsewhere."""
    index = {w: r for r, w in enumerate(ranks)}
    out, k = [], 0
    for w in workers:
        if w in index:
            out.append(index[w])
        else:
            out.append(k % len(ranks))
            k += 1
    return out


#: a rank whose rows exceed the ranks' mean by more than this fraction gets whole partitions
#: moved to the rank with the fewest (``balanced``): every rank waits for the slowest at each
#: level's all-reduce, so a 3:1 placement trains at the speed of the rank holding three
BALANCE_SLACK = 0.1


def balanced(owners: list[int], rows: list[int], n_ranks: int) -> list[int]:
    """The owners (rank of each partition) with whole partitions moved, one at a time, from
    the rank holding the most rows to the one holding the fewest, while the most is more than
    BALANCE_SLACK above the mean and a partition smaller than their gap is there to move (the
    one leaving the pair closest to even; ties by position). Every move lowers the sum of
    squared loads, so this ends; the same placement gives the same owners."""
    owners = list(owners)
    load = [0] * n_ranks
    for o, n in zip(owners, rows):
        load[o] += int(n)
    mean = sum(load) / max(n_ranks, 1)
    while n_ranks > 1:
        hi = max(range(n_ranks), key=lambda r: (load[r], -r))
        lo = min(range(n_ranks), key=lambda r: (load[r], r))
        gap = load[hi] - load[lo]
        movable = [i for i, o in enumerate(owners) if o == hi and 0 < rows[i] < gap]
        if load[hi] <= mean * (1 + BALANCE_SLACK) or not movable:
            break
        i = min(movable, key=lambda j: (abs(gap - 2 * int(rows[j])), j))
        owners[i] = lo
        load[hi] -= int(rows[i])
        load[lo] += int(rows[i])
    return owners


def placed(p, rows: list[int], workers: list[str], ranks: list[str], movable: bool,
           what: str) -> list[int]:
    """Each partition's rank: its worker's, balanced (``balanced``) where the partitions may
    travel (``movable``, and no memory budget: pages in memory, on the host or a GPU, are
    plain arrays that Dask copies; pages spilled to a worker's disk or streamed to its GPU
    stay with their store)."""
    owners = assign(workers, ranks)
    if not movable or p["device_memory_budget"] is not None:
        return owners
    moved = balanced(owners, rows, len(ranks))
    if moved != owners:
        def per_rank(o):
            return [sum(n for n, r in zip(rows, o) if r == k) for k in range(len(ranks))]
        logger.info("dgbdt.dask.train: %s: %d of %d partitions go to another worker to balance "
                    "the ranks' rows: %s -> %s", what,
                    sum(a != b for a, b in zip(owners, moved)), len(owners), per_rank(owners),
                    per_rank(moved))
    return moved


def by_rank(items, owners, n_ranks: int) -> list[list]:
    """items grouped by their owner rank, in order."""
    out: list[list] = [[] for _ in range(n_ranks)]
    for item, rank in zip(items, owners):
        out[rank].append(item)
    return out
