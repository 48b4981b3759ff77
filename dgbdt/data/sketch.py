"""Exactly mergeable, partition-invariant per-feature quantile summaries.

Keys
    A float32 value ``x`` (NaN = missing, excluded; ``-0.0`` counted as
    ``+0.0``; +-inf rejected) has the uint32 sortable key ``key(x)``: with
    ``u`` the bits of ``x``, ``key = ~u`` if the sign bit is set, else
    ``u | 0x80000000``. ``x < y  <=>  key(x) < key(y)``.

Summary of a multiset X of (value, weight) pairs at shift ``s`` (0..32)
    One bucket per distinct ``b = key(x) >> s`` present, ascending by ``b``,
    holding ``(b, W_b = sum of weights, lo_b = min x, hi_b = max x)``.
    At ``s = 0`` each bucket is one distinct value. With ``N_s(X)`` the
    number of buckets at shift s and ``M = max_keys``, the summary of X is
    the one at ``s*(X) = min{s : N_s(X) <= M}`` (exists: ``N_32 <= 1``).
    ``build(X)`` computes it directly from the data.

Merge is exact
    ``merge(A, B)`` takes ``s0 = max(s*(A), s*(B))``, coarsens both to s0
    (group buckets by ``b >> (s0 - s)``; sum weights, min lo, max hi),
    unions them by key with the same aggregates, then coarsens by the
    smallest extra shift leaving ``<= M`` buckets. Claim:
    ``merge(build(A), build(B)) == build(A + B)`` (A + B the multiset sum).

    * Sum, min and max are associative and commutative, and coarsening a
      bucket set from s to s' > s gives exactly the buckets at s' (every
      shift-s' bucket is the disjoint union of the shift-s buckets mapping
      to it), so the union at s0 equals the shift-s0 summary of A + B.
    * ``key >> s`` of a subset takes a subset of the values it takes on the
      superset, so ``N_s(A) <= N_s(A + B)`` for every s. Hence if A + B fits
      at s, so does A: ``s*(A) <= s*(A + B)``, likewise for B, so
      ``s0 <= s*(A + B)``.
    * ``N_s`` is non-increasing in s, and for ``s0 <= s < s*(A + B)``,
      ``N_s(A + B) > M``; the smallest ``s >= s0`` with ``N_s <= M`` is
      therefore ``s*(A + B)``.

    By induction every merge tree over any partitioning of the rows, in any
    order, yields ``build(all rows)`` bit for bit; merging under a smaller
    ``max_keys`` than the inputs' is exact too (``s*`` only grows when M
    shrinks), merging under a larger one is refused.

Weights are integers (int64 fixed point, see ``weight_scale`` and
``to_fixed``), so sums are exact and order independent. With no weights
every row weighs 1.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass

import numba
import numpy as np

from ..kernels import cpu_data as K
from .sketch_merge import merge_buckets

__all__ = [
    "Summaries",
    "summarize",
    "merge",
    "merge_many",
    "merge_all",
    "weight_scale",
    "to_fixed",
    "default_max_keys",
]


_KEY_GROUP = 8  # features keyed at once by summarize (at least: threads)


def default_max_keys(max_bin: int) -> int:
    """Default summary size for a ``max_bin`` histogram: ``max(4096, 16 * max_bin)``."""
    return max(4096, 16 * int(max_bin))


def weight_scale(max_weight: float, n_rows_total: int) -> float:
    """The largest power of two ``2**k`` with ``max_weight * 2**k * n_rows_total < 2**62``.

    ``k`` may be negative. Depends only on the global max weight and row
    count, both partition invariant. Returns 1.0 when there is no positive
    weight or no row. With ``m = max_weight * n = f * 2**e`` (``0.5 <= f < 1``)
    the answer is ``k = 62 - e``.
    """
    m = float(max_weight) * float(n_rows_total)
    if not math.isfinite(m):
        raise ValueError("weights must be finite")
    if m <= 0.0:
        return 1.0
    _, e = math.frexp(m)
    return math.ldexp(1.0, 62 - e)


def to_fixed(w, scale: float) -> np.ndarray:
    """Fixed-point weights ``rint(w * scale)`` as int64 (w >= 0)."""
    w = np.asarray(w, dtype=np.float64)
    if w.size and not (np.all(np.isfinite(w)) and w.min() >= 0):
        raise ValueError("weights must be finite and non-negative")
    return np.rint(w * float(scale)).astype(np.int64)


def _b64(a: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii")


def _unb64(s: str, dtype: str, native) -> np.ndarray:
    return np.frombuffer(base64.b64decode(s), dtype=dtype).astype(native)


@dataclass
class Summaries:
    """Summaries of every feature of a set of rows.

    Feature f's buckets are ``keys[ptrs[f]:ptrs[f+1]]`` (bucket keys
    ``key >> shifts[f]``, uint64, ascending), with ``weights`` (int64 sums),
    ``lo`` / ``hi`` (float32 min / max value) in the same slots.
    ``n_rows`` counts every row seen (missing values included).
    """

    keys: np.ndarray
    weights: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    ptrs: np.ndarray
    shifts: np.ndarray
    n_rows: int
    max_keys: int

    @property
    def n_features(self) -> int:
        return int(self.ptrs.shape[0] - 1)

    @classmethod
    def empty(cls, n_features: int, max_keys: int) -> "Summaries":
        """Summaries of zero rows (the identity of ``merge``)."""
        return cls(
            keys=np.zeros(0, np.uint64), weights=np.zeros(0, np.int64),
            lo=np.zeros(0, np.float32), hi=np.zeros(0, np.float32),
            ptrs=np.zeros(n_features + 1, np.int64),
            shifts=np.zeros(n_features, np.int64), n_rows=0, max_keys=int(max_keys),
        )

    def feature(self, f: int):
        """``(keys, weights, lo, hi, shift)`` of feature f (views)."""
        a, b = int(self.ptrs[f]), int(self.ptrs[f + 1])
        return (self.keys[a:b], self.weights[a:b], self.lo[a:b], self.hi[a:b],
                int(self.shifts[f]))

    def n_buckets(self) -> np.ndarray:
        return np.diff(self.ptrs)

    def total_weight(self) -> np.ndarray:
        """int64 [F]: summed weight of the non-missing values of each feature."""
        out = np.zeros(self.n_features, np.int64)
        nonempty = self.ptrs[1:] > self.ptrs[:-1]
        if self.keys.size:
            sums = np.add.reduceat(self.weights, self.ptrs[:-1][nonempty])
            out[nonempty] = sums
        return out

    def merge(self, other: "Summaries", max_keys: int | None = None) -> "Summaries":
        return merge(self, other, max_keys)

    def equals(self, other: "Summaries") -> bool:
        """Exact equality of every array (lo / hi compared bitwise)."""
        return (
            self.n_rows == other.n_rows and self.max_keys == other.max_keys
            and np.array_equal(self.ptrs, other.ptrs)
            and np.array_equal(self.shifts, other.shifts)
            and np.array_equal(self.keys, other.keys)
            and np.array_equal(self.weights, other.weights)
            and np.array_equal(self.lo.view(np.uint32), other.lo.view(np.uint32))
            and np.array_equal(self.hi.view(np.uint32), other.hi.view(np.uint32))
        )

    def to_dict(self) -> dict:
        """JSON-safe dict (arrays as base64 of little-endian bytes)."""
        return {
            "format": 1,
            "n_rows": int(self.n_rows),
            "max_keys": int(self.max_keys),
            "ptrs": _b64(self.ptrs, "<i8"),
            "shifts": _b64(self.shifts, "<i8"),
            "keys": _b64(self.keys, "<u8"),
            "weights": _b64(self.weights, "<i8"),
            "lo": _b64(self.lo, "<f4"),
            "hi": _b64(self.hi, "<f4"),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Summaries":
        if d.get("format") != 1:
            raise ValueError(f"unknown Summaries format {d.get('format')!r}")
        return cls(
            keys=_unb64(d["keys"], "<u8", np.uint64),
            weights=_unb64(d["weights"], "<i8", np.int64),
            lo=_unb64(d["lo"], "<f4", np.float32),
            hi=_unb64(d["hi"], "<f4", np.float32),
            ptrs=_unb64(d["ptrs"], "<i8", np.int64),
            shifts=_unb64(d["shifts"], "<i8", np.int64),
            n_rows=int(d["n_rows"]), max_keys=int(d["max_keys"]),
        )


def _compact(counts: np.ndarray, arrays):
    """``(ptrs, [a[f, :counts[f]] for every f, concatenated, for each [F, cap] array a])``.

    A row-major boolean mask ``slot < counts[f]`` selects those slots in that order (numpy:
    no kernel to compile on a first fit)."""
    ptrs = np.zeros(counts.shape[0] + 1, np.int64)
    np.cumsum(counts, out=ptrs[1:])
    keep = np.arange(arrays[0].shape[1], dtype=np.int64) < counts[:, None]
    return ptrs, [a[keep] for a in arrays]


def check_summarize_args(X, weights_fixed, max_keys, xp):
    """(float32 X [n, F], contiguous int64 weights or None, int max_keys), checked; numpy or
    cupy arrays (``xp``)."""
    X = xp.asarray(X, dtype=np.float32)
    if X.ndim != 2:
        raise ValueError("X must be 2-D")
    max_keys = int(max_keys)
    if max_keys < 1:
        raise ValueError("max_keys must be >= 1")
    return X, check_weights_fixed(weights_fixed, X.shape[0], xp), max_keys


def check_weights_fixed(weights_fixed, n_rows: int, xp):
    """Contiguous int64 [n_rows] non-negative fixed-point weights, checked, or None."""
    if weights_fixed is None:
        return None
    w = xp.ascontiguousarray(xp.asarray(weights_fixed))
    if w.dtype != np.int64:
        raise TypeError("weights_fixed must be int64 (use to_fixed)")
    if w.shape != (n_rows,):
        raise ValueError("weights_fixed must have shape [n_rows]")
    if n_rows and int(w.min()) < 0:
        raise ValueError("weights must be non-negative")
    return w


def summarize(X, weights_fixed=None, max_keys: int = 4096) -> Summaries:
    """Summaries of the columns of ``X`` (float32 [n, F]; other dtypes are cast).

    ``weights_fixed``: int64 [n] non-negative fixed-point weights (see
    ``to_fixed``) or None (every row weighs 1). Raises ValueError on +-inf.
    Per feature (in parallel): keys, radix sort, drop NaN, smallest shift
    with ``<= max_keys`` buckets, one pass to emit buckets.
    """
    X, w, max_keys = check_summarize_args(X, weights_fixed, max_keys, np)
    n, nf = X.shape
    weighted = w is not None
    if not weighted:
        w = np.zeros(0, np.int64)
    if n == 0 or nf == 0:
        s = Summaries.empty(nf, max_keys)
        s.n_rows = n
        return s
    cap = min(max_keys, n)
    ok = np.empty((nf, cap), np.uint64)
    ow = np.empty((nf, cap), np.int64)
    olo = np.empty((nf, cap), np.uint32)
    ohi = np.empty((nf, cap), np.uint32)
    counts = np.empty(nf, np.int64)
    shifts = np.empty(nf, np.int64)
    status = np.empty(nf, np.int64)
    # the features' keys a group at a time (each feature's summary is its own): the keys'
    # copy is a group's columns, not the whole matrix, and a group still has a feature for
    # every thread
    group = min(nf, max(_KEY_GROUP, numba.get_num_threads()))
    colkeys = np.empty((group, n), np.uint32)
    xbits = X.view(np.uint32)
    for f0 in range(0, nf, group):
        f1 = min(nf, f0 + group)
        keys = colkeys[:f1 - f0]
        K.column_keys(xbits[:, f0:f1], keys)
        K.summarize_columns(keys, w, weighted, max_keys, ok[f0:f1], ow[f0:f1], olo[f0:f1],
                            ohi[f0:f1], counts[f0:f1], shifts[f0:f1], status[f0:f1])
    del colkeys
    if status.any():
        bad = np.flatnonzero(status).tolist()
        raise ValueError(f"infinite values in feature(s) {bad[:10]}")
    ptrs, (keys, weights, lo, hi) = _compact(counts, [ok, ow, olo, ohi])
    return Summaries(keys=keys, weights=weights, lo=lo.view(np.float32),
                     hi=hi.view(np.float32), ptrs=ptrs, shifts=shifts,
                     n_rows=n, max_keys=max_keys)


def summarize_weighted(X, weight, scale: float | None, max_keys: int) -> Summaries:
    """Summaries of rows with float weights (None: unweighted) in fixed point at ``scale``.

    Rows of weight 0 are left out, as XGBoost leaves them out of its sketch: adding zero-weight
    rows must not change the cuts (or the model).
    """
    if weight is None:
        return summarize(X, None, max_keys)
    keep = weight > 0
    return summarize(X[keep], to_fixed(weight[keep], scale), max_keys)


def merge(a: Summaries, b: Summaries, max_keys: int | None = None) -> Summaries:
    """Exact merge (see module doc): equals ``summarize`` of the union of rows.

    ``max_keys`` defaults to ``min(a.max_keys, b.max_keys)`` and may not
    exceed either input's (the result would not be exact).
    """
    return merge_many([a, b], max_keys)


def merge_many(parts, max_keys: int | None = None) -> Summaries:
    """Exact merge of one or more summaries at once (one k-way merge,
    dgbdt.data.sketch_merge): ``merge`` applied in any tree, bit for bit.
    ``max_keys`` as ``merge``'s, over all the inputs."""
    parts = list(parts)
    if not parts:
        raise ValueError("nothing to merge")
    if len({p.n_features for p in parts}) != 1:
        raise ValueError("summaries have different feature counts")
    lim = min(p.max_keys for p in parts)
    max_keys = lim if max_keys is None else int(max_keys)
    if max_keys < 1 or max_keys > lim:
        raise ValueError(f"max_keys must be in [1, {lim}] to merge exactly")
    # numpy over all features at once (dgbdt.data.sketch_merge): nothing to compile
    keys, weights, lo, hi, ptrs, shifts = merge_buckets(parts, max_keys)
    return Summaries(keys=keys, weights=weights, lo=lo, hi=hi, ptrs=ptrs, shifts=shifts,
                     n_rows=sum(p.n_rows for p in parts), max_keys=max_keys)


def merge_all(parts, max_keys: int | None = None) -> Summaries:
    """Merge a non-empty sequence of summaries (pairwise tree; order free)."""
    parts = list(parts)
    if not parts:
        raise ValueError("nothing to merge")
    while len(parts) > 1:
        nxt = [merge(parts[i], parts[i + 1], max_keys) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    out = parts[0]
    if max_keys is not None and out.max_keys != max_keys:
        out = merge(out, Summaries.empty(out.n_features, out.max_keys), max_keys)
    return out
