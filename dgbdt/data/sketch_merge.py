"""Exact merge of k sets of per-feature bucket summaries, in numpy, all features at once.

The inputs are ``Summaries`` (``dgbdt.data.sketch``) ``a_1 .. a_k``: feature f's buckets are
``keys[ptrs[f]:ptrs[f+1]]`` (ascending, ``key >> shifts[f]`` of uint32 sortable keys),
with int64 ``weights`` and float32 ``lo`` / ``hi``. With ``M = max_keys``, for every f:

1. Coarsen. ``s0_f = max_j s_jf``; a_j's keys of f are shifted right by ``s0_f - s_jf``.
2. Union. a_1's buckets, then a_2's, ..., stably sorted by ``(f, key)`` (one uint64 sort
   key ``f << 32 | key``; the inputs are k sorted runs, so the stable sort is a k-way merge
   taking the earlier input's bucket on a tie).
   Runs of equal ``(f, key)`` become one bucket: weight = sum, lo = min, hi = max, where of
   values that compare equal (only ``-0.0`` and ``+0.0`` can while differing in bits) the
   first in that order is kept, as a scan replacing only on a strictly smaller (larger) value
   keeps it: a run whose min (max) is zero takes its first zero. lo / hi hold no NaN (they
   are values of keys; a NaN is refused), so float order is a total order here.
3. Recoarsen. Of the ``k_f`` union buckets, let ``h_t = bit_length(key_t XOR key_{t-1})``
   for consecutive buckets of f. Shifting by d leaves ``1 + #{t : h_t > d}`` buckets, which
   does not increase with d, so the smallest ``d`` in 0..32 leaving ``<= M`` is
   ``d_f = #{d in 0..32 : 1 + #{t : h_t > d} > M}`` (0 when ``k_f <= M``), computed from a
   per-feature histogram of h (``bincount(33 f + h)``) and its cumulative sums. Runs of
   equal ``(f, key >> d_f)`` become one bucket: weight = sum, lo of the first, hi of the
   last (buckets are in value order, so these are the min and the max).

The result's shift of f is ``s0_f + d_f``. Sums are int64 (exact, order free); lo / hi are
chosen, never computed, so the result is bit for bit the sequential merge's. One k-way merge
equals k - 1 two-way merges (the union at the largest input shift is the same; dgbdt.data.sketch
proves any merge tree gives the summary of all rows), with one sort instead of k - 1: a
worker merging 8 partitions' summaries of 28 features did 7 two-way merges in ~0.1 s.
"""

from __future__ import annotations

import numpy as np

__all__ = ["merge_buckets"]

_U32 = np.uint64(32)
_LOW32 = np.uint64(0xFFFFFFFF)


def _feature_ids(ptrs: np.ndarray) -> np.ndarray:
    """int64: the feature of every bucket slot of a ``ptrs`` layout."""
    nf = ptrs.shape[0] - 1
    return np.repeat(np.arange(nf, dtype=np.int64), np.diff(ptrs))


def _extreme(ufunc, v: np.ndarray, st: np.ndarray) -> np.ndarray:
    """``ufunc`` (np.minimum / np.maximum) of float32 ``v`` over the runs starting at ``st``,
    a run's first zero where the result is zero (the two zeros compare equal: a scan that
    replaces only on a strictly smaller / larger value keeps the first)."""
    m = ufunc.reduceat(v, st)
    if np.isnan(m).any():
        raise ValueError("summary lo / hi hold NaN: these Summaries are not ones summarize built")
    if (m == 0).any():
        iz = np.flatnonzero(v == 0)
        run = np.searchsorted(st, iz, side="right") - 1
        first = np.ones(run.shape[0], dtype=bool)
        first[1:] = run[1:] != run[:-1]
        run, iz = run[first], iz[first]
        zero = m[run] == 0
        m[run[zero]] = v[iz[zero]]
    return m


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Bits needed for each ``x < 2**32`` (0 for 0): the frexp exponent, exact in float64."""
    return np.frexp(x.astype(np.float64))[1].astype(np.int64)


def _run_starts(c: np.ndarray) -> np.ndarray:
    """Positions where a run of equal values of the sorted ``c`` starts."""
    new = np.empty(c.shape[0], dtype=bool)
    if c.shape[0]:
        new[0] = True
        np.not_equal(c[1:], c[:-1], out=new[1:])
    return np.flatnonzero(new)


def merge_buckets(parts, max_keys: int):
    """``(keys, weights, lo, hi, ptrs, shifts)`` of the exact merge of ``parts`` (one or more
    ``Summaries`` of as many features) under ``max_keys`` (see the module doc)."""
    nf = parts[0].ptrs.shape[0] - 1
    s0 = np.max([p.shifts for p in parts], axis=0).astype(np.int64)
    fids = [_feature_ids(p.ptrs) for p in parts]
    fid = np.concatenate(fids)
    key = np.concatenate([p.keys >> (s0 - p.shifts).astype(np.uint64)[f]
                          for p, f in zip(parts, fids)])
    n = key.shape[0]
    ptrs = np.zeros(nf + 1, np.int64)
    if n == 0:
        return (np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.float32),
                np.zeros(0, np.float32), ptrs, s0)
    if int(key.max()) > 0xFFFFFFFF:
        raise ValueError("summary bucket keys must be below 2**32 (key >> shift of a uint32 "
                         "sortable key): these Summaries are not ones summarize built")
    # the inputs are sorted runs, so the stable sort (timsort) is a merge of k runs
    comp = (fid.astype(np.uint64) << _U32) | key
    order = np.argsort(comp, kind="stable")
    comp = comp[order]
    w = np.concatenate([p.weights for p in parts])[order]
    lo = np.concatenate([p.lo for p in parts]).astype(np.float32, copy=False)[order]
    hi = np.concatenate([p.hi for p in parts]).astype(np.float32, copy=False)[order]

    st = _run_starts(comp)
    lo, hi = _extreme(np.minimum, lo, st), _extreme(np.maximum, hi, st)
    comp, w = comp[st], np.add.reduceat(w, st)
    fid, key = (comp >> _U32).astype(np.int64), comp & _LOW32
    counts = np.bincount(fid, minlength=nf)

    d = np.zeros(nf, np.int64)
    if counts.max() > max_keys:
        same = fid[1:] == fid[:-1]
        h = _bit_length(key[1:][same] ^ key[:-1][same])
        hist = np.bincount(33 * fid[1:][same] + h, minlength=33 * nf).reshape(nf, 33)
        cum = np.cumsum(hist, axis=1)
        d = ((cum[:, -1:] - cum + 1) > max_keys).sum(axis=1).astype(np.int64)
        key = key >> d.astype(np.uint64)[fid]
        st = _run_starts((fid.astype(np.uint64) << _U32) | key)
        last = np.append(st[1:], key.shape[0]) - 1
        fid, key, w = fid[st], key[st], np.add.reduceat(w, st)
        lo, hi = lo[st], hi[last]
        counts = np.bincount(fid, minlength=nf)
    np.cumsum(counts, out=ptrs[1:])
    return key, w, lo, hi, ptrs, s0 + d
