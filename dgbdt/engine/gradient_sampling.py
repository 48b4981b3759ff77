"""Gradient-based row sampling (``sampling_method="gradient_based"``), exact and deterministic.

The scheme is XGBoost's (its GPU sampler; Ou, "Out-of-Core GPU Gradient Boosting", 2020),
which is Minimal Variance Sampling (Ibragimov & Gusev, 2019) with lambda = 0.1: each row's
*regularized gradient*

    v_i = sqrt(g_i^2 + 0.1 * h_i^2)

sets its probability ``p_i = min(1, v_i / u)``, where the threshold u makes the expected
sample size the target ``T = floor(subsample * n)``:  sum_i min(1, v_i / u) = T. A row is
kept when its draw ``u(seed, round, class, row's global index) < p_i`` (dgbdt.engine.sampling's
counter-based hash) and its gradient and hessian are divided by p_i, so every histogram sum is
an unbiased estimate of the full one; the others get zero gradients (as uniform sampling).
Rows with g = h = 0 are never kept.

**Exact in any order.** The threshold is a global quantity over rows that live on many
pages, partitions or workers, and must come out the same bits however they are split. So the
v_i are put in fixed point first: ``q_i = min(ceil(v_i * s), 2**24 - 1)`` with
``s = 2**24 / vmax`` and vmax
= sqrt(max|g|^2 + 0.1 max h^2) from the (already global) gradient maxima; then

    C(t) = #{i : q_i >= t}         V(t) = sum of q_i < t          S(t) = C(t) + V(t) / t

are integers (S rational), S decreases in t, and the threshold index is found by a radix
descent over the bytes of q (3 steps of 256 buckets: only per-bucket counts and integer sums,
which merge exactly in any order — summed over shards in-process, all-reduced between
collective ranks). With t0 the largest t for which S(t) > T and t* = t0 + 1, the rows with
q_i >= t* are always kept and the rest have

    p_i = q_i * (T - C(t*)) / V(t*)          (u = V(t*) / (T - C(t*)), in units of q)

which sums to T exactly over the rows below t* plus C(t*) above it. (If S(1) <= T, every
row with a gradient is kept.) The ceil keeps a positive v from rounding to q = 0; q's 24 bits
are finer than the float32 gradients XGBoost samples from. Per holder a bucket's sum is
accumulated in float64 (numpy/cupy bincount), exact while a holder has under 2**29 rows.

After the draw the round's fixed-point scale (dgbdt.kernels.fixedpoint) comes from bounds on the
reweighted gradients that follow from the global integers (``bound_below``): no reduction.
"""
from __future__ import annotations

import numpy as np

from .sampling import draw_key, uniform
from .exchange import run
from ..data.row_ids import first_id, global_ids

#: MVS's lambda in XGBoost's sampler: the hessian's weight in the regularized gradient
LAMBDA = 0.1
BITS = 24                 # fixed-point bits of the regularized gradients
_STEPS = 3                # bytes the descent walks (q < 2**24)
_DRAW = 5_000_011         # the draw's stream: apart from uniform sampling's and the columns'


def magnitudes(g, h, vmax: float, xp):
    """int64 q = min(ceil(sqrt(g^2 + 0.1 h^2) * 2**24 / vmax), 2**24 - 1) of one class's
    gradients."""
    if vmax <= 0:
        return xp.zeros(g.shape[0], dtype=np.int64)
    v = xp.sqrt(g * g + LAMBDA * (h * h))
    q = xp.ceil(v * (float(2 ** BITS) / vmax)).astype(np.int64)
    return xp.minimum(q, 2 ** BITS - 1)


