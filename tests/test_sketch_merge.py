"""The sketch's numpy merge (dgbdt.data.sketch_merge): bit for bit the summary of the union.

``merge(summarize(A), summarize(B)) == summarize(A + B)`` array for array (keys, weights,
lo / hi bitwise, ptrs, shifts, dtypes) over many random pairs: mixed columns (NaN, signed
zeros, few distinct values, wide ranges, all missing), weighted or not, empty and one-row
parts, and max_keys that do and do not force the merge to coarsen."""

import numpy as np
import pytest

from dgbdt.data.sketch import (Summaries, merge, merge_all, merge_many, summarize, to_fixed,
                               weight_scale)


def _column(rng, n):
    kind = int(rng.integers(0, 8))
    if kind == 0:
        c = rng.standard_normal(n)
    elif kind == 1:
        c = rng.integers(0, int(rng.integers(1, 6)), n).astype(np.float64)
    elif kind == 2:
        c = np.full(n, np.nan)
    elif kind == 3:
        c = rng.choice([-0.0, 0.0, 1.0, -1.0], n)
    elif kind == 4:
        c = np.exp(rng.standard_normal(n) * 10) * rng.choice([-1.0, 1.0], n)
    elif kind == 5:
        c = rng.standard_normal(n) * 1e-30
    elif kind == 6:
        c = np.round(rng.standard_normal(n) * 100) / 7
    else:
        c = rng.uniform(-1e6, 1e6, n)
    c = c.astype(np.float32)
    c[rng.random(n) < rng.choice([0.0, 0.1, 0.9])] = np.nan
    return c


def _data(rng, n, nf):
    X = np.empty((n, nf), np.float32)
    for f in range(nf):
        X[:, f] = _column(rng, n)
    return X


def _weights(rng, n):
    w = rng.exponential(1.0, n)
    w[rng.random(n) < 0.1] = 0.0
    return to_fixed(w, weight_scale(float(w.max()) if n else 0.0, max(n, 1)))


def _same(x: Summaries, y: Summaries) -> bool:
    dtypes = all(getattr(x, k).dtype == getattr(y, k).dtype
                 for k in ("keys", "weights", "lo", "hi", "ptrs", "shifts"))
    return dtypes and x.equals(y)


