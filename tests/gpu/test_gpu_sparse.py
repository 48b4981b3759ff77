"""Sparse rows on the GPU (dgbdt.data.sparse; cuda/sparse.cu): ELLPACK pages quantized on the
device from cupyx CSR or uploaded from scipy CSR, their histograms (global atomics plus the
missing slots filled from node totals), row partitions and tree walks by binary search among a
row's entries. Oracle: the CPU's model of the dense matrix with NaN, byte for byte."""
import json

import numpy as np
import pytest

import cupy as cp

import dgbdt
from dgbdt.data import page_store
from dgbdt.data.sparse import densify

sp = pytest.importorskip("scipy.sparse")
cpx = pytest.importorskip("cupyx.scipy.sparse")


def sparse_rows(n=8000, f=150, density=0.03, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, f, density=density, format="csr", random_state=seed, dtype=np.float32)
    X.data = np.round(rng.normal(size=X.nnz), 2).astype(np.float32)
    X.data[rng.random(X.nnz) < 0.05] = 0.0
    X.data[rng.random(X.nnz) < 0.02] = np.nan
    D = densify(X)
    y = (np.nan_to_num(D) @ rng.normal(size=f) + 0.3 * rng.normal(size=n) > 0).astype(float)
    return X, D, y


def _json(b):
    return json.dumps(b.to_dict(), sort_keys=True)


@pytest.mark.parametrize("params", [
    {"objective": "binary:logistic", "max_depth": 6},
    {"objective": "binary:logistic", "max_depth": 0, "grow_policy": "lossguide",
     "max_leaves": 40},
    {"objective": "multi:softprob", "num_class": 3, "max_depth": 5, "max_bin": 64},
    {"objective": "binary:logistic", "max_depth": 6, "colsample_bynode": 0.5,
     "subsample": 0.7},
])
def test_host_and_device_csr_give_the_cpu_dense_model(params):
    X, D, y = sparse_rows()
    if params.get("num_class"):
        y = y + (np.nan_to_num(D)[:, :4].sum(axis=1) > 0)
    params = {**params, "seed": 2}
    res_ref, res_h, res_d = {}, {}, {}
    dd = dgbdt.Dataset(D, y)
    ref = dgbdt.train(params, dd, 8, evals=[(dd, "train")], evals_result=res_ref,
                      verbose_eval=False)
    dh = dgbdt.Dataset(X, y)
    host = dgbdt.train({**params, "device": "cuda"}, dh, 8, evals=[(dh, "train")],
                       evals_result=res_h, verbose_eval=False)
    assert all(p.ell for key, pages in dh._pages.items() if key[1].startswith("cuda")
               for p in pages)
    dg = dgbdt.Dataset(cpx.csr_matrix(X), cp.asarray(y))
    assert dg.on_device and dg.sparse
    dev = dgbdt.train(params, dg, 8, evals=[(dg, "train")], evals_result=res_d,
                      verbose_eval=False)
    (page,) = dg._pages[(params.get("max_bin", 256), "data")]
    assert page.ell and isinstance(page.words, cp.ndarray)
    assert _json(host) == _json(ref)
    assert _json(dev) == _json(ref)
    for res in (res_h, res_d):      # GPU metrics: reduced in another order (last bits)
        np.testing.assert_allclose(res["train"][p := next(iter(res["train"]))],
                                   res_ref["train"][p], rtol=1e-12)
    np.testing.assert_allclose(cp.asnumpy(dev.predict(dg)), ref.predict(D), rtol=1e-6,
                               atol=1e-7)


def test_eval_set_early_stopping_and_several_pages():
    X, D, y = sparse_rows(seed=1)
    p = {"objective": "binary:logistic", "max_depth": 5, "eta": 0.5, "eval_metric": "auc"}
    va = slice(6000, None)
    ref = dgbdt.train(p, dgbdt.Dataset(D[:6000], y[:6000], page_rows=2500), 40,
                      evals=[(dgbdt.Dataset(D[va], y[va]), "va")], early_stopping_rounds=3,
                      verbose_eval=False)
    got = dgbdt.train({**p, "device": "cuda"},
                      dgbdt.Dataset(cpx.csr_matrix(X[:6000]), cp.asarray(y[:6000]),
                                    page_rows=2500), 40,
                      evals=[(dgbdt.Dataset(cpx.csr_matrix(X[va]), cp.asarray(y[va])), "va")],
                      early_stopping_rounds=3, verbose_eval=False)
    assert got.best_iteration == ref.best_iteration
    assert _json(got) == _json(ref)