class Holder:
    """One holder's q, answering the descent's bucket sums: [2, 256] int64 counts and sums
    of the q whose higher bytes equal the prefix found so far, by this step's byte (step 0:
    the highest of the 3), without a pass over every row a step. On the host: each step keeps only the rows in the prefix found so far
    (the first step bins every row, the next ones ~1/256 of them). On a GPU, where a 256-bin
    histogram of millions of rows is atomics on a few addresses, the q are sorted once and a
    step is 257 binary searches and differences of the prefix sums (exact int64)."""

    def __init__(self, q, xp):
        self.xp = xp
        if xp is np:
            self.sub = q
        else:
            self.sorted = xp.sort(q.astype(np.int32))       # q < 2**24: 32-bit keys sort faster
            self.cum = xp.concatenate([xp.zeros(1, dtype=np.int64),
                                       xp.cumsum(self.sorted, dtype=np.int64)])

    def sums(self, prefix: int, step: int) -> np.ndarray:
        xp, shift = self.xp, 8 * (_STEPS - 1 - step)
        if xp is np:
            if step:
                self.sub = self.sub[(self.sub >> (shift + 8)) == prefix]
            byte = (self.sub >> shift) & 255
            return np.stack([np.bincount(byte, minlength=256),
                             np.bincount(byte, weights=self.sub.astype(np.float64),
                                         minlength=256).astype(np.int64)]).astype(np.int64)
        bounds = ((int(prefix) << 8) + xp.arange(257, dtype=np.int64)) << shift
        idx = xp.searchsorted(self.sorted, bounds.astype(np.int32), side="left")
        out = xp.stack([xp.diff(idx).astype(np.int64), xp.diff(self.cum[idx])])
        return out.get()


class Descent:
    """The radix descent for (t*, C(t*), V(t*)) of the module docstring, a step at a time:
    ``advance`` takes step ``step``'s [2, 256] bucket counts and sums over every holder for
    ``prefix`` (Holder.sums, merged). Python ints throughout: the comparisons
    ``C t + V > T t`` are exact."""

    def __init__(self, T: int):
        self.T = T
        self.step = 0
        self.prefix = 0
        self.above_c = 0     # rows above the prefix's range
        self.below_v = 0     # the sum of q below it
        self.eq_c = 0

    @property
    def done(self) -> bool:
        return self.step == _STEPS

    def advance(self, sums) -> None:
        cnt, sm = (np.asarray(a, dtype=np.int64).tolist() for a in sums)
        shift = 8 * (_STEPS - 1 - self.step)
        # S at each bucket's lower bound t_b = (prefix * 256 + b) << shift: C counts the rows
        # at or above it, V sums those below. t0 (the largest t with S(t) > T) lies in the
        # last bucket whose lower bound has S > T (S(0) counts as infinite; S decreases)
        c_at, v_at = self.above_c + sum(cnt), self.below_v
        chosen, below_here = 0, v_at
        for b in range(256):
            t = ((self.prefix << 8) | b) << shift
            if t and c_at * t + v_at <= self.T * t:
                break
            chosen, below_here = b, v_at
            c_at -= cnt[b]
            v_at += sm[b]
        self.above_c += sum(cnt[chosen + 1:])
        self.below_v = below_here
        self.eq_c = cnt[chosen]
        self.prefix = (self.prefix << 8) | chosen
        self.step += 1

    def result(self) -> tuple[int, int, int]:
        """(t*, C(t*), V(t*)): t* = t0 + 1, the rows above t0 are kept for certain; V sums
        every q <= t0."""
        t0 = self.prefix
        return t0 + 1, self.above_c, self.below_v + t0 * self.eq_c


def threshold(T: int, sums_of) -> tuple[int, int, int]:
    """(t*, C(t*), V(t*)) of the module docstring; ``sums_of(prefix, step)`` returns the
    [2, 256] bucket counts and sums over every holder (Holder.sums, reduced over them)."""
    d = Descent(T)
    while not d.done:
        d.advance(sums_of(d.prefix, d.step))
    return d.result()


def probabilities(q, t_star: int, c_star: int, v_star: int, T: int, xp):
    """float64 p_i: 1 at or above t*, else q_i (T - C) / V (0 where q = 0)."""
    if v_star == 0:
        return (q >= t_star).astype(np.float64)
    p = q.astype(np.float64) * (float(T - c_star) / float(v_star))
    return xp.where(q >= t_star, 1.0, p)


