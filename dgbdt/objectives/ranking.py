"""Learning to rank (issue #16): ``rank:ndcg``, ``rank:pairwise`` and ``rank:map``, XGBoost 3.x's
LambdaMART (src/objective/lambdarank_obj.cc), with its parameters and defaults.

Rows carry a query id (``Dataset(..., qid=...)``); a query's rows are contiguous. A group's
gradients need only its own rows, so each seam (the in-process one, a Dask worker's) computes
the gradients of the groups it holds at once (``seam_gradients``); a group never straddles two
Dask partitions (dgbdt.dask.data checks it), so the gradients, and the model, are the same for
any partitioning or worker count. GPU shards compute them on their device
(dgbdt.kernels.gpu_rank, one thread per query: the CPU kernel's arithmetic and order, the same
gradients but where CUDA's exp / log2 round otherwise in a last bit).

Pairs (``lambdarank_pair_method``):

* ``topk`` (default): every pair of rows with different labels in which at least one row is
  among the model's top ``k = lambdarank_num_pair_per_sample`` (default 32) of its query.
  Deterministic: the gradients are XGBoost's.
* ``mean``: for each row, ``k`` (default 1) partners drawn uniformly among the query's rows
  with another label. The draws come from a counter-based hash of (seed, round, query id, draw
  number) (dgbdt.kernels.cpu_rank.pair_draw), never from partition layout or thread order;
  they are not XGBoost's draws (its std::minstd_rand stream), so models differ from XGBoost's
  with this method.

For a pair (high label ``i``, low label ``j``) with predictions ``s_i``, ``s_j`` and
``sigma = 1 / (1 + exp(s_j - s_i))``: ``delta = |delta Z|`` (the change of NDCG or of average
precision when the two swap places in the model's ranking; 1 for rank:pairwise), divided by
``|s_i - s_j| + 0.01`` when the query's scores are not all equal
(lambdarank_score_normalization); ``lambda = (sigma - 1) delta``,
``hess = 2 max(sigma (1 - sigma), 1e-16) delta``; row ``i`` gets ``(lambda, hess)``, row ``j``
``(-lambda, hess)``. With lambdarank_normalization each query's gradients are then scaled by
``log2(1 + L) / L`` (``L = -2 sum lambda``; topk) or ``1 / k`` (mean), and by the query's
weight times ``n_queries / sum of the query weights`` (XGBoost weighs whole queries: a
Dataset's ``weight`` with ``qid`` has one entry per query, dgbdt.data.queries).

Position debiasing (``lambdarank_unbiased=True``, CPU only): the pairs among a query's first
rows are divided by the position-bias ratios ``t+[high] t-[low]``, which dgbdt.objectives.rank_bias
estimates each round from sums over every query (state kept on the seam, all-reduced exactly
by the collective ranks).

Intercept: XGBoost fits a one-Newton-step stump at margin 0, where every pair adds ``+lambda``
and ``-lambda``: the sum of gradients is 0, so the intercept is 0 (XGBoost's is float32
rounding noise of that sum, ~1e-9).
"""
from __future__ import annotations

import numpy as np

from ..kernels.arrays import to_host
from ..data.queries import group_pointers, query_weights, weight_norm, weight_norm_stats
from ..kernels.fixedpoint import ExactSum
from ..metrics.ranking import RankMetric
from .base import Objective, _as_labels, _first_bad_row

PAIR_METHODS = ("topk", "mean")


def _flag(params, name, default: bool) -> bool:
    v = (params or {}).get(name)
    return default if v is None else bool(v)


def on_device(backend) -> bool:
    """Whether the gradients of the backend's shards are computed by the device kernel
    (dgbdt.kernels.gpu_rank) rather than the numba one."""
    return backend.caps.device_memory


