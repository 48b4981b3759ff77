"""Sparse rows kept as CSR and quantized into ELLPACK pages (dgbdt.data.sparse): memory follows
the stored entries, and the sketch, the histograms, the row partitions, the tree walks and so
the model are the dense matrix's (absent entries missing), byte for byte."""
import json

import numpy as np
import pytest

import dgbdt
from dgbdt.data import page_store
from dgbdt.data.sparse import densify, summarize_csr
from dgbdt.data.sketch import default_max_keys, summarize_weighted, weight_scale

sp = pytest.importorskip("scipy.sparse")


def sparse_rows(n=6000, f=120, density=0.04, seed=0, explicit_zeros=True, nans=True):
    rng = np.random.default_rng(seed)
    X = sp.random(n, f, density=density, format="csr", random_state=seed, dtype=np.float32)
    X.data = np.round(rng.normal(size=X.nnz), 2).astype(np.float32)   # ties: few distinct
    if explicit_zeros:
        X.data[rng.random(X.nnz) < 0.05] = 0.0        # stored zeros are values
    if nans:
        X.data[rng.random(X.nnz) < 0.02] = np.nan     # a stored NaN is missing
    D = densify(X)
    Z = np.nan_to_num(D)
    w = rng.normal(size=f)
    y = (Z @ w + 0.3 * rng.normal(size=n) > 0).astype(np.float64)
    return X, D, y


def model(b):
    return json.dumps(b.to_dict(), sort_keys=True)


def test_wide_sparse_rows_get_compact_ellpack_pages():
    X, D, y = sparse_rows()
    ds, dd = dgbdt.Dataset(X, y), dgbdt.Dataset(D, y)
    assert ds.sparse and not dd.sparse
    cuts = ds.cuts(256)
    (pe,), (pd,) = ds.pages(cuts, 256), dd.pages(cuts, 256)
    assert pe.ell and not pd.ell
    assert pe.n_features == int((~np.isnan(D)).sum(axis=1).max())   # the row stride
    assert pe.nbytes * 4 < pd.nbytes
    # a nearly dense matrix: the dense layout is smaller, and chosen
    Xd, _, yd = sparse_rows(n=500, f=10, density=0.9)
    dn = dgbdt.Dataset(Xd, yd)
    assert not dn.pages(dn.cuts(256), 256)[0].ell


@pytest.mark.parametrize("weighted", [False, True])
def test_sketch_of_stored_entries_is_the_dense_sketch(weighted):
    X, D, _ = sparse_rows(n=3000, f=40, density=0.1, seed=1)
    w = None
    if weighted:
        w = np.random.default_rng(2).uniform(0, 3, size=X.shape[0])
        w[::7] = 0.0                                  # zero weights are left out
    scale = None if w is None else weight_scale(float(w.max()), X.shape[0])
    mk = default_max_keys(16)
    a = summarize_csr(X, w, scale, mk)
    b = summarize_weighted(D, w, scale, mk)
    assert a.equals(b)
    ds, dd = dgbdt.Dataset(X, weight=w), dgbdt.Dataset(D, weight=w)
    assert ds.cuts(16).equals(dd.cuts(16))


@pytest.mark.parametrize("extra", [
    {},
    {"grow_policy": "lossguide", "max_leaves": 24, "max_depth": 0},
    {"subsample": 0.6, "colsample_bynode": 0.5, "sampling_method": "gradient_based"},
    {"objective": "multi:softprob", "num_class": 3, "max_bin": 32},
    {"monotone_constraints": "(1,-1)", "interaction_constraints": "[[0, 1, 2], [3, 4]]"},
])
def test_same_model_as_the_dense_matrix(extra):
    X, D, y = sparse_rows()
    if extra.get("num_class"):
        y = (np.nan_to_num(D)[:, :3].sum(axis=1) > 0).astype(float) + (y > 0)
    params = {"objective": "binary:logistic", "max_depth": 5, "eta": 0.3, "seed": 3, **extra}
    res_s, res_d = {}, {}
    ds, dd = dgbdt.Dataset(X, y, page_rows=2500), dgbdt.Dataset(D, y, page_rows=2500)
    bs = dgbdt.train(params, ds, 8, evals=[(ds, "train"), (dgbdt.Dataset(X[:900], y[:900]),
                                                          "eval")],
                     evals_result=res_s, verbose_eval=False)
    bd = dgbdt.train(params, dd, 8, evals=[(dd, "train"), (dgbdt.Dataset(D[:900], y[:900]),
                                                          "eval")],
                     evals_result=res_d, verbose_eval=False)
    assert model(bs) == model(bd)
    assert res_s == res_d
    np.testing.assert_array_equal(bs.predict(ds), bd.predict(D))
    np.testing.assert_array_equal(bs.predict(X, pred_leaf=True), bd.predict(D, pred_leaf=True))