class ClassSample:
    """Class k's sample of the shards' rows, an exchange (dgbdt.engine.exchange) of a descent
    step at a time: ``local()`` are these shards' bucket sums for the step, ``advance`` takes
    them summed over every holder of rows (in-process: these; collective ranks: an
    all-reduce; graph mode: a task hop a step, dgbdt.dask.graph_sampling), and once ``done``,
    ``apply`` draws."""

    def __init__(self, shards, k: int, vmax: float, T: int):
        self.shards, self.k, self.vmax, self.T = shards, k, vmax, T
        xp = self.xp = shards[0].be.xp
        self.qs = [magnitudes(s.g[:, k], s.h[:, k], vmax, xp) for s in shards]
        # on a GPU the shards' q are one holder (one sort, one host wait a descent step, not
        # one a shard: streamed pages make 16 shards of 20M rows); the same integer sums
        self.holders = ([Holder(q, xp) for q in self.qs] if xp is np or len(self.qs) == 1
                        else [Holder(xp.concatenate(self.qs), xp)])
        self.descent = Descent(T)

    @property
    def done(self) -> bool:
        return self.descent.done

    def local(self) -> list:
        d = self.descent
        return [(np.asarray(sum(h.sums(d.prefix, d.step) for h in self.holders),
                            dtype=np.int64), "sum")]

    def advance(self, merged: list) -> None:
        self.descent.advance(merged[0])
        if self.done:
            self.holders = []       # free the sorted q before the draws

    def apply(self, seed: int, epoch: int):
        """Draw and reweight class k's rows in place. Returns the bound on the reweighted
        |g| / p of the rows below the threshold (``bound_below``) and the threshold in units
        of v (``in_v``: what dgbdt.engine.sampled_rounds's next round guesses its candidates from)."""
        k, vmax, T, xp = self.k, self.vmax, self.T, self.xp
        t_star, c_star, v_star = self.descent.result()
        ratio = 0.0 if v_star == 0 else float(T - c_star) / float(v_star)
        for s, q in zip(self.shards, self.qs):
            id0 = first_id(s)
            if id0 is not None and s.be.caps.row_sample_kernel:   # one kernel (a GPU)
                s.be.apply_row_sample(s.g, s.h, id0, draw_key(seed, _DRAW + k, epoch), k=k,
                                      by_gradient=True, lam=LAMBDA,
                                      qscale=float(2 ** BITS) / vmax if vmax > 0 else 0.0,
                                      t_star=t_star, ratio=ratio, v_zero=v_star == 0)
                continue
            p = probabilities(q, t_star, c_star, v_star, T, xp)
            draw = uniform(xp, seed, _DRAW + k, epoch, global_ids(s, xp))
            scale = xp.where(draw < p, 1.0 / xp.where(p > 0, p, 1.0), 0.0)
            s.g[:, k] *= scale
            s.h[:, k] *= scale
        self.qs = []
        return bound_below(vmax, T, c_star, v_star), in_v(vmax, T, t_star, c_star, v_star)


def sample_class(shards, k: int, vmax: float, T: int, seed: int, epoch: int, reduce):
    """Sample class k's rows of every shard in place (module docstring; ClassSample):
    ``reduce(array, "sum")`` merges the bucket sums over other holders (an all-reduce between
    collective ranks, the identity in-process). Returns ClassSample.apply's bounds."""
    return run(ClassSample(shards, k, vmax, T), reduce).apply(seed, epoch)


def in_v(vmax: float, T: int, t_star: int, c_star: int, v_star: int) -> tuple:
    """(c, step, v_t): a row below the threshold has p = q c' with q <= v / step + 1, so
    p <= (v + step) c (c = c' / step, c' = (T - C) / V); rows with v >= v_t (q >= t*) are kept.
    c = 0 when no row is below the threshold."""
    step = vmax / float(2 ** BITS) if vmax > 0 else 0.0
    c = 0.0 if v_star == 0 or step == 0 else float(T - c_star) / float(v_star) / step
    return c, step, (t_star - 1) * step


