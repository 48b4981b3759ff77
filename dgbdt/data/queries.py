"""Query ids of ranking data (``qid=`` / ``group=``): checked once, kept as int64 [n].

XGBoost requires a query's rows to be contiguous with the ids sorted; so does dgbdt, and
``group`` (query sizes) becomes ids 0, 1, 2, ... A query's rows must be together because each
seam computes the gradients of whole queries (dgbdt.objectives.ranking)."""
from __future__ import annotations

import numpy as np


def _host(a):
    if hasattr(a, "__cuda_array_interface__"):
        return a.get()
    if hasattr(a, "to_numpy"):
        return a.to_numpy()
    return a


def check_sorted(qid: np.ndarray, what: str = "qid") -> None:
    """Raise unless ``qid`` is non-decreasing (XGBoost's rule)."""
    if qid.shape[0] > 1:
        down = np.flatnonzero(qid[1:] < qid[:-1])
        if down.size:
            i = int(down[0]) + 1
            raise ValueError(f"{what} must be sorted (non-decreasing), with each query's rows "
                             f"contiguous, as XGBoost requires: row {i} has query id "
                             f"{qid[i]} after {qid[i - 1]}. Fix: sort the rows by qid (e.g. "
                             "order = np.argsort(qid, kind='stable'), then take X[order], "
                             "y[order], qid[order])")


def query_ids(qid, group, n: int, what: str = "qid") -> np.ndarray | None:
    """int64 [n] query ids from ``qid`` or ``group`` (sizes), checked; None without either."""
    if qid is not None and group is not None:
        raise ValueError("pass qid= or group=, not both")
    if group is not None:
        sizes = np.asarray(_host(group)).reshape(-1)
        if sizes.size and (not np.issubdtype(sizes.dtype, np.number)
                           or np.any(sizes != np.floor(sizes)) or np.any(sizes < 0)):
            raise ValueError("group must hold query sizes: integers >= 0")
        sizes = sizes.astype(np.int64)
        if int(sizes.sum()) != n:
            raise ValueError(f"group sizes sum to {int(sizes.sum())}; the data has {n} rows")
        return np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
    if qid is None:
        return None
    q = np.asarray(_host(qid)).reshape(-1)
    if q.shape[0] != n:
        raise ValueError(f"{what} has {q.shape[0]} rows; the data has {n}")
    if q.size and not (np.issubdtype(q.dtype, np.integer) or (
            np.issubdtype(q.dtype, np.floating) and np.all(q == np.floor(q)))):
        raise ValueError(f"{what} must hold integer query ids; got dtype {q.dtype}")
    q = q.astype(np.int64)
    check_sorted(q, what)
    return q


def group_pointers(qid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(gptr, ids) of contiguous query ids: group ``q`` is rows ``gptr[q]:gptr[q + 1]`` with id
    ``ids[q]`` (a change of id starts a group)."""
    qid = np.asarray(qid)
    n = qid.shape[0]
    if n == 0:
        return np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], qid[1:] != qid[:-1]]))
    return np.append(starts, n).astype(np.int64), qid[starts].astype(np.int64)


def query_weights(w, gptr: np.ndarray) -> np.ndarray:
    """The float32 weight of each query (XGBoost keeps weights in float32) from per-row
    weights constant within each query; ones without weights."""
    if w is None:
        return np.ones(gptr.shape[0] - 1, dtype=np.float32)
    return np.asarray(w, dtype=np.float64).reshape(-1)[gptr[:-1]].astype(np.float32)


def weight_norm_stats(w, qid) -> list:
    """[number of queries, sum of their weights] as exact sums (dgbdt.kernels.fixedpoint.ExactSum):
    summed over partitions they give the whole set's, in any order."""
    from ..kernels.fixedpoint import ExactSum
    gptr = group_pointers(qid)[0]
    qw = query_weights(w, gptr).astype(np.float64)
    return [ExactSum.of(np.array([float(qw.shape[0])])), ExactSum.of(qw)]


def weight_norm(stats) -> float:
    """XGBoost's ranking weight normalization, n_queries / sum of the query weights, from
    (summed) ``weight_norm_stats``."""
    n, total = (float(s) for s in stats)
    if not total > 0:
        raise ValueError("the query weights sum to 0; at least one must be > 0")
    return n / total


def per_row_weights(weight, qid: np.ndarray | None, n: int):
    """The Dataset's ``weight`` with query ids: XGBoost's one weight per query (``n_queries``
    entries) becomes each row's; per-row weights must then be constant within each query."""
    if weight is None or qid is None:
        return weight
    w = np.asarray(weight.get() if hasattr(weight, "get") else weight,
                   dtype=np.float64).reshape(-1)
    gptr = group_pointers(qid)[0]
    sizes = np.diff(gptr)
    if w.shape[0] == sizes.shape[0]:
        return np.repeat(w, sizes)
    if w.shape[0] == n and np.all(w == np.repeat(w[gptr[:-1]], sizes)):
        return w
    raise ValueError(f"weight with query ids weighs whole queries, as XGBoost: the number "
                     f"of weights must be equal to the number of query groups (one weight "
                     f"per query ({sizes.shape[0]} queries), not {w.shape[0]} values)")
