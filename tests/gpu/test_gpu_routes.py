"""The row-order partition (dgbdt.backends.cuda_routes): every kind of tree grows the same model
bytes with the rows routed in row order (the default) as through the segments, and as on the
CPU; routed from the page's feature-major columns (the default where they fit) as from the page;
and the routed kernels did run."""
import numpy as np
import pytest


import dgbdt
from dgbdt.backends import cuda_routes
from dgbdt.data import page_store

sp = pytest.importorskip("scipy.sparse")


def _data(n=6000, nf=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, nf)).astype(np.float32)
    X[rng.random((n, nf)) < 0.05] = np.nan
    X[:, 3] = rng.integers(0, 12, n)               # a categorical column (with "c" types)
    z = (np.nan_to_num(X[:, 0]) * 1.5 - np.nan_to_num(X[:, 1])
         + np.sin(np.nan_to_num(X[:, 2])) + (X[:, 3] % 3 == 0))
    return X, z


def _train(params, X, y, rounds=6, **kw):
    return dgbdt.train(params, dgbdt.Dataset(X, label=y, **kw), rounds, verbose_eval=False)


def _three_ways(monkeypatch, params, X, y, columns=True, **kw):
    """The routed GPU's and the segment-partitioned GPU's model bytes, the CPU's booster, and
    how many levels were routed. Also the model routed without the page's columns, which
    must be the routed one; ``columns``: whether the default run must have routed levels from
    columns (True), from the page only (False)."""
    calls = []
    routed_splits = cuda_routes.CudaRoutes.route_splits

    def counted(self, shard, split, m, cat):
        calls.append(shard.route.columns is not None and shard.route.page is shard.page)
        return routed_splits(self, shard, split, m, cat)
    with monkeypatch.context() as mp:
        mp.setattr(cuda_routes.CudaRoutes, "route_splits", counted)
        routed = _train({**params, "device": "cuda"}, X, y, **kw)
    assert any(calls) == columns
    with monkeypatch.context() as mp:
        mp.setenv("DGBDT_ROUTE_COLUMNS", "0")
        mp.setattr(cuda_routes.CudaRoutes, "route_splits", counted)
        n = len(calls)
        from_page = _train({**params, "device": "cuda"}, X, y, **kw)
        assert not any(calls[n:])
    assert from_page.save_raw() == routed.save_raw()
    with monkeypatch.context() as mp:       # shard.route stays None: the segment kernels
        mp.setattr(cuda_routes.CudaRoutes, "route_reset", lambda self, shard: None)
        segments = _train({**params, "device": "cuda"}, X, y, **kw)
    cpu = _train({**params, "device": "cpu"}, X, y, **kw)
    return routed.save_raw(), segments.save_raw(), cpu, n


BASE = {"objective": "reg:squarederror", "max_depth": 6, "max_bin": 64, "seed": 3}


@pytest.mark.parametrize("extra", [
    {},                                                       # device growth, CUDA graphs
    {"grow_policy": "lossguide", "max_depth": 0, "max_leaves": 24},   # grown on the host
    {"objective": "multi:softprob", "num_class": 3},
    {"subsample": 0.6, "colsample_bynode": 0.7},              # sampled rounds, replays
    {"objective": "reg:quantileerror", "quantile_alpha": 0.3},  # leaf residuals
    {"tree_method": "approx"},
    {"linear_tree": True, "max_depth": 4},
], ids=["depthwise", "lossguide", "multiclass", "sampled", "quantile", "approx", "linear"])
def test_routed_model_is_the_segment_and_cpu_model(monkeypatch, extra):
    X, z = _data()
    y = z
    if extra.get("num_class"):
        y = np.digitize(z, [-0.5, 0.7]).astype(np.float64)
    routed, segments, cpu, routed_levels = _three_ways(monkeypatch, {**BASE, **extra}, X, y)
    assert routed_levels > 0
    assert routed == segments == cpu.save_raw()


def test_routed_categorical_splits(monkeypatch):
    X, z = _data(seed=1)
    types = ["q"] * X.shape[1]
    types[3] = "c"
    p = {**BASE, "max_cat_to_onehot": 1}
    routed, segments, cpu, routed_levels = _three_ways(monkeypatch, p, X, z, feature_types=types)
    assert routed_levels > 0
    assert routed == segments == cpu.save_raw()
    assert any(t.categories for t in cpu.trees)     # categorical splits were routed


def test_routed_sparse_pages(monkeypatch):
    rng = np.random.default_rng(4)
    X = sp.random(5000, 120, density=0.04, format="csr", random_state=4, dtype=np.float32)
    X.data = np.round(rng.normal(size=X.nnz), 2).astype(np.float32)
    y = (np.asarray(X.sum(axis=1)).ravel() + 0.2 * rng.normal(size=5000) > 0).astype(float)
    p = {"objective": "binary:logistic", "max_depth": 6, "seed": 1}
    # an ELLPACK page's rows are narrower than its features: no columns
    routed, segments, cpu, routed_levels = _three_ways(monkeypatch, p, X, y, columns=False)
    assert routed_levels > 0
    assert routed == segments == cpu.save_raw()


@pytest.mark.parametrize("extra", [{}, {"subsample": 0.6}], ids=["all_rows", "sampled"])
def test_routed_streamed_pages(monkeypatch, extra):
    monkeypatch.setattr(page_store, "MIN_PAGE_BYTES", 1 << 14)
    X, z = _data(n=20000)
    p = {**BASE, **extra, "device_memory_budget": 40_000}
    # streamed pages' budget holds their slots: no columns
    routed, segments, cpu, routed_levels = _three_ways(monkeypatch, p, X, z, columns=False)
    assert routed_levels > 0
    assert routed == segments == cpu.save_raw()


def test_columns_only_where_a_given_budget_holds_the_pages_twice(monkeypatch):
    X, z = _data(n=20000)
    page_bytes = 20000 * 10 * 7 // 8        # 64 bins and missing: 7 bits a symbol
    for budget, columns in ((10 * page_bytes, True), (page_bytes * 6 // 5, False)):
        _three_ways(monkeypatch, {**BASE, "device_memory_budget": budget}, X, z,
                    columns=columns)


@pytest.mark.parametrize("bits", [1, 3, 7, 8, 9, 13, 16, 17, 32])
@pytest.mark.parametrize("n", [1, 31, 1000, 4099])
def test_page_columns_pack_each_feature_as_a_page_of_one(bits, n):
    import cupy as cp
    from dgbdt.backends.cuda import CudaBackend
    from dgbdt.kernels.pages import pack
    be = CudaBackend.for_ordinal(0)
    rng = np.random.default_rng(bits * 7919 + n)
    nf = 5
    sym = rng.integers(0, 1 << bits, size=(n, nf), dtype=np.uint64).astype(
        np.uint16 if bits <= 16 else np.uint32)
    page = be.pack_symbols(cp.asarray(sym), bits)
    cols, col_words = be.page_columns(page)
    cols = cp.asnumpy(cols).reshape(nf, col_words)
    for f in range(nf):
        assert np.array_equal(cols[f], pack(np.ascontiguousarray(sym[:, f:f + 1]), bits).words)
