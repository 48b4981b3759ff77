"""Rows routed from a page's feature-major columns (kernels.pages.columns; the CPU's partition,
dgbdt.backends.cpu; the GPU's, tests/gpu/test_gpu_routes.py) give the model the page gives,
for every kind of tree; the columns are used where they should be and not elsewhere."""
import numpy as np
import pytest

import dgbdt
from dgbdt.data import page_store
from dgbdt.kernels import cpu_tree
from dgbdt.kernels.pages import columns, pack, unpack


@pytest.mark.parametrize("bits", [1, 3, 8, 9, 16, 32])
@pytest.mark.parametrize("n", [1, 33, 1000])
def test_columns_are_the_page_transposed(bits, n):
    rng = np.random.default_rng(bits + n)
    sym = rng.integers(0, 1 << bits, size=(n, 7), dtype=np.uint64).astype(
        np.uint16 if bits <= 16 else np.uint32)
    page = pack(sym, bits)
    c = columns(page)
    assert (c.n_rows, c.n_features, c.bits) == (7, n, bits)
    assert np.array_equal(unpack(c), sym.T)
    assert c.words.shape == pack(np.ascontiguousarray(sym.T), bits).words.shape


def _data(n=5000, nf=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, nf)).astype(np.float32)
    X[rng.random((n, nf)) < 0.05] = np.nan
    X[:, 3] = rng.integers(0, 9, n)
    z = (np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) + np.sin(np.nan_to_num(X[:, 2]))
         + (X[:, 3] % 3 == 0))
    return X, z


def _two_ways(monkeypatch, params, X, y, rounds=5, **kw):
    """Model bytes with the columns (the default) and without, and how many of the
    partitions read the columns in each."""
    used = []
    real = cpu_tree.partition_rows

    def counted(*a, columns=None, **k):
        used.append(columns is not None)
        return real(*a, columns=columns, **k)
    monkeypatch.setattr(cpu_tree, "partition_rows", counted)
    out = []
    for flag in ("1", "0"):
        monkeypatch.setenv("DGBDT_ROUTE_COLUMNS", flag)
        used.clear()
        b = dgbdt.train({**params, "device": "cpu"}, dgbdt.Dataset(X, label=y, **kw), rounds)
        out.append((b.save_raw(), sum(used)))
    (with_columns, n_used), (without, n_off) = out
    assert n_off == 0
    return with_columns, without, n_used


BASE = {"objective": "reg:squarederror", "max_depth": 5, "max_bin": 32, "seed": 1}


@pytest.mark.parametrize("extra", [
    {},
    {"max_bin": 256},                                          # 8-bit symbols: bytes
    {"grow_policy": "lossguide", "max_depth": 0, "max_leaves": 20},
    {"objective": "multi:softprob", "num_class": 3},
    {"subsample": 0.7, "colsample_bynode": 0.6},
], ids=["depthwise", "bytes", "lossguide", "multiclass", "sampled"])
def test_routed_from_columns_is_the_page_model(monkeypatch, extra):
    X, z = _data()
    y = np.digitize(z, [-0.5, 0.7]).astype(np.float64) if extra.get("num_class") else z
    with_columns, without, n_used = _two_ways(monkeypatch, {**BASE, **extra}, X, y)
    assert n_used > 0
    assert with_columns == without


def test_categorical_splits_with_columns(monkeypatch):
    X, z = _data(seed=2)
    types = ["q"] * X.shape[1]
    types[3] = "c"
    p = {**BASE, "max_cat_to_onehot": 1}
    with_columns, without, n_used = _two_ways(monkeypatch, p, X, z, feature_types=types)
    assert n_used > 0 and with_columns == without


def test_approx_routes_from_its_new_pages(monkeypatch):
    """approx quantizes each tree anew: the first page's columns are not read for the next."""
    X, z = _data(seed=3)
    with_columns, without, n_used = _two_ways(monkeypatch, {**BASE, "tree_method": "approx"},
                                              X, z)
    assert with_columns == without
    levels_a_tree = n_used      # only the first tree (of 5) may read columns
    assert 0 < levels_a_tree <= BASE["max_depth"]


def test_no_columns_for_spilled_pages_or_a_small_budget(monkeypatch):
    monkeypatch.setattr(page_store, "MIN_PAGE_BYTES", 1 << 12)
    X, z = _data(n=20000)
    spilled = _two_ways(monkeypatch, {**BASE, "device_memory_budget": 20_000}, X, z)
    assert spilled[2] == 0 and spilled[0] == spilled[1]
    # the pages fit in memory (one page: 20000 x 8 x 6 bits = 120 kB) but not twice
    small = _two_ways(monkeypatch, {**BASE, "device_memory_budget": 150_000}, X, z)
    assert small[2] == 0 and small[0] == small[1]
    roomy = _two_ways(monkeypatch, {**BASE, "device_memory_budget": 1_000_000}, X, z)
    assert roomy[2] > 0 and roomy[0] == roomy[1] == small[0]