class _LambdaRank(Objective):
    """The shared LambdaMART machinery; subclasses name the loss (see the module docstring)."""

    loss = 0
    metric_base = "ndcg"
    needs_qid = True

    def __init__(self, params: dict | None = None):
        params = params or {}
        self.params = {}
        method = params.get("lambdarank_pair_method") or "topk"
        if method not in PAIR_METHODS:
            raise ValueError(f"lambdarank_pair_method must be one of {PAIR_METHODS}; got "
                             f"{method!r}")
        self.pair_method = method
        k = params.get("lambdarank_num_pair_per_sample")
        self.k_given = k is not None
        self.num_pair = int(k) if k is not None else (32 if method == "topk" else 1)
        if self.num_pair < 1:
            raise ValueError(f"lambdarank_num_pair_per_sample must be >= 1; got {k!r}")
        self.normalization = _flag(params, "lambdarank_normalization", True)
        self.score_normalization = _flag(params, "lambdarank_score_normalization", True)
        self.exp_gain = _flag(params, "ndcg_exp_gain", True)
        self.seed = int(params.get("seed") or 0)
        self.unbiased = _flag(params, "lambdarank_unbiased", False)
        p_norm = params.get("lambdarank_bias_norm")
        self.bias_norm = 1.0 if p_norm is None else float(p_norm)
        if not self.bias_norm >= 0.0:
            raise ValueError(f"lambdarank_bias_norm must be >= 0; got {p_norm!r}")

    @property
    def default_metric(self):
        """XGBoost's: ``ndcg@k`` / ``map@k`` with topk pairs; with mean pairs ``ndcg`` over
        whole queries (XGBoost configures it from the objective) and ``map`` (as any metric
        named without @k, truncated at 32: rank:map passes no configuration)."""
        if self.pair_method == "topk":
            return f"{self.metric_base}@{self.num_pair}"
        if self.metric_base == "ndcg":
            return RankMetric("ndcg", self.exp_gain, untruncated=True)
        return self.metric_base

    def check_labels(self, y, num_class=None):
        super().check_labels(y, num_class)

    # -- intercept: 0 (see the module docstring) --------------------------------------------
    def label_stats(self, y, w, num_class):
        return [ExactSum.of(np.zeros(1))]

    def base_margin_from_stats(self, stats, num_class):
        return np.zeros(1)

    def base_margin_from_labels(self, y, w, num_class):
        return np.zeros(1)

    # -- gradients ---------------------------------------------------------------------------
    #: n_queries / sum of the query weights of the whole training set, when the caller knows
    #: it (dgbdt.dask.train sets it for graph mode); else the seam's own (its rows are every
    #: query in-process and in one task; the collective ranks reduce it)
    weight_norm = None

    def group_gradients(self, margin, y, qid, w=None, epoch: int = 0, w_norm=None,
                        bias=None):
        """(g, h) float64 [n, 1] of rows whose queries are contiguous runs of ``qid``;
        ``w_norm``: the weight normalization (default: of these rows' queries). ``bias``:
        None, or position debiasing's (ti, tj, li, lj) (dgbdt.objectives.rank_bias): the ratios in,
        each row's cost terms out (li, lj float64 [n])."""
        from ..kernels.cpu_rank import lambda_gradients_threaded
        m = np.asarray(margin, dtype=np.float64)
        m = m[:, 0] if m.ndim == 2 else m
        pred = np.ascontiguousarray(m, dtype=np.float32)
        label = np.ascontiguousarray(_as_labels(y), dtype=np.float32)
        gptr, ids = group_pointers(qid)
        qw = query_weights(w, gptr)
        if w_norm is None:
            w_norm = 1.0 if w is None else weight_norm(weight_norm_stats(w, qid))
        g = np.empty(pred.shape[0], dtype=np.float32)
        h = np.empty(pred.shape[0], dtype=np.float32)
        lambda_gradients_threaded(
            self.loss, 1 if self.pair_method == "mean" else 0, self.num_pair, self.exp_gain,
            self.normalization, self.score_normalization, np.uint64(self.seed),
            np.uint64(epoch), gptr, ids.view(np.uint64), pred, label, g, h, qw, w_norm,
            bias=bias)
        return g.astype(np.float64)[:, None], h.astype(np.float64)[:, None]

    def gradients(self, margin, y, w, out=None):
        raise ValueError(f"{self.name} needs query ids: its gradients are computed per query "
                         "group (pass qid= or group= to the Dataset)")

    def seam_gradients(self, seam):
        """The gradients of the seam's rows (whole query groups), written into its shards;
        the (max |g|, max h) that set the fixed-point scale."""
        shards = seam.shards
        if any(getattr(s, "qid", None) is None for s in shards):
            raise ValueError(f"{self.name} needs query ids: pass qid= (or group=) to the "
                             "Dataset")
        xp = shards[0].be.xp            # labels and weights live with the shards (qid: host)
        qid = np.concatenate([s.qid for s in shards])
        label = xp.concatenate([s.label for s in shards])
        weight = None if shards[0].weight is None else \
            xp.concatenate([s.weight for s in shards])
        norm = self.weight_norm
        if weight is not None and norm is None:
            norm = getattr(seam, "rank_weight_norm", None)
            if norm is None:
                stats = weight_norm_stats(to_host(weight), qid)
                comm = getattr(seam, "comm", None)      # the collective seam: every rank's
                if comm is not None:
                    stats = comm.sum_exact(stats)
                norm = seam.rank_weight_norm = weight_norm(stats)
        if on_device(shards[0].be):
            if self.unbiased:
                raise ValueError("lambdarank_unbiased=True trains on the CPU for now (the "
                                 "GPU ranking kernel has no position debiasing yet): pass "
                                 "device='cpu'")
            g, h = self.device_gradients(seam, label, qid, weight, norm)
        elif self.unbiased:
            g, h = self._unbiased_gradients(seam, label, qid, weight, norm)
        else:
            g, h = self.group_gradients(seam.margins(), label, qid, weight,
                                        getattr(seam, "epoch", 0), norm)
        return seam.set_gradients(g, h)

    def _unbiased_gradients(self, seam, label, qid, weight, w_norm):
        """``group_gradients`` with position debiasing (dgbdt.objectives.rank_bias): the ratios live on
        the seam, one update a round from the per-position sums over every query (the
        collective ranks all-reduce the longest query and the sums, exactly)."""
        from .rank_bias import PositionBias, position_sums, tracked_positions
        epoch = getattr(seam, "epoch", 0)
        comm = getattr(seam, "comm", None)
        gptr, _ = group_pointers(qid)
        state = getattr(seam, "rank_position_bias", None)
        if state is None:
            longest = np.array([int(np.diff(gptr).max()) if gptr.shape[0] > 1 else 0])
            if comm is not None:
                longest = comm.allreduce_host(longest, "max")
            n_pos = tracked_positions(self.pair_method, self.num_pair, int(longest[0]))
            # a continued model's estimates ({} without them) resume; else ones at round 0
            stored = getattr(seam, "rank_position_bias_start", None)
            reg = 1.0 / (1.0 + self.bias_norm)
            state = seam.rank_position_bias = PositionBias(n_pos, reg) if stored is None else \
                PositionBias.start(stored or None, n_pos, reg, epoch)
        state.check_round(epoch)
        n = qid.shape[0]
        li, lj = np.empty(n, np.float64), np.empty(n, np.float64)
        g, h = self.group_gradients(seam.margins(), label, qid, weight, epoch, w_norm,
                                    bias=(state.ti, state.tj, li, lj))
        sums = position_sums(li, lj, gptr, state.ti.shape[0])
        if comm is not None:
            sums = comm.sum_exact(sums)
        state.update(sums)
        return g, h

    def device_gradients(self, seam, label, qid, weight, w_norm):
        """``group_gradients`` of GPU shards' rows on their device (dgbdt.kernels.gpu_rank):
        the group pointers, query ids, float32 labels and query weights go up once and stay
        with the seam; each round computes from the device margins."""
        from ..kernels.gpu_rank import device_discounts, lambda_gradients
        xp = seam.shards[0].be.xp
        groups = getattr(seam, "rank_device_groups", None)
        if groups is None:
            gptr, ids = group_pointers(qid)
            host_w = None if weight is None else to_host(weight)
            groups = seam.rank_device_groups = (
                xp.asarray(gptr), xp.asarray(ids.view(np.uint64)),
                xp.asarray(query_weights(host_w, gptr)),
                xp.ascontiguousarray(_as_labels(label).astype(np.float32)),
                device_discounts(int(np.diff(gptr).max()) if gptr.shape[0] > 1 else 0, xp))
        gptr_d, ids_d, qw_d, label_d, discount = groups
        m = seam.margins()
        pred = xp.ascontiguousarray(m[:, 0] if m.ndim == 2 else m, dtype=np.float32)
        g, h = lambda_gradients(
            self.loss, 1 if self.pair_method == "mean" else 0, self.num_pair, self.exp_gain,
            self.normalization, self.score_normalization, self.seed,
            getattr(seam, "epoch", 0), gptr_d, ids_d, pred, label_d, qw_d,
            1.0 if w_norm is None else w_norm, discount)
        return g.astype(np.float64)[:, None], h.astype(np.float64)[:, None]


