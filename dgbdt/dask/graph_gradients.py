"""Graph mode's gradients: a round's gradients on each unit (in the first round a task of its
own, later with the previous round's last finish: one hop less a round), and for objectives
whose gradients need every row (``needs_all_rows``: survival:cox's risk sets) one exchange
more: each unit returns its rows' (dataset index, label, margin, weight), and ``gathered``
takes every unit's, puts them in dataset order and keeps its own rows' gradients, the numbers
in-process training computes (dgbdt.objectives.survival.Cox.gathered_gradients)."""
from __future__ import annotations

import time

import numpy as np

from .graph_unit import WorkerUnit, on, unit_objective


def gathers_rows(objective) -> bool:
    """Whether the objective's gradients need every unit's rows (a hop a round more); not a
    user's gradient function (``fn``, dgbdt.objectives.custom), which sees its worker's rows."""
    return getattr(objective, "fn", None) is None and \
        bool(getattr(objective, "needs_all_rows", False))


def round_gradients(unit: WorkerUnit, grads):
    """The gradients of a set of trees on the unit: ``grads`` = (objective spec, sampling,
    round, (parallel tree j, P), sampling draw) (dgbdt.dask.graph._grads); rows outside the
    draw's sample get zero gradients. A forest's later trees (j > 0) take the round's
    gradients again (LocalSeam.forest_gradients). Returns the maxima; for an objective that
    needs every row, this unit's rows instead (``gathered`` computes the gradients)."""
    objective_spec, sampling, epoch, forest, draw = grads
    unit.seam.epoch = epoch     # the round, for objectives that draw from it (rank pairs)
    objective = unit_objective(unit, objective_spec)
    if gathers_rows(objective):
        return objective.seam_rows(unit.seam)
    out = unit.seam.forest_gradients(objective, forest if forest[1] > 1 else None)
    _sample(unit, sampling, draw)
    return out


def _sample(unit: WorkerUnit, sampling, epoch: int) -> None:
    if sampling is None:
        return
    if sampling.by_gradient:       # a global threshold: hops of its own (graph_sampling)
        return
    for s in unit.seam.shards:
        sampling.apply_rows(s, epoch)


def timed_gradients(unit: WorkerUnit, grads):
    """``round_gradients``, its seconds added to the unit's gradient time."""
    t = time.perf_counter()
    out = round_gradients(unit, grads)
    unit.timers["gradients"] += time.perf_counter() - t
    return out


def first_gradients(unit: WorkerUnit, grads, nthread, *after):
    """The first round's gradients; returns (None, maxima or rows), shaped as a finish's
    result."""
    with on(unit, nthread):
        return None, timed_gradients(unit, grads)


def gathered(unit: WorkerUnit, grads, nthread, *inputs):
    """The round's gradients from every unit's rows (the second item of each input, a
    finish's or ``first_gradients``' result); returns (None, maxima) as the root tasks read."""
    objective_spec, sampling, epoch, _, draw = grads
    with on(unit, nthread):
        t = time.perf_counter()
        objective = unit_objective(unit, objective_spec)
        rows = np.concatenate([i[1] for i in inputs], axis=0)
        out = objective.gathered_gradients(unit.seam, rows)
        _sample(unit, sampling, draw)
        unit.timers["gradients"] += time.perf_counter() - t
        return None, out
