"""Cuts from summaries (XGBoost-exact on few distinct values) and quantization."""

import json

import numpy as np
import pytest

from dgbdt.data.quantize import Cuts, cuts_from_summaries, quantize, symbol_dtype
from dgbdt.data.sketch import default_max_keys, summarize, to_fixed, weight_scale

xgb = pytest.importorskip("xgboost")


def _cuts(X, max_bin, w=None):
    return cuts_from_summaries(summarize(X, w, default_max_keys(max_bin)), max_bin)


def _xgb_cuts(X, max_bin):
    """XGBoost's cuts. ``get_quantile_cut`` (3.x) lists, per feature, the
    feature's min_value followed by its cut values."""
    dm = xgb.QuantileDMatrix(X, max_bin=max_bin)
    indptr, values = dm.get_quantile_cut()
    indptr = np.asarray(indptr, np.int64)
    values = np.asarray(values, np.float32)
    mins = values[indptr[:-1]]
    keep = np.ones(values.shape[0], bool)
    keep[indptr[:-1]] = False
    ptrs = indptr - np.arange(indptr.shape[0])
    return values[keep], ptrs, mins


def _few_distinct(rng, n):
    cols = [
        rng.integers(0, 10, n),
        rng.integers(-50, 50, n),
        rng.integers(0, 256, n),  # exactly max_bin distinct values
        rng.choice(rng.standard_normal(200).astype(np.float32) * 1000, n),
        rng.choice(rng.standard_normal(256).astype(np.float32) * 1e-3, n),
        rng.choice(np.float32([-3.3, 7.1e7, 1e-38]), n),
        np.full(n, -2.5),
        rng.choice(np.float32([49.0, 0.1, -0.0, 123456.7]), n),
        rng.choice(rng.lognormal(0, 3, 100).astype(np.float32), n),
    ]
    X = np.stack(cols, axis=1).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    return X


def _assert_min_values(ours, mins):
    """XGBoost 3.2 reports min - (|min| + 1e-5) per feature, as we do; 3.4 reports -inf."""
    if np.all(np.isneginf(mins)):
        assert np.all(np.isfinite(ours.min_values))
        return
    np.testing.assert_array_equal(ours.min_values.view(np.uint32), mins.view(np.uint32))


@pytest.mark.parametrize("seed", [0, 1])
def test_cuts_equal_xgboost_on_few_distinct_values(seed):
    rng = np.random.default_rng(seed)
    X = _few_distinct(rng, 5000)
    ours = _cuts(X, 256)
    values, ptrs, mins = _xgb_cuts(X, 256)
    np.testing.assert_array_equal(ours.ptrs, ptrs)
    np.testing.assert_array_equal(ours.values.view(np.uint32), values.view(np.uint32))
    _assert_min_values(ours, mins)
    # K distinct values give K bins
    for f in range(X.shape[1]):
        assert ours.n_bins()[f] == np.unique(X[:, f][~np.isnan(X[:, f])]).shape[0]


def test_cuts_equal_xgboost_small_max_bin():
    rng = np.random.default_rng(3)
    X = np.stack([rng.integers(0, 16, 2000), rng.integers(-3, 3, 2000)], 1).astype(np.float32)
    ours = _cuts(X, 16)
    values, ptrs, mins = _xgb_cuts(X, 16)
    np.testing.assert_array_equal(ours.ptrs, ptrs)
    np.testing.assert_array_equal(ours.values, values)
    _assert_min_values(ours, mins)


def test_empty_feature():
    X = np.stack([np.full(50, np.nan), np.arange(50.0)], 1).astype(np.float32)
    c = _cuts(X, 256)
    assert c.n_bins()[0] == 1
    assert c.feature(0)[0] == np.float32(1e-5) and c.min_values[0] == np.float32(-1e-5)
    q = quantize(X, c)
    assert np.all(q[:, 0] == 1)  # every row missing


def _reference_bins(X, cuts):
    out = np.empty(X.shape, np.int64)
    nb = cuts.n_bins()
    for f in range(X.shape[1]):
        c = cuts.feature(f)
        b = np.minimum(np.searchsorted(c, X[:, f], side="right"), nb[f] - 1)
        out[:, f] = np.where(np.isnan(X[:, f]), nb[f], b)
    return out


