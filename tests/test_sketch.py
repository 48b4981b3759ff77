"""Quantile summaries: exactness, bounded size, partition / merge-order invariance."""

import json

import numpy as np
import pytest

from dgbdt.data.sketch import (
    Summaries,
    default_max_keys,
    merge,
    merge_all,
    summarize,
    to_fixed,
    weight_scale,
)


def _keys(v):
    """Reference sortable keys (numpy), with -0.0 normalized."""
    v = np.where(v == 0, np.float32(0), v).astype(np.float32)
    u = v.view(np.uint32)
    return np.where(u >> 31 == 1, ~u, u | np.uint32(0x80000000)).astype(np.uint64), v


def _group(keys, w, lo, hi):
    uk, inv = np.unique(keys, return_inverse=True)
    W = np.zeros(uk.shape[0], np.int64)
    np.add.at(W, inv, w)
    L = np.full(uk.shape[0], np.inf, np.float32)
    H = np.full(uk.shape[0], -np.inf, np.float32)
    np.minimum.at(L, inv, lo)
    np.maximum.at(H, inv, hi)
    return uk, W, L, H


def reference_feature(col, w, max_keys):
    """Build by the definition: shift 0, then coarsen ONE bit at a time."""
    m = ~np.isnan(col)
    k, v = _keys(col[m])
    ww = np.ones(v.shape[0], np.int64) if w is None else w[m]
    uk, W, L, H = _group(k, ww, v, v)
    shift = 0
    while uk.shape[0] > max_keys:
        shift += 1
        uk, W, L, H = _group(uk >> np.uint64(1), W, L, H)
    return uk, W, L, H, shift


def _check_against_reference(s, X, w, max_keys):
    for f in range(X.shape[1]):
        k, W, L, H, shift = s.feature(f)
        rk, rW, rL, rH, rshift = reference_feature(X[:, f], w, max_keys)
        assert shift == rshift
        np.testing.assert_array_equal(k, rk)
        np.testing.assert_array_equal(W, rW)
        np.testing.assert_array_equal(L.view(np.uint32), rL.view(np.uint32))
        np.testing.assert_array_equal(H.view(np.uint32), rH.view(np.uint32))
        assert len(k) <= max_keys


def _mixed_data(rng, n):
    cols = [
        rng.standard_normal(n),
        rng.integers(-5, 6, n).astype(np.float64),  # few distinct, incl. 0
        rng.lognormal(0, 4, n) * rng.choice([-1, 1], n),  # wide dynamic range
        np.round(rng.random(n) * 1000) / 7,
        np.full(n, 3.25),  # constant
        np.full(n, np.nan),  # all missing
        rng.choice([-0.0, 0.0, 1.5], n),  # signed zeros
    ]
    X = np.stack(cols, axis=1).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    return X


@pytest.mark.parametrize("max_keys", [1, 7, 64, 4096])
@pytest.mark.parametrize("weighted", [False, True])
def test_build_matches_definition(max_keys, weighted):
    rng = np.random.default_rng(max_keys)
    X = _mixed_data(rng, 3000)
    w = rng.integers(0, 1000, X.shape[0]).astype(np.int64) if weighted else None
    s = summarize(X, w, max_keys)
    assert s.n_rows == X.shape[0] and s.max_keys == max_keys
    _check_against_reference(s, X, w, max_keys)


def test_exact_at_shift_zero():
    rng = np.random.default_rng(1)
    vals = rng.standard_normal(50).astype(np.float32)
    col = rng.choice(vals, 10000)
    X = col[:, None]
    s = summarize(X, None, 4096)
    k, W, L, H, shift = s.feature(0)
    assert shift == 0
    u, counts = np.unique(col, return_counts=True)
    np.testing.assert_array_equal(L, u)
    np.testing.assert_array_equal(H, u)
    np.testing.assert_array_equal(W, counts)


def test_nan_excluded_and_signed_zero_merged():
    X = np.array([[np.nan], [-0.0], [0.0], [np.nan], [2.0], [-0.0]], np.float32)
    s = summarize(X, None, 16)
    k, W, L, H, shift = s.feature(0)
    assert shift == 0 and len(k) == 2
    np.testing.assert_array_equal(W, [3, 1])
    assert L[0] == 0 and not np.signbit(L[0]) and not np.signbit(H[0])
    assert s.n_rows == 6
    assert s.total_weight()[0] == 4


def test_coarsening_bound_and_shift_minimal():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((20000, 3)).astype(np.float32)
    for mk in [1, 2, 10, 100, 1000]:
        s = summarize(X, None, mk)
        assert np.all(s.n_buckets() <= mk)
        for f in range(3):
            _, W, _, _, shift = s.feature(f)
            assert W.sum() == 20000
            if shift > 0:  # one bit finer would not fit
                k, _ = _keys(X[:, f])
                assert np.unique(k >> np.uint64(shift - 1)).shape[0] > mk


def test_infinite_rejected():
    X = np.array([[1.0], [np.inf]], np.float32)
    with pytest.raises(ValueError):
        summarize(X, None, 16)
    with pytest.raises(ValueError):
        summarize(-X, None, 16)


def _random_tree_merge(rng, parts, max_keys):
    pool = list(parts)
    while len(pool) > 1:
        i, j = rng.choice(len(pool), 2, replace=False)
        a, b = pool[i], pool[j]
        pool = [p for t, p in enumerate(pool) if t not in (i, j)]
        pool.append(merge(a, b, max_keys) if rng.random() < 0.5 else merge(b, a, max_keys))
    return pool[0]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("max_keys", [3, 50, 500, 4096])
