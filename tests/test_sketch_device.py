"""The xp-generic summaries (numpy as xp here) equal the CPU ``summarize`` bit for bit."""

import numpy as np
import pytest

from dgbdt.data.sketch import Summaries, summarize, summarize_weighted, to_fixed
from dgbdt.data.sketch_device import (
    summarize_device,
    summarize_weighted_device,
    to_fixed_device,
)


def _data(kind, n, nf, rng):
    if kind == "normal":
        return rng.standard_normal((n, nf)).astype(np.float32)
    if kind == "ints":
        return rng.integers(-3, 4, size=(n, nf)).astype(np.float32)
    if kind == "nan_heavy":
        X = rng.standard_normal((n, nf)).astype(np.float32)
        X[rng.random((n, nf)) < 0.8] = np.nan
        if nf > 1:
            X[:, 1] = np.nan  # an all-NaN column
        return X
    if kind == "zeros":
        X = rng.choice(np.array([0.0, -0.0, 1.0, -1.0], np.float32), size=(n, nf))
        X[rng.random((n, nf)) < 0.1] = np.nan
        return X
    if kind == "constant":
        X = np.full((n, nf), 2.5, np.float32)
        X[:, 0] = -0.0
        return X
    if kind == "range":
        mag = 10.0 ** rng.uniform(-30, 30, size=(n, nf))
        return (mag * rng.choice([-1.0, 1.0], size=(n, nf))).astype(np.float32)
    raise AssertionError(kind)


def _check(X, w, max_keys):
    ref = summarize(X, w, max_keys)
    got = summarize_device(X, w, max_keys, xp=np)
    assert isinstance(got.keys, np.ndarray)
    for name in ("keys", "weights", "lo", "hi", "ptrs", "shifts"):
        assert getattr(got, name).dtype == getattr(ref, name).dtype, name
    assert got.equals(ref)
    return got


KINDS = ["normal", "ints", "nan_heavy", "zeros", "constant", "range"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("max_keys", [1, 4, 16, 4096])
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_cpu(kind, max_keys, weighted):
    rng = np.random.default_rng([KINDS.index(kind), max_keys, int(weighted)])
    n, nf = 600, 4
    X = _data(kind, n, nf, rng)
    w = None
    if weighted:
        w = rng.integers(0, 1 << 40, size=n).astype(np.int64)
        w[rng.random(n) < 0.2] = 0
    s = _check(X, w, max_keys)
    assert (s.n_buckets() <= max_keys).all()


@pytest.mark.parametrize("n", [0, 1, 2, 3, 50])
@pytest.mark.parametrize("nf", [0, 1, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_small_shapes(n, nf, weighted):
    rng = np.random.default_rng(7 * n + nf)
    X = rng.standard_normal((n, nf)).astype(np.float32)
    X[rng.random((n, nf)) < 0.3] = np.nan
    w = rng.integers(0, 100, size=n).astype(np.int64) if weighted else None
    for mk in (1, 2, 4096):
        _check(X, w, mk)


def test_big_column_many_keys():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20000, 2)).astype(np.float32)
    X[:, 1] = rng.integers(0, 5000, size=20000)
    for mk in (64, 4096, 100000):
        _check(X, None, mk)


def test_other_dtypes_and_layouts():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 5))
    _check(X, None, 16)  # float64, cast
    _check(np.asfortranarray(X.astype(np.float32)), None, 16)
    _check(X.astype(np.float32)[::2, ::2], None, 8)  # strided view
    assert summarize_device(X, None, 16).equals(summarize(X, None, 16))  # xp=None -> numpy


@pytest.mark.parametrize("v", [np.inf, -np.inf])
def test_inf_raises_same_message(v):
    X = np.zeros((10, 14), np.float32)
    X[3, 2] = v
    X[0, 13] = -np.inf
    X[:, 5] = np.nan
    X[1, 5] = np.inf
    with pytest.raises(ValueError) as e_ref:
        summarize(X)
    with pytest.raises(ValueError) as e_dev:
        summarize_device(X, xp=np)
    assert str(e_dev.value) == str(e_ref.value)
    assert "infinite values in feature(s) [2, 5, 13]" in str(e_dev.value)