@pytest.mark.parametrize("max_bin", [2, 16, 256])
def test_quantize_matches_searchsorted(max_bin):
    rng = np.random.default_rng(max_bin)
    X = np.concatenate([_few_distinct(rng, 3000)[:, :6],
                        rng.standard_normal((3000, 3)).astype(np.float32)], axis=1)
    c = _cuts(X, max_bin)
    q = quantize(X, c)
    assert q.dtype == np.uint16
    np.testing.assert_array_equal(q, _reference_bins(X, c))
    # fresh data: values beyond the last cut clip, below the first go to 0
    Y = rng.standard_normal((2000, X.shape[1])).astype(np.float32) * 1e6
    Y[::5] = np.nan
    qy = quantize(Y, c)
    np.testing.assert_array_equal(qy, _reference_bins(Y, c))
    nb = c.n_bins()
    big = np.full((1, X.shape[1]), 3e38, np.float32)
    np.testing.assert_array_equal(quantize(big, c)[0], nb - 1)
    assert np.all(quantize(np.full((1, X.shape[1]), np.nan, np.float32), c)[0] == nb)


def test_hist_ptrs_and_properties():
    c = Cuts(values=np.float32([1, 2, 3, 0.5, 7]), ptrs=np.int64([0, 3, 3 + 1, 5]),
             min_values=np.float32([0, 0, 0]))
    np.testing.assert_array_equal(c.n_bins(), [3, 1, 1])
    np.testing.assert_array_equal(c.hist_ptrs(), [0, 4, 6, 8])
    assert c.n_features == 3 and c.max_bins == 3


def test_cuts_serialization_exact():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((5000, 4)).astype(np.float32) * np.float32([1, 1e-20, 1e20, 3])
    c = _cuts(X, 64)
    back = Cuts.from_dict(json.loads(json.dumps(c.to_dict())))
    assert back.equals(c)
    assert back.values.dtype == np.float32 and back.ptrs.dtype == np.int64


def test_uint32_symbols_for_huge_bin_counts():
    n = 70000
    X = np.arange(n, dtype=np.float32)[:, None]
    c = _cuts(X, n)
    assert c.n_bins()[0] == n and symbol_dtype(c) == np.uint32
    q = quantize(X, c)
    assert q.dtype == np.uint32
    np.testing.assert_array_equal(q[:, 0], np.arange(n))


def _bin_shares(q, nb, w=None):
    counts = np.bincount(q.astype(np.int64), weights=w, minlength=nb)[:nb]
    return counts / counts.sum()


@pytest.mark.parametrize("max_bin", [16, 256])
@pytest.mark.parametrize("weighted", [False, True])
def test_continuous_bins_roughly_equal_weight(max_bin, weighted):
    rng = np.random.default_rng(max_bin + weighted)
    n = 100_000
    X = np.stack([rng.standard_normal(n), rng.exponential(1, n), rng.random(n) * 1e4 + 1e3],
                 axis=1).astype(np.float32)
    w = rng.random(n) * 2 if weighted else None
    wf = to_fixed(w, weight_scale(w.max(), n)) if weighted else None
    c = _cuts(X, max_bin, wf)
    q = quantize(X, c)
    for f in range(X.shape[1]):
        nb = c.n_bins()[f]
        assert nb >= 0.9 * max_bin
        share = _bin_shares(q[:, f], nb, w)
        assert share.min() > 0.5 / max_bin and share.max() < 2.0 / max_bin, (f, share.min(), share.max())


def test_cuts_close_to_xgboost_quantiles():
    rng = np.random.default_rng(11)
    n = 100_000
    X = np.stack([rng.standard_normal(n), rng.lognormal(0, 1, n)], axis=1).astype(np.float32)
    for max_bin in [16, 256]:
        ours = _cuts(X, max_bin)
        values, ptrs, _ = _xgb_cuts(X, max_bin)
        for f in range(X.shape[1]):
            srt = np.sort(X[:, f])
            # rank (fraction of data below) of each interior cut
            r_ours = np.searchsorted(srt, ours.feature(f)[:-1]) / n
            r_xgb = np.searchsorted(srt, values[ptrs[f]:ptrs[f + 1]][:-1]) / n
            assert abs(len(r_ours) - len(r_xgb)) <= 0.1 * max_bin
            # every cut of ours is near one of XGBoost's, and vice versa
            d1 = np.abs(r_ours[:, None] - r_xgb[None, :]).min(axis=1)
            d2 = np.abs(r_xgb[:, None] - r_ours[None, :]).min(axis=1)
            assert d1.max() < 1.0 / max_bin and d2.max() < 1.0 / max_bin, (f, d1.max(), d2.max())


def test_quantize_layouts_agree():
    rng = np.random.default_rng(12)
    X = rng.standard_normal((3000, 5)).astype(np.float32)
    X[::7, 2] = np.nan
    c = _cuts(X, 32)
    q = quantize(X, c)
    np.testing.assert_array_equal(quantize(np.asfortranarray(X), c), q)
    np.testing.assert_array_equal(quantize(np.repeat(X, 2, axis=1)[:, ::2], c), q)
