"""Graph mode's hops for leaves that need more than the tree's histograms: a tree's leaf
values found from sums over every worker's rows, one exchange a task hop (as a level's
histograms are; dgbdt.dask.graph submits them between a tree's last level and its finish).

* linear leaves (``linear_tree``): one hop, ``leaf_sums``: every worker's part of each leaf's
  fixed-point ridge sums; the finish fits the leaves from their sum (the same on every unit).
* the quantile losses' leaves (``reg:absoluteerror``, ``reg:quantileerror``): each leaf's
  exact weighted quantile of its rows' residuals, the exchange
  dgbdt.objectives.leaf_quantiles.QuantileDescent that the other seams drive too. Its
  ``requests(weighted)`` reductions (the counts and largest weights, the weighted totals, one
  per key byte) are one hop each (dgbdt.engine.exchange.hop): ``descent_start`` answers the
  first with this worker's part, each ``descent_step`` merges every worker's answers to the
  previous request and answers the next, and the finish merges the last. Every unit runs the
  same descent on the same merged sums, so every unit finds the in-process values
  (LocalSeam.leaf_quantiles) bit for bit.
"""
from __future__ import annotations

from ..engine.exchange import hop
from ..objectives.leaf_quantiles import QuantileDescent
from ..tree.grower import refresh_leaves
from .graph_unit import WorkerUnit, advance_last, on, summed


def leaf_sums(unit: WorkerUnit, nthread, *inputs):
    """A linear tree's last split evaluation, then this worker's part of every leaf's ridge
    sums (its rows partitioned by the last splits): the hop between the levels and the
    finish, which fits the leaves from every worker's sums."""
    with on(unit, nthread):
        g = unit.growth
        advance_last(unit, inputs)
        unit.leaf_request = g.finish_request()
        return unit.seam.leaf_sums(g.leaf_sum_request(unit.leaf_request)).copy()


def descent_start(unit: WorkerUnit, nthread, alpha: float, *inputs):
    """A quantile tree's last split evaluation; this worker's rows go to their leaves and
    their residuals start the descent; returns this worker's answer to its first request."""
    with on(unit, nthread):
        advance_last(unit, inputs)
        fin = unit.growth.finish_request()
        unit.descent = (fin, QuantileDescent(alpha, *unit.seam.leaf_residuals(fin)))
        return unit.descent[1].local()


def descent_step(unit: WorkerUnit, nthread, *inputs):
    """One exchange of the descent: every worker's answers merged, this worker's answer to the
    next request."""
    with on(unit, nthread):
        return hop(unit.descent[1], inputs)


def finish_request(unit: WorkerUnit, inputs):
    """The tree's FinishRequest on this unit from the hop before the finish: the last level's
    partials (constant leaves), every worker's leaf sums (linear leaves) or the descent's last
    answers (quantile leaves)."""
    g = unit.growth
    if unit.leaf_request is not None:
        fin = g.fit_leaves(unit.leaf_request, summed(inputs))
        unit.leaf_request = None
        return fin
    if unit.descent is not None:
        (fin, d), unit.descent = unit.descent, None
        hop(d, inputs)
        if not d.done:
            raise RuntimeError("graph mode submitted fewer descent exchanges than the "
                               "quantile descent asked for")
        return refresh_leaves(g, fin, d.values)
    advance_last(unit, inputs)
    return g.finish_request()