def test_streamed_ellpack_pages_with_sampled_rounds(monkeypatch):
    """Pages beyond device_memory_budget stream from host memory; sampled rounds walk the
    previous tree over each row's ELLPACK entries (cuda/tree.cu fold_tree) and gather the
    sampled rows into one ELLPACK page (dgbdt.engine.sampled_rounds)."""
    monkeypatch.setattr(page_store, "MIN_PAGE_BYTES", 1 << 14)
    X, D, y = sparse_rows(seed=3)
    p = {"objective": "binary:logistic", "max_depth": 6, "subsample": 0.5, "seed": 4}
    ref = dgbdt.train(p, dgbdt.Dataset(D, y), 6)
    out = dgbdt.train({**p, "device": "cuda", "device_memory_budget": 1 << 16},
                      dgbdt.Dataset(X, y), 6)
    assert out.memory["pages_host"] > 1
    assert _json(out) == _json(ref)
    per_level = dgbdt.train({**p, "subsample": 1.0, "device": "cuda",
                             "device_memory_budget": 1 << 16}, dgbdt.Dataset(X, y), 4)
    assert _json(per_level) == _json(dgbdt.train({**p, "subsample": 1.0},
                                                 dgbdt.Dataset(D, y), 4))


@pytest.mark.parametrize("mode", ["nccl", "graph"])
def test_dask_gpu_worker_with_sparse_chunks(request, mode):
    """A dask array of scipy.sparse chunks trained on GPU workers: each partition's CSR rows
    are copied to its worker's GPU and quantized into an ELLPACK page there; the CPU's dense
    in-process model."""
    da = pytest.importorskip("dask.array")
    dgd = pytest.importorskip("dgbdt.dask")
    client = request.getfixturevalue("cuda_client" if mode == "nccl" else "two_on_one_gpu")
    X, D, y = sparse_rows(n=4000, seed=6)
    p = {"objective": "binary:logistic", "max_depth": 5}
    ref = dgbdt.train(p, dgbdt.Dataset(D, y), 5)
    dX = da.from_array(X, chunks=(1500, X.shape[1]), asarray=False)
    d = dgd.DaskDataset(client, dX, da.from_array(y, chunks=1500))
    out = dgd.train(client, {**p, "device": "cuda"}, d, 5, mode=mode, verbose_eval=False)
    assert _json(out["booster"]) == _json(ref)


def test_missing_value_on_device_rows():
    """Dataset(missing=): cupy rows and cupyx CSR rows with a marker value give the CPU's
    model of the rows with NaN there."""
    rng = np.random.default_rng(7)
    X = np.round(rng.normal(size=(3000, 6)), 1).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = -999.0
    y = (np.where(X[:, 0] == -999, 0.5, X[:, 0]) + X[:, 1] > 0).astype(float)
    nan = np.where(X == -999.0, np.nan, X).astype(np.float32)
    p = {"objective": "binary:logistic", "max_depth": 4}
    ref = dgbdt.train(p, dgbdt.Dataset(nan, y), 5)
    Xd = cp.asarray(X)
    got = dgbdt.train(p, dgbdt.Dataset(Xd, cp.asarray(y), missing=-999.0), 5)
    assert bool((Xd == -999.0).any())                  # the caller's rows are not changed
    assert _json(got) == _json(ref)
    S = cpx.csr_matrix(cp.asarray(np.where(np.isnan(nan), -999.0, np.where(X == 0, 0, X))))
    got = dgbdt.train(p, dgbdt.Dataset(S, cp.asarray(y), missing=-999.0), 5)
    Xz = np.where(X == 0, np.nan, nan)
    assert _json(got) == _json(dgbdt.train(p, dgbdt.Dataset(Xz, y), 5))