def test_partition_and_merge_order_invariance(weighted, max_keys):
    rng = np.random.default_rng(100 + max_keys + weighted)
    n = 6000
    X = _mixed_data(rng, n)
    w = rng.integers(0, 1 << 40, n).astype(np.int64) if weighted else None
    full = summarize(X, w, max_keys)
    for trial in range(4):
        n_parts = int(rng.integers(2, 12))
        perm = rng.permutation(n)  # rows shuffled across partitions
        bounds = np.sort(rng.integers(0, n + 1, n_parts - 1))  # may be empty
        idx = np.split(perm, bounds)
        parts = [summarize(X[i], None if w is None else w[i], max_keys) for i in idx]
        if trial % 2:
            merged = merge_all(parts, max_keys)
        else:
            merged = _random_tree_merge(rng, parts, max_keys)
        assert merged.equals(full)
        assert merged.n_rows == n


def test_merge_commutative_and_identity():
    rng = np.random.default_rng(3)
    X = _mixed_data(rng, 2000)
    a = summarize(X[:700], None, 40)
    b = summarize(X[700:], None, 40)
    assert merge(a, b).equals(merge(b, a))
    assert merge(a, Summaries.empty(X.shape[1], 40)).equals(a)
    assert merge(a, b).equals(summarize(X, None, 40))


def test_merge_to_smaller_max_keys_is_exact_larger_refused():
    rng = np.random.default_rng(4)
    X = _mixed_data(rng, 4000)
    a = summarize(X[:1500], None, 300)
    b = summarize(X[1500:], None, 300)
    assert merge(a, b, 20).equals(summarize(X, None, 20))
    assert merge_all([a], 20).equals(summarize(X[:1500], None, 20))
    with pytest.raises(ValueError):
        merge(a, b, 301)


def test_serialization_round_trip():
    rng = np.random.default_rng(5)
    X = _mixed_data(rng, 3000)
    w = rng.integers(0, 1 << 50, X.shape[0]).astype(np.int64)
    s = summarize(X, w, 64)
    d = json.loads(json.dumps(s.to_dict()))
    assert Summaries.from_dict(d).equals(s)
    e = Summaries.empty(4, 10)
    assert Summaries.from_dict(json.loads(json.dumps(e.to_dict()))).equals(e)


def test_empty_inputs():
    s = summarize(np.zeros((0, 3), np.float32), None, 8)
    assert s.n_features == 3 and s.n_rows == 0 and s.keys.size == 0
    s = summarize(np.zeros((5, 0), np.float32), None, 8)
    assert s.n_features == 0 and s.n_rows == 5


def test_weight_scale_and_fixed_point():
    for mw, n in [(1.0, 1), (1.0, 10**6), (3.7e5, 123457), (1e-30, 10), (1e30, 10**9)]:
        sc = weight_scale(mw, n)
        m, e = np.frexp(sc)
        assert m == 0.5  # a power of two
        assert mw * sc * n < 2.0**62
        assert mw * (2 * sc) * n >= 2.0**62  # the largest such power
    assert weight_scale(0.0, 10) == 1.0
    w = np.array([0.0, 0.5, 1.0, 0.3])
    sc = weight_scale(w.max(), 4)
    f = to_fixed(w, sc)
    assert f.dtype == np.int64 and f[2] == int(sc) and f[1] == int(sc) // 2
    assert int(f.sum()) < 2**62
    with pytest.raises(ValueError):
        to_fixed([-1.0], 1.0)


def test_default_max_keys():
    assert default_max_keys(256) == 4096
    assert default_max_keys(1024) == 16384
    assert default_max_keys(16) == 4096


def test_memory_layouts_agree():
    rng = np.random.default_rng(8)
    X = _mixed_data(rng, 1500)
    ref = summarize(X, None, 30)
    assert summarize(np.asfortranarray(X), None, 30).equals(ref)
    wide = np.repeat(X, 2, axis=1)
    assert summarize(wide[:, ::2], None, 30).equals(ref)  # strided view
    assert summarize(X.astype(np.float64), None, 30).equals(ref)  # cast


@pytest.mark.parametrize("group", [1, 3, 8])
def test_features_keyed_in_groups_give_the_same_summaries(monkeypatch, group):
    """summarize keys a group of features at a time (less memory than a copy of the matrix):
    any group size gives the summaries of all features at once, and an infinite value in a
    later group is still found and named."""
    import dgbdt.data.sketch as sk

    rng = np.random.default_rng(9)
    X = np.concatenate([_mixed_data(rng, 3000) for _ in range(5)], axis=1)
    w = to_fixed(rng.uniform(0.5, 2.0, 3000), weight_scale(2.0, 3000))
    monkeypatch.setattr(sk, "_KEY_GROUP", X.shape[1])         # all at once
    ref = {k: summarize(X, wk, 64) for k, wk in (("plain", None), ("weighted", w))}
    monkeypatch.setattr(sk, "_KEY_GROUP", group)
    monkeypatch.setattr(sk.numba, "get_num_threads", lambda: 1)
    assert summarize(X, None, 64).equals(ref["plain"])
    assert summarize(X, w, 64).equals(ref["weighted"])
    X[7, X.shape[1] - 1] = np.inf
    with pytest.raises(ValueError, match=rf"feature\(s\) \[{X.shape[1] - 1}\]"):
        summarize(X, None, 64)
