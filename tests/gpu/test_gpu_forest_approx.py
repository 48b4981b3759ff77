"""Random forests (num_parallel_tree), tree_method="approx" and booster="dart" on the GPU: the CPU backend's
bytes in-process (device growth, tree graphs, compact rows, pages streamed or not), and on a
one-GPU LocalCUDACluster; with two GPUs, the nccl ranks give the same model."""
import json

import numpy as np
import pytest

import cupy as cp

import dgbdt
import dgbdt.dask as dgd


def _data(n=6000, nf=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, nf)).astype(np.float32)
    X[rng.random((n, nf)) < 0.05] = np.nan
    z = np.nan_to_num(X[:, 0]) * 1.5 - np.nan_to_num(X[:, 1]) + np.sin(np.nan_to_num(X[:, 2]))
    y = (z + rng.standard_normal(n) * 0.3 > 0).astype(np.float64)
    return X, y


def _json(b):
    return json.dumps(b.to_dict(), sort_keys=True)


CASES = [
    {"objective": "binary:logistic", "num_parallel_tree": 3, "subsample": 0.7,
     "colsample_bynode": 0.8, "learning_rate": 1.0, "max_depth": 5},
    {"objective": "binary:logistic", "tree_method": "approx", "max_bin": 32, "max_depth": 5},
    {"objective": "multi:softprob", "num_class": 3, "tree_method": "approx",
     "num_parallel_tree": 2, "subsample": 0.8, "max_depth": 4},
]


@pytest.mark.parametrize("params", CASES, ids=["forest", "approx", "approx-forest-multi"])
@pytest.mark.parametrize("page_rows", [None, 1700])
def test_gpu_gives_the_cpu_bytes(params, page_rows):
    X, y = _data()
    if params["objective"].startswith("multi"):
        y = np.digitize(np.nan_to_num(X[:, 0]), [-0.5, 0.5]).astype(np.float64)
    cpu = dgbdt.train(params, dgbdt.Dataset(X, label=y, page_rows=page_rows), 4)
    gpu = dgbdt.train(dict(params, device="cuda"),
                      dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y), page_rows=page_rows), 4)
    assert _json(gpu) == _json(cpu)
    host_rows = dgbdt.train(dict(params, device="cuda"), dgbdt.Dataset(X, label=y), 4)
    assert _json(host_rows) == _json(cpu)


@pytest.fixture
def small_pages(monkeypatch):
    from dgbdt.data import page_store
    monkeypatch.setattr(page_store, "MIN_PAGE_BYTES", 1 << 14)


def test_approx_and_dart_refuse_streamed_pages(small_pages):
    X, y = _data(20000)
    for params in (CASES[1], {"booster": "dart", "rate_drop": 0.2}):
        with pytest.raises(NotImplementedError, match="streamed"):
            dgbdt.train(dict(params, device="cuda", device_memory_budget=1),
                        dgbdt.Dataset(X, label=y), 2)


def test_forest_streams_pages(small_pages):
    X, y = _data(20000)
    cpu = dgbdt.train(CASES[0], dgbdt.Dataset(X, label=y), 3)
    gpu = dgbdt.train(dict(CASES[0], device="cuda", device_memory_budget=1),
                      dgbdt.Dataset(X, label=y), 3)
    assert gpu.memory["pages_host"] >= 1
    assert _json(gpu) == _json(cpu)


def test_dart_gives_the_cpu_bytes():
    X, y = _data()
    params = {"objective": "binary:logistic", "booster": "dart", "rate_drop": 0.3,
              "subsample": 0.8, "max_depth": 5}
    d = dgbdt.Dataset(X[:1000], label=y[:1000])
    cpu = dgbdt.train(params, dgbdt.Dataset(X, label=y), 6, evals=[(d, "v")],
                      verbose_eval=False)
    gpu = dgbdt.train(dict(params, device="cuda"),
                      dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y)), 6)
    assert _json(gpu) == _json(cpu)


@pytest.mark.parametrize("params", CASES[:2] + [{"booster": "dart", "rate_drop": 0.3}],
                         ids=["forest", "approx", "dart"])
def test_dask_cuda_one_worker(cuda_client, params):
    da = pytest.importorskip("dask.array")
    X, y = _data()
    cpu = dgbdt.train(params, dgbdt.Dataset(X, label=y), 4)
    d = dgd.DaskDataset(cuda_client, da.from_array(cp.asarray(X), chunks=(1500, 8)),
                        da.from_array(cp.asarray(y), chunks=1500))
    for mode in ("task",) if params.get("booster") == "dart" else ("task", "graph"):
        got = dgd.train(cuda_client, dict(params, device="cuda"), d, 4, mode=mode,
                        verbose_eval=False)["booster"]
        assert _json(got) == _json(cpu), mode


def test_nccl_two_gpus():
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    dask_cuda = pytest.importorskip("dask_cuda")
    da = pytest.importorskip("dask.array")
    from distributed import Client
    X, y = _data()
    with dask_cuda.LocalCUDACluster(n_workers=2, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(2)
        for params in CASES + [{"objective": "binary:logistic", "booster": "dart",
                                "rate_drop": 0.3, "max_depth": 4}]:
            yy = y if not params["objective"].startswith("multi") else \
                np.digitize(np.nan_to_num(X[:, 0]), [-0.5, 0.5]).astype(np.float64)
            cpu = dgbdt.train(params, dgbdt.Dataset(X, label=yy), 3)
            d = dgd.DaskDataset(client, da.from_array(X, chunks=(1500, 8)),
                                da.from_array(yy, chunks=1500))
            got = dgd.train(client, dict(params, device="cuda"), d, 3, mode="nccl",
                            verbose_eval=False)["booster"]
            assert _json(got) == _json(cpu), params


def test_exact_gives_the_cpu_bytes():
    """tree_method="exact": a bin a distinct value (up to 65535 a feature, 16-bit symbols)."""
    X, y = _data(4000)
    params = {"objective": "binary:logistic", "tree_method": "exact", "max_depth": 4}
    cpu = dgbdt.train(params, dgbdt.Dataset(X, label=y), 3)
    gpu = dgbdt.train(dict(params, device="cuda"),
                      dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y)), 3)
    assert _json(gpu) == _json(cpu)
    assert max(int(n) for n in dgbdt.Dataset(X, label=y).cuts(65535).n_bins()) > 3000