def test_merge_equals_summary_of_the_union():
    rng = np.random.default_rng(20)
    coarsened = 0
    for trial in range(400):
        nf = int(rng.integers(0, 6))
        na = int(rng.choice([0, 1, int(rng.integers(2, 400))]))
        nb = int(rng.choice([0, 1, int(rng.integers(2, 400))]))
        X = _data(rng, na + nb, nf)
        w = _weights(rng, na + nb) if rng.random() < 0.5 else None
        mk = int(rng.choice([1, 2, 3, 5, 16, 64, 1000]))
        wa = None if w is None else w[:na]
        wb = None if w is None else w[na:]
        # b built under a larger max_keys: merging down to the smaller one is exact too
        a = summarize(X[:na], wa, mk)
        b = summarize(X[na:], wb, int(rng.choice([mk, 2 * mk])))
        for m in sorted({mk, max(1, mk // 3)}):
            got = merge(a, b, m)
            want = summarize(X, w, m)
            assert _same(got, want), (trial, nf, na, nb, mk, m)
            coarsened += int(np.any(got.shifts > np.maximum(a.shifts, b.shifts)))
    assert coarsened > 50  # the re-coarsening step was exercised


def test_merge_all_groupings_agree():
    rng = np.random.default_rng(21)
    X = _data(rng, 3000, 6)
    w = _weights(rng, 3000)
    for mk in (4, 64, 4096):
        want = summarize(X, w, mk)
        cuts = np.sort(rng.choice(np.arange(1, 3000), 6, replace=False))
        idx = np.split(np.arange(3000), cuts)
        parts = [summarize(X[i], w[i], mk) for i in idx]
        assert _same(merge_all(parts), want)
        assert _same(merge_all(parts[::-1]), want)
        left = parts[0]
        for p in parts[1:]:  # a chain instead of a tree
            left = merge(left, p)
        assert _same(left, want)
        strided = [summarize(X[k::4], w[k::4], mk) for k in range(4)]  # interleaved rows
        assert _same(merge(merge(strided[0], strided[3]), merge(strided[2], strided[1])), want)


def test_one_k_way_merge_equals_the_two_way_merges():
    """merge_many (one sort of k runs) is bit for bit the chain of two-way merges and the
    summary of all rows: parts of any size (empty, one row), max_keys forcing coarsening or
    not, inputs built under larger max_keys than the merge's."""
    rng = np.random.default_rng(22)
    for trial in range(120):
        nf = int(rng.integers(1, 6))
        k = int(rng.integers(1, 10))
        sizes = [int(rng.choice([0, 1, int(rng.integers(2, 300))])) for _ in range(k)]
        X = _data(rng, sum(sizes), nf)
        w = _weights(rng, sum(sizes)) if rng.random() < 0.5 else None
        mk = int(rng.choice([1, 3, 16, 64, 1000]))
        bounds = np.cumsum([0] + sizes)
        parts = [summarize(X[a:b], None if w is None else w[a:b], int(rng.choice([mk, 2 * mk])))
                 for a, b in zip(bounds[:-1], bounds[1:])]
        chain = parts[0]
        for p in parts[1:]:
            chain = merge(chain, p, mk)
        if k == 1:
            chain = merge(chain, Summaries.empty(nf, chain.max_keys), mk)
        got = merge_many(parts, mk)
        assert _same(got, chain), trial
        assert _same(got, summarize(X, w, mk)), trial
    with pytest.raises(ValueError, match="nothing"):
        merge_many([])


def _one_feature(keys, lo, hi, shift=0, weights=None):
    k = np.asarray(keys, np.uint64)
    return Summaries(keys=k, weights=np.ones(k.size, np.int64) if weights is None
                     else np.asarray(weights, np.int64),
                     lo=np.asarray(lo, np.float32), hi=np.asarray(hi, np.float32),
                     ptrs=np.array([0, k.size], np.int64), shifts=np.array([shift], np.int64),
                     n_rows=k.size, max_keys=8)


def test_equal_extremes_keep_the_first_operand():
    """Of lo (hi) values that compare equal, +0.0 and -0.0, the first operand's is kept, as
    a scan replacing only on a strictly smaller (larger) value keeps it."""
    pz, nz = np.float32(0.0), np.float32(-0.0)
    for first, second in ((pz, nz), (nz, pz)):
        m = merge(_one_feature([5], [first], [first]), _one_feature([5], [second], [second]))
        assert np.signbit(m.lo[0]) == np.signbit(first)
        assert np.signbit(m.hi[0]) == np.signbit(first)
    # a smaller value still wins wherever it comes
    m = merge(_one_feature([5], [pz], [pz]), _one_feature([5], [-1.0], [1.0]))
    assert m.lo[0] == -1.0 and m.hi[0] == 1.0


def test_coarsening_by_hand():
    """Union keys 0..5 at shift 0: the bit lengths of consecutive XORs are 1, 2, 1, 3, 1, so
    shift d leaves 1 + #{h > d} = 6, 3, 2, 1 buckets for d = 0..3: max_keys 3 gives shift 1
    ({0,1} {2,3} {4,5}), max_keys 2 gives shift 2 ({0..3} {4,5})."""
    a = _one_feature([0, 2, 4], [0.0, 2.0, 4.0], [0.0, 2.0, 4.0], weights=[1, 2, 3])
    b = _one_feature([1, 3, 5], [1.0, 3.0, 5.0], [1.0, 3.0, 5.0], weights=[10, 20, 30])
    m = merge(a, b, 3)
    assert m.shifts.tolist() == [1] and m.keys.tolist() == [0, 1, 2]
    assert m.weights.tolist() == [11, 22, 33]
    assert m.lo.tolist() == [0.0, 2.0, 4.0] and m.hi.tolist() == [1.0, 3.0, 5.0]
    m = merge(a, b, 2)
    assert m.shifts.tolist() == [2] and m.keys.tolist() == [0, 1]
    assert m.weights.tolist() == [33, 33] and m.hi.tolist() == [3.0, 5.0]


def test_invalid_summaries_refused():
    with pytest.raises(ValueError, match="NaN"):
        merge(_one_feature([5], [np.nan], [1.0]), _one_feature([5], [0.5], [1.0]))
    with pytest.raises(ValueError, match="below 2\\*\\*32"):
        merge(_one_feature([1 << 33], [1.0], [1.0]), _one_feature([5], [0.5], [1.0]))
