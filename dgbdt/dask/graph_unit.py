"""Graph mode's state on a worker: the ``WorkerUnit`` (a LocalSeam over the worker's shards and
its copy of the tree in growth) and the level merge every unit does alike (dgbdt.dask.graph
submits the tasks; dgbdt.dask.graph_leaves and dgbdt.dask.graph_gradients hold the hops a
tree's leaves and a round's gradients add)."""
from __future__ import annotations

import contextlib

from ..backends.device import array_module, device_scope
from ..objectives.custom import objective_on
from ..engine.seam import LocalSeam
from ..tree.linear_growth import level_payload, merged_level
from .shards import local_shards
from .worker import training_task


class WorkerUnit:
    """One worker's share of a graph-mode training (see dgbdt.dask.graph)."""

    def __init__(self, seam: LocalSeam):
        self.seam = seam
        self.growth = None
        self.trees: list = []       # the trees finished here, in order (the same on every unit)
        self.parents = None         # the previous level's merged histograms (every worker's)
        self.leaf_request = None    # a linear tree's FinishRequest while its leaves are summed
        self.descent = None         # a quantile tree's (FinishRequest, QuantileDescent)
        self.timers = {"gradients": 0.0, "split_evaluation": 0.0}

    @property
    def be(self):
        return self.seam.shards[0].be


@contextlib.contextmanager
def on(unit: WorkerUnit, nthread):
    """The context of a unit's task: its thread count and device."""
    with training_task(nthread, whole_training=False), device_scope(unit.be):
        yield


def summed(parts):
    """Every worker's partials (None: nothing from that worker) summed in worker order."""
    total = None
    for p in parts:
        if p is None:
            continue
        if total is None:
            total = p.copy()
        else:
            total += array_module(total).asarray(p)
    return total


def merged(unit: WorkerUnit, smalls):
    """The merged histograms [small + large, S, 2] of the level the unit's request asked for,
    from every worker's partials of the smaller children: each larger sibling is the merged
    parent (kept from the level before) minus the merged smaller child, exact in integers, so
    the same as summing every worker's own sibling (as the collective seam does) with half the
    bytes between workers."""
    req = unit.growth.request
    if req.linear is not None:      # linear trees: the 9-sum payloads (linear_growth)
        out = merged_level(summed(smalls), req, unit.parents)
        unit.parents = out if req.keep else None
        return out
    small = summed(smalls)
    if len(req.large):
        xp = array_module(small)
        out = xp.concatenate([small, unit.parents[xp.asarray(req.parent_slot)] - small])
    else:
        out = small
    unit.parents = out if req.keep else None
    return out


def smalls(unit: WorkerUnit):
    """This worker's partials of the request's smaller children (what it sends the others); a
    copy, as the shards keep their own partials to derive siblings from."""
    req = unit.growth.request
    if req.linear is not None:     # the smaller children's 9 sums, the larger ones' p~ sums
        return level_payload(unit.seam.level(req), req)
    return unit.seam.level(req)[:len(req.small)].copy()


def advance_last(unit: WorkerUnit, inputs) -> None:
    """The tree's last split evaluation from every worker's partials of its last level (a
    growth that ended sooner has nothing left to evaluate)."""
    if not unit.growth.done:
        unit.growth.advance(merged(unit, inputs))
    unit.parents = None


def make_unit(p, cuts, max_nodes: int, base, *units) -> WorkerUnit:
    """The worker's unit from its Parts (joined) or its streamed Shards."""
    from ..backends.device import get_backend
    with training_task(p["nthread"], whole_training=False), \
            device_scope(get_backend(p["device"])):
        shards, slots = local_shards(list(units), cuts, max_nodes, base, p)
        return WorkerUnit(LocalSeam(shards, cuts.hist_ptrs(), slots))


def unit_objective(unit: WorkerUnit, spec):
    """The objective of a spec: an Objective, or (it, the user's gradient function)."""
    objective, fn = spec if isinstance(spec, tuple) else (spec, None)
    return objective_on(objective, fn, unit.seam.shards)