class NDCG(_LambdaRank):
    """``rank:ndcg``: LambdaMART with |delta NDCG| (gain ``2^y - 1`` with ndcg_exp_gain, else
    ``y``; discount ``1 / log2(rank + 2)``; IDCG over the top k with topk pairs). Labels:
    integers in [0, 31] with ndcg_exp_gain (XGBoost's)."""

    name = "rank:ndcg"
    loss = 0

    def check_labels(self, y, num_class=None):
        super().check_labels(y, num_class)
        y = _as_labels(y)
        if self.exp_gain:
            bad = (np.abs(np.floor(y) - y) > 1e-6) | (y < 0)
            if bad.any():
                raise ValueError(f"{self.name}: labels must be relevance degrees, integers "
                                 f">= 0 (first bad at row {_first_bad_row(bad)}: {y[bad][0]:g})")
            if (y > 31).any():
                raise ValueError(f"{self.name}: relevance degrees must be <= 31 with the "
                                 "exponential gain. Set `ndcg_exp_gain` to False for a linear "
                                 "gain")


class Pairwise(_LambdaRank):
    """``rank:pairwise``: RankNet (LambdaMART with ``delta = 1``); default metric ndcg."""

    name = "rank:pairwise"
    loss = 1


class MAP(_LambdaRank):
    """``rank:map``: LambdaMART with |delta AP| (the change of average precision); labels 0/1."""

    name = "rank:map"
    loss = 2
    metric_base = "map"

    def check_labels(self, y, num_class=None):
        super().check_labels(y, num_class)
        y = _as_labels(y)
        bad = (y != 0.0) & (y != 1.0)
        if bad.any():
            raise ValueError(f"{self.name}: labels must be binary (0 or 1) (first bad at row "
                             f"{_first_bad_row(bad)}: {y[bad][0]:g})")


RANK_OBJECTIVES = (NDCG, Pairwise, MAP)