def test_growth_on_device_arrays_and_streamed_pages(monkeypatch):
    """DGBDT_GROWTH=device (the device grower's array code on the CPU) and pages streamed
    through slots with sampled rounds (the tree walk over a row's ELLPACK entries,
    dgbdt.engine.sampled_rounds) give the dense matrix's model."""
    X, D, y = sparse_rows(seed=5)
    params = {"objective": "binary:logistic", "max_depth": 6, "seed": 1}
    ref = model(dgbdt.train(params, dgbdt.Dataset(D, y), 6))
    monkeypatch.setenv("DGBDT_GROWTH", "device")
    assert model(dgbdt.train(params, dgbdt.Dataset(X, y), 6)) == ref
    monkeypatch.delenv("DGBDT_GROWTH")
    monkeypatch.setattr(page_store, "MIN_PAGE_BYTES", 1 << 12)
    monkeypatch.setattr(page_store, "STREAM_ON_CPU", True)
    sampled = {**params, "subsample": 0.5}
    ref = model(dgbdt.train(sampled, dgbdt.Dataset(D, y), 6))
    out = dgbdt.train({**sampled, "device_memory_budget": 1}, dgbdt.Dataset(X, y), 6)
    assert out.memory["pages_host"] > 1
    assert model(out) == ref


def test_predictions_shap_and_continued_training():
    X, D, y = sparse_rows(n=2000, seed=6)
    params = {"objective": "binary:logistic", "max_depth": 4}
    b = dgbdt.train(params, dgbdt.Dataset(X, y), 5)
    np.testing.assert_array_equal(b.predict(X), b.predict(D))
    np.testing.assert_allclose(b.predict(X[:300], pred_contribs=True),
                               b.predict(D[:300], pred_contribs=True), rtol=0, atol=0)
    more_s = dgbdt.train(params, dgbdt.Dataset(X, y), 3, xgb_model=b)
    more_d = dgbdt.train(params, dgbdt.Dataset(D, y), 3, xgb_model=b)
    assert model(more_s) == model(more_d)


def test_linear_trees_read_dense_pages_of_sparse_rows():
    X, D, y = sparse_rows(n=2000, f=30, density=0.2, seed=7)
    yr = np.nan_to_num(D)[:, 0] * 2 + y
    params = {"linear_tree": True, "max_depth": 3}
    ds = dgbdt.Dataset(X, yr)
    assert model(dgbdt.train(params, ds, 4)) == model(dgbdt.train(params, dgbdt.Dataset(D, yr),
                                                                  4))


def test_save_binary_keeps_csr_rows_and_ellpack_pages(tmp_path):
    X, D, y = sparse_rows(n=2000, seed=8)
    d = dgbdt.Dataset(X, y)
    params = {"objective": "binary:logistic", "max_depth": 4}
    ref = model(dgbdt.train(params, d, 4))
    d.save_binary(tmp_path / "d.bin")
    back = dgbdt.Dataset.load_binary(tmp_path / "d.bin")
    assert back.sparse
    for a in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(back.data, a), getattr(d.data, a))
    assert all(p.ell for p in back._pages[(256, "cpu")])
    assert model(dgbdt.train(params, back, 4)) == ref


@pytest.mark.parametrize("mode", ["collective", "graph"])
def test_dask_partitions_of_sparse_rows(client2, mode):
    """A dask array of scipy.sparse chunks: each partition stays CSR on its worker, is
    sketched from its stored entries and quantized into an ELLPACK page; the model and the
    eval history are the in-process dense matrix's for any chunking."""
    da = pytest.importorskip("dask.array")
    dgd = pytest.importorskip("dgbdt.dask")
    from dgbdt.dask.parts import make_part
    from dgbdt.dask.pages import page_of
    X, D, y = sparse_rows(n=3000, seed=9)
    part = make_part(0, X[:1000], y[:1000], None, None, X.shape[1])
    assert part.X.nnz == X[:1000].nnz
    cuts = dgbdt.Dataset(X, y).cuts(256)
    assert page_of(part.X, cuts, __import__("dgbdt.backends.cpu", fromlist=["CPU"]).CPU).ell
    p = {"objective": "binary:logistic", "max_depth": 4}
    res_ref = {}
    dd = dgbdt.Dataset(D, y)
    ref = dgbdt.train(p, dd, 4, evals=[(dd, "train")], evals_result=res_ref,
                      verbose_eval=False)
    for rows in (3000, 700):
        dX = da.from_array(X, chunks=(rows, X.shape[1]), asarray=False)
        d = dgd.DaskDataset(client2, dX, da.from_array(y, chunks=rows))
        out = dgd.train(client2, p, d, 4, mode=mode, evals=[(d, "train")],
                        verbose_eval=False)
        assert model(out["booster"]) == model(ref)
        assert out["history"] == res_ref