def test_validation_errors():
    X = np.zeros((4, 2), np.float32)
    with pytest.raises(ValueError):
        summarize_device(np.zeros(3, np.float32), xp=np)
    with pytest.raises(ValueError):
        summarize_device(X, max_keys=0, xp=np)
    with pytest.raises(TypeError):
        summarize_device(X, np.ones(4, np.int32), xp=np)
    with pytest.raises(ValueError):
        summarize_device(X, np.ones(3, np.int64), xp=np)
    with pytest.raises(ValueError):
        summarize_device(X, np.array([1, -1, 0, 2], np.int64), xp=np)


@pytest.mark.parametrize("with_weight", [False, True])
def test_summarize_weighted(with_weight):
    rng = np.random.default_rng(3)
    n = 500
    X = rng.standard_normal((n, 3)).astype(np.float32)
    X[rng.random((n, 3)) < 0.1] = np.nan
    weight = None
    if with_weight:
        weight = rng.exponential(size=n)
        weight[rng.random(n) < 0.2] = 0.0
        weight[:3] = [np.nan, -1.0, 0.5]
    scale = 2.0 ** 40
    for mk in (4, 64):
        ref = summarize_weighted(X, weight, scale, mk)
        got = summarize_weighted_device(X, weight, scale, mk, xp=np)
        assert isinstance(got, Summaries) and got.equals(ref)


def test_to_fixed_device():
    rng = np.random.default_rng(4)
    w = np.concatenate([rng.exponential(size=100), [0.0, 0.5, 1.5, 2.5]])
    for scale in (1.0, 2.0 ** -3, 2.0 ** 50):
        np.testing.assert_array_equal(to_fixed_device(w, scale, np), to_fixed(w, scale))
    with pytest.raises(ValueError):
        to_fixed_device(np.array([1.0, np.inf]), 1.0, np)
    with pytest.raises(ValueError):
        to_fixed_device(np.array([1.0, -2.0]), 1.0, np)


