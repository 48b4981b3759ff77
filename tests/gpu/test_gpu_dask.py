"""dgbdt.dask on a LocalCUDACluster: the same model as in-process training, data on the GPUs."""
import json

import numpy as np
import pytest

import cupy as cp

import dgbdt
import dgbdt.dask as dgd

dask_cuda = pytest.importorskip("dask_cuda")
da = pytest.importorskip("dask.array")


@pytest.fixture(scope="module")
def client(cuda_client):
    return cuda_client


def _data(n=6000, nf=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, nf)).astype(np.float32)
    X[rng.random((n, nf)) < 0.05] = np.nan
    z = np.nan_to_num(X[:, 0]) - 2 * np.nan_to_num(X[:, 1]) ** 2 + rng.standard_normal(n) * .1
    return X, z


def _json(b):
    return json.dumps(b.to_dict(), sort_keys=True)


def _dask(X, z, chunks):
    return (da.from_array(cp.asarray(X), chunks=(chunks, -1), asarray=False),
            da.from_array(cp.asarray(z), chunks=(chunks,), asarray=False))


def test_a_workers_partitions_sketched_together_give_the_in_process_cuts(client):
    """One GPU worker summarizes the rows of all the partitions it holds with one sort a
    feature (dgbdt.dask.parts.parts_summary): the cuts of the one array in-process, weighted
    (zero weights too) and not, for any chunking."""
    from distributed import get_task_stream
    rng = np.random.default_rng(12)
    X, _ = _data(30000, 5, seed=12)
    X[:, 2] = np.round(X[:, 2] * 4)        # ties
    w = rng.exponential(size=30000)
    w[::7] = 0.0
    for weighted in (False, True):
        ref = dgbdt.Dataset(cp.asarray(X), weight=cp.asarray(w) if weighted else None)
        for chunks in (30000, 7000, 2999):
            Xd = da.from_array(cp.asarray(X), chunks=(chunks, -1), asarray=False)
            wd = (da.from_array(cp.asarray(w), chunks=(chunks,), asarray=False)
                  if weighted else None)
            d = dgd.DaskDataset(client, Xd, weight=wd)
            with get_task_stream(client) as ts:
                cuts = d.cuts(256).result()
            assert cuts.equals(ref.cuts(256)), (weighted, chunks)
            keys = [str(t["key"]) for t in ts.data]
            assert sum(k.startswith("dgbdt-sketch-parts") for k in keys) == 1, keys
            assert not any("part_summary" in k for k in keys), keys


@pytest.mark.parametrize("mode", ["task", "graph"])
def test_same_model_as_in_process(client, mode):
    X, z = _data()
    p = {"objective": "reg:squarederror", "max_depth": 5, "max_bin": 64}
    ref = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(z)), 6,
                      verbose_eval=False)
    Xd, zd = _dask(X, z, 1700)
    d = dgd.DaskDataset(client, Xd, zd)
    assert d.on_device
    out = dgd.train(client, p, d, 6, mode=mode, verbose_eval=False)
    assert _json(out["booster"]) == _json(ref)
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=z), 6, verbose_eval=False)
    assert _json(cpu) == _json(ref)


def test_predict_stays_on_gpu(client):
    X, z = _data(seed=1)
    Xd, zd = _dask(X, z, 2500)
    b = dgd.train(client, {"max_depth": 4}, dgd.DaskDataset(client, Xd, zd), 5,
                  verbose_eval=False)["booster"]
    pred = dgd.predict(client, b, Xd)
    out = pred.compute()
    assert isinstance(out, cp.ndarray)
    np.testing.assert_array_equal(cp.asnumpy(out), b.predict(X))
    d = dgd.DaskDataset(client, Xd, zd)
    out2 = dgd.predict(client, b, d).compute()
    np.testing.assert_array_equal(cp.asnumpy(out2), b.predict(X))


def test_eval_and_early_stopping_match_in_process(client):
    X, z = _data(seed=2)
    y = (z > np.median(z)).astype(np.float64)
    p = {"objective": "binary:logistic", "eval_metric": ["logloss", "auc"], "max_depth": 3}
    Xd, yd = _dask(X[:4000], y[:4000], 1500)
    Xv, yv = _dask(X[4000:], y[4000:], 1000)
    dt, dv = dgd.DaskDataset(client, Xd, yd), dgd.DaskDataset(client, Xv, yv)
    out = dgd.train(client, p, dt, 30, evals=[(dt, "train"), (dv, "valid")],
                    early_stopping_rounds=3, verbose_eval=False)
    res = {}
    tr = dgbdt.Dataset(cp.asarray(X[:4000]), label=cp.asarray(y[:4000]))
    va = dgbdt.Dataset(cp.asarray(X[4000:]), label=cp.asarray(y[4000:]))
    ref = dgbdt.train(p, tr, 30, evals=[(tr, "train"), (va, "valid")], early_stopping_rounds=3,
                      evals_result=res, verbose_eval=False)
    assert out["booster"].best_iteration == ref.best_iteration
    for name in ("train", "valid"):
        np.testing.assert_allclose(out["history"][name]["auc"], res[name]["auc"], rtol=1e-9)


def test_dask_cudf_frame(client):
    dask_cudf = pytest.importorskip("dask_cudf")
    cudf = pytest.importorskip("cudf")
    import pandas as pd
    X, z = _data(seed=3)
    pdf = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    pdf["y"] = z
    ddf = dask_cudf.from_cudf(cudf.from_pandas(pdf), npartitions=3)
    feats = [c for c in pdf.columns if c != "y"]
    p = {"max_depth": 4}
    out = dgd.train(client, p, dgd.DaskDataset(client, ddf[feats], ddf["y"]), 5,
                    verbose_eval=False)
    ref = dgbdt.train(p, dgbdt.Dataset(pdf[feats], label=z), 5, verbose_eval=False)
    assert _json(out["booster"]) == _json(ref)
    pred = dgd.predict(client, out["booster"], ddf[feats]).compute()
    assert type(pred).__module__.startswith("cudf")
    np.testing.assert_array_equal(pred.to_numpy(), ref.predict(pdf[feats]))


def test_a_gpu_dataset_on_two_workers_preloads_nccl_on_each():
    """A DaskDataset of cupy partitions on two workers starts NCCL's load on each while its
    parts compute (dgbdt.dask.nccl_preload.for_dataset): two worker processes of this GPU
    each load the kernels (a one-rank communicator, which they may share a GPU for)."""
    import time

    from distributed import Client, LocalCluster

    from dgbdt.dask import nccl_preload
    from dgbdt.dask.collective import nccl_status
    if nccl_status() is not None:
        pytest.skip(f"NCCL: {nccl_status()}")
    X, z = _data(n=4000)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        Xd, zd = _dask(X, z, 1000)
        d = dgd.DaskDataset(c, Xd, zd)
        assert d.on_device and d.num_row == 4000

        def loaded():
            return sorted(nccl_preload._seconds)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(c.run(loaded).values()):
            time.sleep(0.2)
        assert list(c.run(loaded).values()) == [[0], [0]]
