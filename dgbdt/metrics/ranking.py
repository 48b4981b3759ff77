"""Ranking metrics (XGBoost 3.x's src/metric/rank_metric.cc): ``ndcg``, ``map``, ``pre``, each
optionally ``@k`` (the model's top k rows of each query) and ``-`` (a query without any
relevant row scores 0 instead of 1; ``pre`` has no such case).

A metric is computed per query (a run of equal query ids; rows without query ids are one
query, as in XGBoost) on the float32 predictions (XGBoost's), rows ranked by prediction, ties
in row order (a stable sort, as XGBoost's); the value is the mean over queries, capped at 1
(XGBoost's Finalize). Its summary is the exact sum of the per-query values and the number of
queries (dgbdt.kernels.fixedpoint.ExactSum), so partitions holding whole queries merge to the same
bits in any order (a query never straddles two Dask partitions, dgbdt.dask.data checks it).

Without ``@k`` the metric is XGBoost's: truncated at k = 32 (its metric parameters' default
top-k pairs), except the default metric of rank:ndcg / rank:pairwise with
lambdarank_pair_method="mean", named ``ndcg`` too, which XGBoost configures from the
objective's parameters: untruncated (``RankMetric(..., untruncated=True)``).

* ``ndcg@k``: ``DCG@k / IDCG@k`` with gain ``2^y - 1`` (``y`` with ndcg_exp_gain=False) and
  discount ``1 / log2(i + 2)``; a query whose IDCG is 0 scores 1 (``ndcg-``: 0).
* ``map@k``: ``sum_{i < k} P@i y_i / min(R, k)``, ``R`` the query's relevant rows (binary
  labels); no relevant row: 1 (``map-``: 0).
* ``pre@k``: relevant rows among the top ``min(k, n)``, divided by ``min(k, n)``; binary labels.

With weights (one per query, as XGBoost's: dgbdt.data.queries) the mean is weighted: each
query's value times its weight, over the sum of the weights, with XGBoost's exception that an
ndcg query without relevant rows adds 1 (or 0) unweighted.
"""
from __future__ import annotations

import re

import numba
import numpy as np

from ..data.queries import group_pointers
from ..kernels.fixedpoint import ExactSum
from .base import Metric

_NAME = re.compile(r"^(ndcg|map|pre)(?:@([0-9]+))?(-)?$")
_KIND = {"ndcg": 0, "map": 1, "pre": 2}
_ALL = np.iinfo(np.int64).max
#: XGBoost's truncation of a ranking metric named without @k (LambdaRankParam's default)
DEFAULT_K = 32


@numba.njit(cache=True)
def _query_values(kind, topk, minus, exp_gain, gptr, pred, label, qw, out):
    for q in range(gptr.shape[0] - 1):
        a = gptr[q]
        b = gptr[q + 1]
        p = pred[a:b]
        y = label[a:b]
        cnt = b - a
        rank = np.argsort(-p, kind="mergesort")
        n = min(cnt, topk)
        if kind == 0:
            by_label = np.argsort(-y, kind="mergesort")
            idcg = 0.0
            for i in range(n):
                gain = float((np.uint32(1) << np.uint32(y[by_label[i]])) - np.uint32(1)) \
                    if exp_gain else float(y[by_label[i]])
                idcg += (1.0 / np.log2(float(i) + 2.0)) * gain
            inv = 0.0 if idcg == 0.0 else 1.0 / idcg
            if inv <= 0.0:
                out[q] = 0.0 if minus else 1.0      # unweighted, as XGBoost's
                continue
            v = 0.0
            for i in range(n):
                gain = float((np.uint32(1) << np.uint32(y[rank[i]])) - np.uint32(1)) \
                    if exp_gain else float(y[rank[i]])
                v += (1.0 / np.log2(float(i) + 2.0)) * gain * inv
            out[q] = v * qw[q]
        elif kind == 1:
            hits = 0.0
            v = 0.0
            for i in range(n):
                r = float(y[rank[i]])
                hits += r
                v += hits / float(i + 1) * r
            for i in range(n, cnt):
                hits += float(y[rank[i]])
            if hits > 0.0:
                out[q] = v / min(hits, float(topk)) * qw[q]
            else:
                out[q] = (0.0 if minus else 1.0) * qw[q]
        else:
            hits = 0.0
            for i in range(n):
                hits += float(y[rank[i]]) * qw[q]
            out[q] = hits / float(n)