@pytest.mark.parametrize("chunk", [1, 7, 50])
def test_feature_chunks_give_the_same_summaries(chunk, monkeypatch):
    """Summarizing features in groups (to bound the sort's memory) is exact."""
    import dgbdt.data.sketch_device as sd
    rng = np.random.default_rng(5)
    X = rng.standard_normal((10, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    w = rng.integers(0, 100, 10).astype(np.int64)
    monkeypatch.setattr(sd, "CHUNK_VALUES", chunk)
    for weights in (None, w):
        assert summarize(X, weights, 4).equals(sd.summarize_device(X, weights, 4, xp=np))
    X[3, 4] = np.inf
    X[1, 0] = -np.inf
    with pytest.raises(ValueError, match=r"infinite values in feature\(s\) \[0, 4\]"):
        sd.summarize_device(X, None, 4, xp=np)


def _blocks(rng, sizes, nf=5):
    """Row blocks of one feature count, with NaN, ties and an empty block where asked."""
    out = []
    for n in sizes:
        X = np.floor(rng.standard_normal((n, nf)) * 20).astype(np.float32)
        X[rng.random((n, nf)) < 0.1] = np.nan
        out.append(X)
    return out


@pytest.mark.parametrize("chunk,join", [(1 << 24, 1 << 25), (40, 1 << 25), (40, 150),
                                        (1, 1)])
@pytest.mark.parametrize("weighted", [False, True])
def test_blocks_summary_is_the_merge_of_the_blocks_summaries(chunk, join, weighted,
                                                             monkeypatch):
    """Several arrays' rows summarized together (one sort a feature over all of them, runs
    of at most JOIN_ROWS rows, feature groups of CHUNK_VALUES values) give the Summaries of
    their concatenation, which is each block's summary merged."""
    import dgbdt.data.sketch_device as sd
    from dgbdt.data.sketch import merge_many
    monkeypatch.setattr(sd, "CHUNK_VALUES", chunk)
    monkeypatch.setattr(sd, "JOIN_ROWS", join)
    rng = np.random.default_rng([chunk, join, int(weighted)])
    blocks = _blocks(rng, [70, 0, 130, 45, 90])
    weights = None
    if weighted:
        weights = [rng.exponential(size=X.shape[0]) for X in blocks]
        weights[2][::3] = 0.0       # left out, as a single array's zero weights are
    scale = 2.0 ** 40
    for mk in (8, 4096):
        got = sd.summarize_blocks_device(blocks, weights, scale if weighted else None, mk,
                                         xp=np)
        ref = summarize_weighted(np.concatenate(blocks),
                                 None if weights is None else np.concatenate(weights),
                                 scale, mk)
        assert got.equals(ref) and got.n_rows == ref.n_rows
        each = [summarize_weighted(X, None if weights is None else w, scale, mk)
                for X, w in zip(blocks, weights or [None] * len(blocks))]
        assert got.equals(merge_many(each, mk))


def test_blocks_summary_errors():
    import dgbdt.data.sketch_device as sd
    rng = np.random.default_rng(8)
    a, b = _blocks(rng, [20, 30])
    with pytest.raises(ValueError, match="no blocks"):
        sd.summarize_blocks_device([], None, None, 16, xp=np)
    with pytest.raises(ValueError, match="different feature counts"):
        sd.summarize_blocks_device([a, b[:, :3]], None, None, 16, xp=np)
    with pytest.raises(ValueError):
        sd.summarize_blocks_device([a, b], [np.ones(20)], 1.0, 16, xp=np)   # a weight short
    b[4, 3] = np.inf
    a[0, 1] = -np.inf
    with pytest.raises(ValueError, match=r"infinite values in feature\(s\) \[1, 3\]"):
        sd.summarize_blocks_device([a, b], None, None, 16, xp=np)


def test_parts_summary_of_host_parts_merges_each_parts_summary():
    """A worker's summary of host parts (the merge of each part's, dgbdt.dask.parts) is the
    summary of all their rows, weighted too."""
    from dgbdt.dask.parts import Part, merge_summaries, parts_summary
    rng = np.random.default_rng(9)
    blocks = _blocks(rng, [50, 0, 80])
    ws = [rng.exponential(size=X.shape[0]) for X in blocks]
    parts = [Part(X, None, w, None) for X, w in zip(blocks, ws)]
    scale = 2.0 ** 40
    got = parts_summary(scale, 64, *parts)
    assert got.equals(summarize_weighted(np.concatenate(blocks), np.concatenate(ws), scale, 64))
    assert parts_summary(None, 64, *parts).equals(summarize(np.concatenate(blocks), None, 64))
    assert merge_summaries(got) is got


def test_each_feature_sorted_on_its_own_is_the_flat_sort_of_feature_and_key():
    """Step 2: sorting each feature's uint32 keys on their own (weights carried along) gives,
    row by row, the order of one flat sort of the uint64 f << 32 | key, and each key keeps
    its own weight (ties: equal keys, whose weights sum alike in a bucket)."""
    from dgbdt.data import sketch_device as sd
    rng = np.random.default_rng(3)
    nf, n = 5, 1000
    comp = rng.integers(0, 1 << 32, nf * n, dtype=np.uint64).astype(np.uint32)
    comp[::7] = comp[3]                              # ties across and within features
    w = rng.integers(0, 1 << 40, n, dtype=np.int64)
    flat = (np.repeat(np.arange(nf, dtype=np.uint64), n) << np.uint64(32)) | comp
    order = np.argsort(flat, kind="stable")
    plain = comp.copy()
    assert sd._sort_features(plain, n, nf, None, np) is None
    np.testing.assert_array_equal(plain, comp[order])
    weighted = comp.copy()
    ws = sd._sort_features(weighted, n, nf, w, np)
    np.testing.assert_array_equal(weighted, comp[order])
    pairs = lambda k, v: sorted(zip(k.tolist(), v.tolist()))    # noqa: E731
    for f in range(nf):
        row = slice(f * n, (f + 1) * n)
        assert pairs(weighted[row], ws[row]) == pairs(comp[row], w)
