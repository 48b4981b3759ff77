"""Which workers are ranks and which rank trains which partition, for the collective modes
(dgbdt.dask.collective_train).

A rank is a worker holding training rows; each partition trains on its worker's rank. Every
rank waits for the slowest at each level's all-reduce, so where Dask placed the partitions
unevenly (3 of 4 on one worker: the others wait for it) whole partitions are moved, on the
client, by giving them to another rank's task: Dask copies them there when the task starts.
Where partitions may move, the cluster's workers that hold none can be ranks too
(``rank_workers``): Dask's scheduler leaves one without partitions at times, and its GPU
would idle. The model does not depend on which rank holds a row (exact integer sums, global
row ids), nor on how many ranks there are.
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
    if not may_move(p, movable):
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


def may_move(p, movable: bool) -> bool:
    """Whether ``placed`` may move partitions (pages in memory, no memory budget)."""
    return movable and p["device_memory_budget"] is None


def rank_workers(client, p, holders, movable: bool) -> list[str]:
    """The ranks' workers, in address order: those holding training rows and, where
    ``placed`` may move partitions, the cluster's other workers that can train them (for GPU
    pages: CuPy with NCCL on a GPU). Dask leaves a worker without partitions at times (8
    parquet files read by 4 workers: 3, 3, 2 and 0), and the three others would train its
    share; the same workers also make the same ranks from fit to fit, so a notebook's next
    fit keeps its communicator (dgbdt.dask.comm_cache). Ranks that get no partition (a
    partition moves only whole) are dropped by ``used_ranks``."""
    ranks = set(holders)
    if may_move(p, movable):
        others = sorted(set(client.scheduler_info(n_workers=-1)["workers"]) - ranks)
        if others and p["device"] != "cpu":
            from .collective import nccl_status
            try:
                status = client.run(nccl_status, workers=others)
            except Exception:  # noqa: BLE001  (a worker leaving meanwhile: train without)
                status = {}
            others = [w for w in others if w in status and status[w] is None]
        ranks.update(others)
    return sorted(ranks)


def used_ranks(ranks: list[str], owners: list[int]) -> tuple[list[str], list[int]]:
    """The ranks that own a partition, in their order, and the owners renumbered to them."""
    used = sorted(set(owners))
    if len(used) == len(ranks):
        return list(ranks), list(owners)
    new = {r: i for i, r in enumerate(used)}
    return [ranks[r] for r in used], [new[o] for o in owners]


def by_rank(items, owners, n_ranks: int) -> list[list]:
    """items grouped by their owner rank, in order."""
    out: list[list] = [[] for _ in range(n_ranks)]
    for item, rank in zip(items, owners):
        out[rank].append(item)
    return out
