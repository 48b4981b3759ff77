"""process_type="update" on Dask: dgbdt.engine.update_process's row holders, one a partition.

Each partition's holder (UpdateRows: its rows' leaves in the old trees, labels, weights,
margins) is made where the partition lives and replaced each round by its advanced copy, a
pure function of the last, so a lost worker's holders are computed again from lineage. A
round is three hops: the gradient maxima (max-reduced), the node sums of the trees to refresh
(tree-reduced, exact integers), the new trees into the margins; eval sets' metric summaries
merge as in training. The model is the same as in process, for any partitioning.
"""
from __future__ import annotations

import functools

import numpy as np

from ..engine.evaluation import merge, values, weight_scale
from ..engine.update_process import UpdateRows, add_sums
from .reduce import tree_reduce


def _holder(part, prior, rounds: int) -> UpdateRows:
    from ..data.dataset import Dataset
    d = Dataset.__new__(Dataset)      # checked on the worker already (dgbdt.dask.predict's way)
    d.data, d.feature_names, d.base_margin = part.X, None, part.base_margin
    d.categories = getattr(part, "categories", None)
    return UpdateRows.of(prior, d, part.n_rows, rounds, part.label, part.weight,
                         part.base_margin, part.qid)


def _maxima(rows: UpdateRows, objective):
    return rows.maxima(objective)


def _sums(rows: UpdateRows, objective, jobs):
    return rows.sums(objective, jobs)


def _sums_of(*parts):
    return functools.reduce(add_sums, parts)


def _advanced(rows: UpdateRows, jobs) -> UpdateRows:
    return rows.advanced(jobs)


def _summaries(rows: UpdateRows, objective, metrics, scale):
    return rows.summaries(objective, metrics, scale)


def _maxima_of(*parts):
    return np.max(parts, axis=0)


def _max_weight(part):
    w = part.weight
    return None if w is None else (float(np.max(w)) if w.shape[0] else 0.0)


class DaskRows:
    """The holders of a DaskDataset's partitions, and of each eval set's (module doc)."""

    def __init__(self, client, dtrain, evals: list, prior, rounds: int, fan_in: int):
        self.client, self.fan_in = client, fan_in
        model = client.scatter(prior, broadcast=True)
        self.parts = dtrain.map_parts(_holder, model, rounds)
        self.n_rows = dtrain.num_row
        self.evals = []
        for d in evals:
            weights = [w for w in client.gather(d.map_parts(_max_weight)) if w is not None]
            scale = weight_scale(max(weights) if weights else None, d.num_row) \
                if d.has_weight else None
            self.evals.append((d.map_parts(_holder, model, rounds), scale))

    def maxima(self, objective):
        futs = [self.client.submit(_maxima, h, objective, pure=False) for h in self.parts]
        return tree_reduce(self.client, futs, _maxima_of, self.fan_in,
                           "dgbdt-update-maxima").result()

    def sums(self, objective, jobs):
        jobs = self.client.scatter(jobs, broadcast=True)
        futs = [self.client.submit(_sums, h, objective, jobs, pure=False) for h in self.parts]
        return tree_reduce(self.client, futs, _sums_of, self.fan_in,
                           "dgbdt-update-sums").result()

    def advance(self, jobs) -> None:
        jobs = self.client.scatter(jobs, broadcast=True)
        self.parts = [self.client.submit(_advanced, h, jobs, pure=False) for h in self.parts]
        self.evals = [([self.client.submit(_advanced, h, jobs, pure=False) for h in hs], s)
                      for hs, s in self.evals]

    def scores(self, objective, metrics) -> list[list[float]]:
        out = []
        for hs, scale in self.evals:
            futs = [self.client.submit(_summaries, h, objective, metrics, scale, pure=False)
                    for h in hs]
            merged = tree_reduce(self.client, futs, functools.partial(merge, metrics),
                                 self.fan_in, "dgbdt-update-scores").result()
            out.append(values(metrics, merged))
        return out
