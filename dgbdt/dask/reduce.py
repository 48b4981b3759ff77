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
                final_args: tuple = (), priority: int = 0):
    """Reduce ``futures`` with ``combine(*group)``; the root runs ``final(*final_args, *group)``.

    Task keys read ``{name}-r{depth}-{i}-{token}`` so the dashboard shows the algorithm.
    ``priority`` (Dask's: higher runs first) above the inputs' lets a group combine as soon as
    its inputs exist instead of after every input task: the inputs then do not all wait in
    memory at once (the sketch's summaries, a few MB each per partition).
    """
    if fan_in < 2:
        raise ValueError(f"fan_in must be >= 2; got {fan_in}")
    token = uuid.uuid4().hex[:8]
    level = list(futures)
    depth = 0
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
