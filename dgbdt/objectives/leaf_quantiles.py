"""Exact quantiles of values spread over partitions or workers: the quantile losses' leaf
values and intercepts (dgbdt.objectives.regression), by XGBoost's definition (its common::Quantile
and WeightedQuantile; tests/quantile_ref.py spells it with a sort), the same bits however the
values are split.

Both of XGBoost's quantiles are "the smallest value ``v`` whose mass ``M(<= v)`` reaches a
target ``T``": unweighted, the k-th and (k+1)-th smallest values (mass: counts; ``T = k + 1``),
interpolated; weighted, with the weights in fixed point (a power-of-two scale that keeps every
sum below 2**53) and ``T = total * alpha`` rounded as XGBoost's float product.

The value is found by a radix descent over an order-preserving 64-bit key of the float64
values, 8 bits a step: each step needs, per group, the mass of the values whose key starts
with the prefix found so far, by their next byte: a histogram [groups, 256] of integer sums.
Sums merge exactly in any order, so the caller reduces each step's histograms however its
values are spread (a plain sum in-process, an all-reduce between collective ranks, a sum over
Dask partitions on the client), and every holder of values gets the same answer.
"""
from __future__ import annotations

import numpy as np

_SIGN = np.uint64(1 << 63)
STEPS = 8                       # bytes of the key
#: the request for the reduced Part.stats (every other request is a histogram's arguments)
STATS = None


def key_of(v: np.ndarray) -> np.ndarray:
    """uint64 keys ordered as the float64 values (-0.0 before 0.0; no NaN expected)."""
    b = np.ascontiguousarray(v, dtype=np.float64).view(np.uint64)
    return np.where(b & _SIGN, ~b, b | _SIGN)


def value_of(k: np.ndarray) -> np.ndarray:
    k = np.asarray(k, dtype=np.uint64)
    return np.where(k & _SIGN, k & ~_SIGN, ~k).view(np.float64)


def weight_scale(top: float, n: int) -> float:
    """The fixed-point scale of weights whose largest is ``top`` over ``n`` values: a power of
    two with every cumulative sum below 2**53 (so sums are exact and compare exactly as
    floats)."""
    return float(2.0 ** np.floor(np.log2(2.0 ** 52 / (top * n)))) if top > 0 and n > 0 else 1.0


class Part:
    """One holder's values of every group: ``values[g]`` float64, ``weights[g]`` (or None)."""

    def __init__(self, values: list, weights: list | None):
        self.keys = [key_of(v) for v in values]
        self.weights = weights

    def stats(self) -> np.ndarray:
        """[G, 2] float64: the count and the largest weight of each group here (sum, max)."""
        out = np.zeros((len(self.keys), 2))
        for g, k in enumerate(self.keys):
            out[g, 0] = k.shape[0]
            if self.weights is not None and k.shape[0]:
                out[g, 1] = float(np.max(self.weights[g]))
        return out

    def masses(self, scales) -> list:
        return [np.ones(k.shape[0]) if self.weights is None else
                np.rint(self.weights[g] * scales[g]) for g, k in enumerate(self.keys)]

    def histogram(self, prefixes: np.ndarray, step: int, masses: list,
                  groups_of_target: np.ndarray) -> np.ndarray:
        """[targets, 256] float64 (integers below 2**53): per target, the mass of its group's
        values whose key starts with the target's prefix (``step`` bytes), by the next byte."""
        out = np.zeros((len(prefixes), 256))
        shift = np.uint64(8 * (STEPS - step))
        for t, (g, prefix) in enumerate(zip(groups_of_target, prefixes)):
            k = self.keys[g]
            if not k.shape[0]:
                continue
            hit = (k >> shift) == np.uint64(prefix) if step else np.ones(k.shape[0], bool)
            byte = ((k[hit] >> (shift - np.uint64(8))) & np.uint64(255)).astype(np.int64)
            out[t] = np.bincount(byte, weights=masses[g][hit], minlength=256)
        return out

    def answer(self, req) -> np.ndarray:
        """This holder's part of a ``descent`` request."""
        if req is STATS:
            return self.stats()
        scales, prefixes, step, groups = req
        return self.histogram(prefixes, step, self.masses(scales), groups)


def requests(weighted: bool) -> int:
    """How many reductions ``descent`` asks for: the stats, the weighted groups' totals, one a
    byte (graph mode submits that many exchanges ahead; a descent that ends sooner, no group
    having values, leaves the rest unanswered)."""
    return 1 + int(weighted) + STEPS