# -- missing=: a value that marks missing entries besides NaN (XGBoost's ``missing``) ---------
def test_missing_value_marks_entries_dense_and_sparse():
    rng = np.random.default_rng(11)
    X = np.round(rng.normal(size=(3000, 6)), 1).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = -999.0
    y = (np.where(X[:, 0] == -999, 0.5, X[:, 0]) + X[:, 1] > 0).astype(float)
    nan = np.where(X == -999.0, np.nan, X).astype(np.float32)
    before = X.copy()
    p = {"objective": "binary:logistic", "max_depth": 4}
    ref = dgbdt.train(p, dgbdt.Dataset(nan, y), 5)
    got = dgbdt.train(p, dgbdt.Dataset(X, y, missing=-999.0), 5)
    assert np.array_equal(X, before)                    # the caller's array is not changed
    assert model(got) == model(ref)
    np.testing.assert_array_equal(got.predict(dgbdt.Dataset(X, missing=-999)), ref.predict(nan))
    np.testing.assert_array_equal(got.inplace_predict(X, missing=-999.0), ref.predict(nan))
    # sparse rows: stored entries equal to it are missing too (as absent ones are)
    Xz = np.where(X == 0, np.nan, nan)                  # the dense equivalent
    mz = model(dgbdt.train(p, dgbdt.Dataset(Xz, y), 5))
    S2 = sp.csr_matrix(np.where(X == 0, 0.0, X))        # -999 stored
    assert model(dgbdt.train(p, dgbdt.Dataset(S2, y, missing=-999.0), 5)) == mz
    assert S2.nnz == np.count_nonzero(X)                # unchanged
    with pytest.raises(ValueError, match="missing must be a finite number or NaN"):
        dgbdt.Dataset(X, y, missing=np.inf)


def test_missing_value_in_estimators_dask_and_compat(client2):
    da = pytest.importorskip("dask.array")
    dgd = pytest.importorskip("dgbdt.dask")
    import dgbdt.compat.xgboost as xgb
    rng = np.random.default_rng(12)
    X = np.round(rng.normal(size=(2000, 5)), 1)
    X[rng.random(X.shape) < 0.15] = 0.0
    y = (X[:, 0] + X[:, 2] > 0.2).astype(float)
    nan = np.where(X == 0.0, np.nan, X)
    p = {"objective": "binary:logistic", "max_depth": 3}
    ref = dgbdt.train(p, dgbdt.Dataset(nan, y), 4)
    est = dgbdt.GBDTClassifier(n_estimators=4, max_depth=3, missing=0.0).fit(X, y)
    assert model(est.get_booster()) == model(ref)
    np.testing.assert_array_equal(est.predict_proba(X)[:, 1], ref.predict(nan))
    d = dgd.DaskDataset(client2, da.from_array(X, chunks=700), da.from_array(y, chunks=700),
                        missing=0.0)
    assert model(dgd.train(client2, p, d, 4, verbose_eval=False)["booster"]) == model(ref)
    dest = dgd.DaskGBDTClassifier(n_estimators=4, max_depth=3, missing=0.0)
    dest.client = client2
    dest.fit(da.from_array(X, chunks=700), da.from_array(y, chunks=700))
    np.testing.assert_array_equal(np.asarray(dest.predict_proba(
        da.from_array(X, chunks=700)).compute())[:, 1], ref.predict(nan))
    b = xgb.train(p, xgb.DMatrix(X, label=y, missing=0.0), 4)
    assert b.save_raw("dgbdt") == ref.save_raw("dgbdt")


def test_pages_are_planned_at_their_ellpack_size():
    """A device_memory_budget between the ELLPACK and the dense page sizes keeps the pages
    whole in memory (they are planned at the size they will have), the same model."""
    X, D, y = sparse_rows(seed=13)
    d = dgbdt.Dataset(X, y)
    cuts = d.cuts(256)
    ell = sum(p.nbytes for p in d.pages(cuts, 256))
    dense = sum(p.nbytes for p in dgbdt.Dataset(D, y).pages(cuts, 256))
    assert 4 * ell < dense
    budget = 2 * ell + (1 << 20)
    p = {"objective": "binary:logistic", "max_depth": 4}
    out = dgbdt.train({**p, "device_memory_budget": budget}, dgbdt.Dataset(X, y), 3)
    assert out.memory["pages_spilled"] == 0 and out.memory["pages_in_memory_bytes"] > 0
    assert model(out) == model(dgbdt.train(p, dgbdt.Dataset(D, y), 3))