class RankMetric(Metric):
    """One of ndcg / map / pre (see the module docstring), from its XGBoost name."""

    higher_is_better = True
    by_query = True

    def __init__(self, name: str = "ndcg", exp_gain: bool = True, untruncated: bool = False):
        m = _NAME.match(name)
        if m is None:
            raise ValueError(f"unknown ranking metric {name!r}: ndcg, map or pre, optionally "
                             "followed by @k (k an integer) and '-'")
        self.name = name
        self.kind = _KIND[m.group(1)]
        self.topk = int(m.group(2)) if m.group(2) is not None else \
            (_ALL if untruncated else DEFAULT_K)
        self.minus = m.group(3) is not None
        self.exp_gain = bool(exp_gain)

    def _check(self, y):
        if self.kind == 0:
            if self.exp_gain:
                bad = (np.abs(np.floor(y) - y) > 1e-6) | (y < 0)
                if bad.any():
                    raise ValueError(f"{self.name}: labels must be relevance degrees, integers "
                                     ">= 0 (or set ndcg_exp_gain=False)")
                if (y > 31).any():
                    raise ValueError(f"{self.name}: relevance degrees must be <= 31 with the "
                                     "exponential gain. Set `ndcg_exp_gain` to False for a "
                                     "linear gain")
        elif ((y != 0.0) & (y != 1.0)).any():
            raise ValueError(f"{self.name.split('@')[0].rstrip('-')} can only be used with "
                             "binary labels (0 or 1)")

    def values(self, y, pred, qid=None, w=None) -> np.ndarray:
        """The per-query values [n_queries] (times the query's weight) of rows whose queries
        are contiguous runs of ``qid`` (None: one query); ``w``: per-row weights, constant
        within each query, or None."""
        y = np.asarray(_host(y), dtype=np.float32).reshape(-1)
        p = np.asarray(_host(pred), dtype=np.float32)
        p = p[:, 0] if p.ndim == 2 else p
        if p.shape[0] != y.shape[0]:
            raise ValueError(f"labels have {y.shape[0]} rows, predictions have {p.shape[0]}")
        self._check(y)
        if qid is None:
            gptr = np.array([0, y.shape[0]], dtype=np.int64)
        else:
            gptr = group_pointers(_host(qid))[0]
        out = np.empty(gptr.shape[0] - 1, dtype=np.float64)
        _query_values(self.kind, self.topk, self.minus, self.exp_gain, gptr,
                      np.ascontiguousarray(p), np.ascontiguousarray(y),
                      self._query_weights(w, gptr), out)
        return out

    @staticmethod
    def _query_weights(w, gptr):
        if w is None:
            return np.ones(gptr.shape[0] - 1, dtype=np.float64)
        return np.asarray(_host(w), dtype=np.float64).reshape(-1)[gptr[:-1]].astype(
            np.float32).astype(np.float64)          # XGBoost keeps weights in float32

    def query_summary(self, y, pred, qid=None, w=None):
        """[exact sum of the per-query values, number (or total weight) of the queries]:
        merged by ``merge``."""
        v = self.values(y, pred, qid, w)
        if w is None:
            return [ExactSum.of(v), ExactSum.of(np.array([float(v.shape[0])]))]
        gptr = (np.array([0, np.asarray(_host(y)).shape[0]]) if qid is None
                else group_pointers(_host(qid))[0])
        return [ExactSum.of(v), ExactSum.of(self._query_weights(w, gptr))]

    def summary(self, y, pred, w=None, weight_scale=None, weight_sum=None):
        return self.query_summary(y, pred, None, w)

    def value(self, s) -> float:
        if s is None:
            raise ValueError(f"{self.name}: no rows to evaluate")
        num, den = (float(v) for v in s)
        score = num / den if den > 0 else num
        return float(min(1.0, score))


def _host(a):
    return a.get() if hasattr(a, "__cuda_array_interface__") else a


def is_rank_metric(name) -> bool:
    return isinstance(name, str) and _NAME.match(name) is not None