def quantiles(alpha: float, n_groups: int, weighted: bool, stats, histogram) -> np.ndarray:
    """Each group's alpha quantile (XGBoost's; 0 for a group without values or weight).

    ``stats()`` -> the global [G, 2] (the reduction of Part.stats: counts summed, the largest
    weights maxed); ``histogram(scales, prefixes, step, groups)`` -> the global reduction of
    Part.histogram for those targets (see the module docstring). Drives ``descent``.
    """
    gen = descent(alpha, n_groups, weighted)
    try:
        req = next(gen)
        while True:
            req = gen.send(stats() if req is STATS else histogram(*req))
    except StopIteration as stop:
        return stop.value


def descent(alpha: float, n_groups: int, weighted: bool):
    """``quantiles`` as a generator: yields each reduction it needs (``STATS``, or a
    histogram's (scales, prefixes, step, groups)), is sent the global answer, and returns the
    quantiles [G]. Holders of values spread over tasks (graph mode) answer a request a task
    hop; the others drive it with ``quantiles``."""
    st = yield STATS
    n = st[:, 0].astype(np.int64)
    scales = [weight_scale(float(st[g, 1]), int(n[g])) if weighted else 1.0
              for g in range(n_groups)]
    out = np.zeros(n_groups)
    # each group's targets: (group, mass target, which order statistic)
    groups, targets, slot = [], [], []
    frac = np.zeros(n_groups)
    totals = None
    if weighted:     # the total fixed-point mass of each group: one histogram at step 0
        full = yield (scales, np.zeros(n_groups, np.uint64), 0, np.arange(n_groups))
        totals = full.sum(axis=1)
    for g in range(n_groups):
        m = int(n[g])
        if m == 0 or (weighted and not totals[g] > 0):      # nothing to weigh: 0
            continue
        if weighted:
            groups.append(g), targets.append(totals[g] * alpha), slot.append(0)
            continue
        if alpha <= 1.0 / (m + 1):
            ks = [0]
        elif alpha >= m / (m + 1):
            ks = [m - 1]
        else:
            x = alpha * (m + 1)
            k = int(np.floor(x)) - 1
            frac[g] = (x - 1) - k
            ks = [k, k + 1]
        for j, k in enumerate(ks):
            groups.append(g), targets.append(float(k + 1)), slot.append(j)
    if not groups:
        return out
    groups = np.array(groups, np.int64)
    targets = np.array(targets)
    prefix = np.zeros(len(groups), np.uint64)
    below = np.zeros(len(groups))              # mass of the keys before the prefix's range
    for step in range(STEPS):
        h = yield (scales, prefix, step, groups)
        cum = below[:, None] + np.cumsum(h, axis=1)
        # the first byte whose cumulative mass reaches the target (the last if none does:
        # XGBoost's index min(lower_bound, n - 1))
        reach = cum >= targets[:, None]
        has = reach.any(axis=1)
        byte = np.where(has, reach.argmax(axis=1), 255 - np.argmax(h[:, ::-1] > 0, axis=1))
        below = below + np.where(byte > 0, np.take_along_axis(
            np.concatenate([np.zeros((len(groups), 1)), np.cumsum(h, axis=1)], axis=1),
            byte[:, None], axis=1)[:, 0], 0.0)
        prefix = (prefix << np.uint64(8)) | byte.astype(np.uint64)
    v = value_of(prefix)
    for t, g in enumerate(groups):
        if slot[t] == 0:
            out[g] = v[t]
        else:                                   # the (k+1)-th: interpolate from the k-th
            out[g] = out[g] + frac[g] * (v[t] - out[g])
    return out


class QuantileDescent:
    """``descent`` on one holder of values, as an exchange (dgbdt.engine.exchange): ``local``
    answers the pending request from this holder's values (the stats' counts to sum and
    largest weights to max; a histogram's integer masses to sum), ``advance`` takes them
    merged over every holder; ``values`` are the groups' quantiles once ``done``."""

    def __init__(self, alpha: float, values: list, weights: list | None):
        self.part = Part(values, weights)
        self.gen = descent(alpha, len(values), weights is not None)
        self.req = next(self.gen)
        self.values = None

    @property
    def done(self) -> bool:
        return self.values is not None

    def local(self) -> list:
        if self.req is STATS:
            s = self.part.stats()
            return [(s[:, 0].copy(), "sum"), (s[:, 1].copy(), "max")]
        return [(self.part.answer(self.req), "sum")]

    def advance(self, merged: list) -> None:
        answer = np.stack(merged, axis=1) if self.req is STATS else merged[0]
        try:
            self.req = self.gen.send(answer)
        except StopIteration as stop:
            self.values = stop.value


def local_quantiles(alpha: float, values: list, weights: list | None) -> np.ndarray:
    """``quantiles`` of groups held in one place: the exchange's answers are the merged ones."""
    d = QuantileDescent(alpha, values, weights)
    while not d.done:
        d.advance([a for a, _ in d.local()])
    return d.values
