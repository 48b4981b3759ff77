"""Tree-reduce over the Dask task graph.

``tree_reduce`` combines futures in groups of ``fan_in`` until one remains: ceil(log_k P) task
hops for P inputs. With ``final``, the last group is combined by ``final`` instead, so a step
that follows the reduction (split evaluation after merging a level's histograms) costs no hop
of its own. Inputs are integer histograms or exact summaries, so the grouping never changes
the result.
"""
from __future__ import annotations

import uuid


def tree_reduce(client, futures: list, combine, fan_in: int, name: str, final=None,
                final_args: tuple = (), priority: int = 0, workers: list | None = None):
    """Reduce ``futures`` with ``combine(*group)``; the root runs ``final(*final_args, *group)``.

    Task keys read ``{name}-r{depth}-{i}-{token}`` so the dashboard shows the algorithm.
    ``priority`` (Dask's: higher runs first) above the inputs' lets a group combine as soon as
    its inputs exist instead of after every input task: the inputs then do not all wait in
    memory at once (the sketch's summaries, a few MB each per partition).
    ``workers`` (the worker computing each input, where known) makes the first level's groups
    one worker's inputs each, combined there: nothing travels before the root, and each
    worker's group runs as soon as its own inputs are done, beside the other workers'.
    """
    if fan_in < 2:
        raise ValueError(f"fan_in must be >= 2; got {fan_in}")
    token = uuid.uuid4().hex[:8]
    level = list(futures)
    depth = 0
    if workers is not None:
        local = _by_worker(level, workers, fan_in)
        if len(local) > 1:      # one group: the root below combines it without a hop more
            level = [client.submit(combine, *g, key=f"{name}-w{i}-{token}", workers=[w],
                                   allow_other_workers=True, priority=priority)
                     if len(g) > 1 else g[0] for i, (w, g) in enumerate(local)]
    while True:
        groups = [level[i:i + fan_in] for i in range(0, len(level), fan_in)]
        if len(groups) == 1:
            if final is None:
                if len(level) == 1:
                    return level[0]
                return client.submit(combine, *level, key=f"{name}-root-{token}",
                                     priority=priority)
            return client.submit(final, *final_args, *level, key=f"{name}-root-{token}",
                                 priority=priority)
        level = [client.submit(combine, *g, key=f"{name}-r{depth}-{i}-{token}",
                               priority=priority)
                 if len(g) > 1 else g[0] for i, g in enumerate(groups)]
        depth += 1


def by_worker(items, workers) -> dict:
    """items grouped by the worker holding each, in order of first appearance."""
    out: dict = {}
    for item, w in zip(items, workers):
        out.setdefault(w, []).append(item)
    return out


def _by_worker(futures: list, workers: list, fan_in: int) -> list[tuple]:
    """(worker, group) pairs: each worker's futures in their order, in groups of at most
    ``fan_in``; workers in the order of their first input."""
    return [(w, fs[i:i + fan_in]) for w, fs in by_worker(futures, workers).items()
            for i in range(0, len(fs), fan_in)]