def bound_below(vmax: float, T: int, c_star: int, v_star: int) -> float:
    """An upper bound on |g| / p (and sqrt(0.1) h / p) of every reweighted row: with
    q >= v s (s = 2**24 / vmax; the cap at 2**24 - 1 and float rounding within the margin)
    and |g| <= v, |g| / p = |g| V / (q (T - C)) <= V / (s (T - C)). It comes from global
    integers, so the round's fixed-point scale needs no reduction over the rows and is the
    same for every holder. 0 when no row is reweighted (V = 0)."""
    if v_star == 0 or T <= c_star:
        return 0.0
    return float(v_star) * vmax / (float(2 ** BITS) * float(T - c_star)) * (1 + 2.0 ** -20)


class RoundSample:
    """A round's gradient-based sample of every class (in turn) of the shards' rows, a descent
    step at a time (an exchange: ClassSample's ``local`` / ``advance`` / ``done``); ``maxima`` are then
    bounds of the new (|g|, h) per class (the rows kept with p = 1 keep theirs, the others'
    are at most bound_below), which set the round's fixed-point scales, and ``thresholds``
    each class's threshold in units of v (``in_v``)."""

    def __init__(self, shards, sampling, epoch: int, n_rows: int, max_g, max_h):
        self.shards, self.sampling, self.epoch = shards, sampling, epoch
        self.max_g, self.max_h = max_g, max_h
        self.T = int(n_rows * sampling.subsample)
        self.new_g = np.array(max_g, dtype=np.float64)
        self.new_h = np.array(max_h, dtype=np.float64)
        self.thresholds: list = []
        self.k = 0
        self.cls = self._class(0)

    def _class(self, k: int) -> ClassSample:
        vmax = float(np.sqrt(float(self.max_g[k]) ** 2 + LAMBDA * float(self.max_h[k]) ** 2))
        return ClassSample(self.shards, k, vmax, self.T)

    @property
    def done(self) -> bool:
        return self.k == len(self.max_g)

    def local(self) -> list:
        return self.cls.local()

    def advance(self, merged: list) -> None:
        self.cls.advance(merged)
        if not self.cls.done:
            return
        below, where = self.cls.apply(self.sampling.seed, self.epoch)
        self.thresholds.append(where)
        k = self.k
        self.new_g[k] = max(self.new_g[k], below)
        self.new_h[k] = max(self.new_h[k], below / np.sqrt(LAMBDA))
        self.k += 1
        self.cls = None if self.done else self._class(self.k)

    @property
    def maxima(self):
        return self.new_g, self.new_h


def sample(shards, sampling, epoch: int, n_rows: int, max_g, max_h, reduce, record=None):
    """Gradient-based sampling of every class of the shards' gradients (in place, RoundSample;
    ``reduce(array, "sum")`` merges a step's bucket sums over other holders of rows); returns
    the bounds of the new (|g|, h) per class. ``record`` (a list) gets each class's threshold
    in units of v (``in_v``)."""
    rs = run(RoundSample(shards, sampling, epoch, n_rows, max_g, max_h), reduce)
    if record is not None:
        record[:] = rs.thresholds
    return rs.maxima


def sample_rows(sampling, shards, epoch: int, n_rows: int, max_g, max_h, reduce,
                record=None):
    """Sample round ``epoch``'s rows of every shard in place, by ``sampling``'s method;
    returns the gradient maxima (max |g|, max h) per class afterwards. ``reduce(array, op)``
    merges host arrays over the seam's other holders of rows (an all-reduce between
    collective ranks; in-process the identity). Uniform sampling needs none of that: each
    shard draws alone (dgbdt.engine.sampling.Sampling.apply_rows)."""
    if not sampling.by_gradient:
        for s in shards:
            sampling.apply_rows(s, epoch)
        return max_g, max_h
    return sample(shards, sampling, epoch, n_rows, max_g, max_h, reduce, record)
