"""Device-resident growth on a GPU: the fused kernels (cuda/grow.cu), their array twin on cupy
and the host grower give the same model, byte for byte; a tree waits for the GPU once."""
import json
import sys
import gc
import time

import dataclasses

import numpy as np
import pytest

import cupy as cp

import dgbdt
from dgbdt.backends.cuda import CudaBackend
from dgbdt.tree import device_grower


def _data(n=6000, nf=9, seed=0, nan_frac=0.08):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, nf)).astype(np.float32)
    X[:, 3] = np.round(X[:, 3] * 2)
    X[rng.random((n, nf)) < nan_frac] = np.nan
    Z = np.nan_to_num(X)
    y = (Z[:, 0] * Z[:, 1] + np.sin(2 * Z[:, 2]) - 0.5 * Z[:, 3]
         + 0.3 * rng.standard_normal(n) > 0).astype(np.float64)
    return X, y


CASES = [
    {"objective": "binary:logistic", "max_depth": 6, "eval_metric": ["logloss", "auc"]},
    {"objective": "reg:squarederror", "max_depth": 8, "gamma": 0.3, "min_child_weight": 4},
    {"objective": "reg:squarederror", "max_depth": 1, "alpha": 0.5, "lambda": 3.0},
    {"objective": "multi:softprob", "num_class": 3, "max_depth": 4, "max_delta_step": 0.6},
    {"objective": "binary:logistic", "max_depth": 11, "min_child_weight": 30},
]


def _fit(monkeypatch, growth, params, X, y, fused=True, page_rows=None):
    monkeypatch.setenv("DGBDT_GROWTH", growth)
    monkeypatch.setattr(CudaBackend, "caps", dataclasses.replace(CudaBackend.caps,
                                                                 device_growth=fused))
    if params["objective"].startswith("multi"):
        y = np.digitize(np.nan_to_num(X[:, 0]), [-0.5, 0.5]).astype(np.float64)
    elif params["objective"].startswith("reg"):
        y = y + np.nan_to_num(X[:, 4])
    d = dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y), page_rows=page_rows)
    dv = dgbdt.Dataset(cp.asarray(X[:1000] * 1.1), label=cp.asarray(y[:1000]))
    hist = {}
    b = dgbdt.train(params, d, 6, evals=[(dv, "valid")], evals_result=hist,
                    verbose_eval=False)
    return json.dumps(b.to_dict(), sort_keys=True), hist


@pytest.mark.parametrize("params", CASES, ids=lambda p: f"{p['objective']}-d{p['max_depth']}")
def test_fused_arrays_and_host_growth_agree(monkeypatch, params):
    X, y = _data()
    host = _fit(monkeypatch, "host", params, X, y)
    assert _fit(monkeypatch, "auto", params, X, y) == host            # fused kernels
    assert _fit(monkeypatch, "auto", params, X, y, fused=False) == host   # cupy arrays
    assert _fit(monkeypatch, "auto", params, X, y, page_rows=1700) == host


def test_squared_error_device_growth_equals_the_cpu(monkeypatch):
    X, y = _data(seed=3)
    p = {"objective": "reg:squarederror", "max_depth": 7}
    gpu = _fit(monkeypatch, "auto", p, X, y)
    monkeypatch.setenv("DGBDT_GROWTH", "host")
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y + np.nan_to_num(X[:, 4])), 6,
                      evals=[(dgbdt.Dataset(X[:1000] * 1.1, label=y[:1000]), "valid")],
                      verbose_eval=False)
    assert json.loads(gpu[0]) == cpu.to_dict()


SPIN = r"""extern "C" __global__ void spin(long long cycles) {
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}"""


@pytest.mark.parametrize("allocator", ["cupy", "rmm_default"])
def test_the_host_enqueues_a_tree_without_waiting(monkeypatch, request, allocator):
    """Each tree starts behind a kernel that keeps the GPU busy for ~0.5 s: the host
    enqueues every level of the tree and its leaf values while it spins (no wait inside the
    tree), and first waits in tree(). Also under RMM's default resource (the RAPIDS user's
    process: cudaFree would wait for the device), which dgbdt replaces by CuPy's pool. Trees
    grown eagerly (DGBDT_CUDA_GRAPHS=0): a tree replayed as a CUDA graph is one launch."""
    monkeypatch.setenv("DGBDT_CUDA_GRAPHS", "0")
    if allocator == "rmm_default":
        request.getfixturevalue("rmm_default")
    else:
        before = cp.cuda.get_allocator()
        cp.cuda.set_allocator(cp.get_default_memory_pool().malloc)
        request.addfinalizer(lambda: cp.cuda.set_allocator(before))
    X, y = _data(n=3000)
    monkeypatch.setenv("DGBDT_GROWTH", "auto")
    d = dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y))
    p = {"objective": "binary:logistic", "max_depth": 6}
    dgbdt.train(p, d, 1, verbose_eval=False)                       # compile, warm up
    spin = cp.RawKernel(SPIN, "spin")
    rate = cp.cuda.Device().attributes.get("ClockRate", 2_000_000) * 1e3   # cycles per second
    spans, real_init, real_tree = [], device_grower.DeviceGrowth.__init__, \
        device_grower.DeviceGrowth.tree

    def init(self, *a, **kw):
        spin((1,), (1,), (np.int64(0.5 * rate),))
        self._t0 = time.perf_counter()
        real_init(self, *a, **kw)

    real_pending = device_grower.DeviceGrowth.pending_tree

    def tree(self):
        spans.append(time.perf_counter() - self._t0)
        return real_tree(self)

    def pending_tree(self, *a):       # without an eval set the trees are read a round late
        spans.append(time.perf_counter() - self._t0)
        return real_pending(self, *a)
    monkeypatch.setattr(device_grower.DeviceGrowth, "__init__", init)
    monkeypatch.setattr(device_grower.DeviceGrowth, "tree", tree)
    monkeypatch.setattr(device_grower.DeviceGrowth, "pending_tree", pending_tree)
    # garbage the earlier tests left (a CUDA graph's memory pool: cudaFree waits for the
    # whole device) must not be collected while a spin runs: that wait is not the tree's
    gc.collect()
    gc.disable()
    try:
        t = time.perf_counter()
        dgbdt.train(p, d, 3, verbose_eval=False)
    finally:
        gc.enable()
    assert time.perf_counter() - t > 1.0          # the spins did run, one per tree
    assert len(spans) == 3 and max(spans) < 0.2, spans


def test_one_rank_nccl_defers_its_all_reduces_and_gives_the_in_process_model(cuda_client):
    """mode="nccl" on one GPU worker: a device-grown tree enqueues its all-reduces without
    waiting (settled, watched, at the tree's end); the model and history are the in-process
    GPU's, and the settled all-reduces are counted."""
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    from dgbdt.dask.collective import nccl_status
    if cuda_client.run(nccl_status) != {w: None for w in cuda_client.scheduler_info()["workers"]}:
        pytest.skip("NCCL is not usable on the worker")
    X, y = _data(n=5000, seed=5)
    p = {"objective": "binary:logistic", "max_depth": 6, "eval_metric": ["logloss", "auc"]}
    Xd = da.from_array(cp.asarray(X), chunks=(1700, X.shape[1]))
    yd = da.from_array(cp.asarray(y), chunks=1700)
    d = dgd.DaskDataset(cuda_client, Xd, yd)
    out = dgd.train(cuda_client, p, d, 8, evals=[(d, "train")], mode="nccl",
                    verbose_eval=False)
    hist = {}
    ref = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y)), 8,
                      evals=[(dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y)), "train")],
                      evals_result=hist, verbose_eval=False)
    assert json.dumps(out["booster"].to_dict(), sort_keys=True) == \
        json.dumps(ref.to_dict(), sort_keys=True)
    assert out["history"] == hist
    # 8 rounds x 5 levels of histograms, all settled and counted, plus the gradient maxima
    assert out["booster"].timings["communication_calls"] >= 8 * 6


def test_rmm_allocators_pooled_or_kept(rmm_default):
    """RMM's default resource syncs: training allocates from CuPy's pool in its thread (and
    gives the cached blocks back after); an RMM pool is kept; the model is the same."""
    from dgbdt.backends import pool as backend
    from rmm.allocators.cupy import rmm_cupy_allocator
    rmm = rmm_default
    assert backend._allocation_syncs()
    seen = []
    # the allocator where a tree is read: tree(), or pending_tree() when trees are read a
    # round late (no eval set: this training)
    real = device_grower.DeviceGrowth.tree
    real_pending = device_grower.DeviceGrowth.pending_tree

    def tree(self):
        seen.append(cp.cuda.get_allocator())
        return real(self)

    def pending_tree(self, *args, **kwargs):
        seen.append(cp.cuda.get_allocator())
        return real_pending(self, *args, **kwargs)
    X, y = _data(n=200_000, seed=9)
    p = {"objective": "binary:logistic", "max_depth": 5}
    d = dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y))
    device_grower.DeviceGrowth.tree = tree
    device_grower.DeviceGrowth.pending_tree = pending_tree
    try:
        mempool = cp.get_default_memory_pool()
        mempool.free_all_blocks()

        def cached() -> int:
            return mempool.total_bytes() - mempool.used_bytes()
        # free space in chunks that earlier tests' live arrays hold: free_all_blocks cannot
        # give it back (in the whole tests/gpu run it was 7.8 MB when this test came)
        before = cached()
        # without the release, CuPy's pool keeps the training's temporaries cached ...
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(sys.modules["dgbdt.train"], "release_pooled", lambda: None)
            dgbdt.train(p, d, 3, verbose_eval=False)
        kept = cached() - before
        mempool.free_all_blocks()
        seen.clear()
        a = dgbdt.train(p, d, 3, verbose_eval=False)
        assert seen and all(f == mempool.malloc for f in seen)
        # ... with it they go back to the device (free_all_blocks keeps only chunks that hold
        # live arrays: a few KB of fragments were left on an H100 with 2000 rows)
        left = cached() - before
        assert kept > 2 ** 21 and left < kept / 4, (kept, left, before)
        pool = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), initial_pool_size=2 ** 28)
        rmm.mr.set_current_device_resource(pool)
        assert not backend._allocation_syncs()
        seen.clear()
        b = dgbdt.train(p, d, 3, verbose_eval=False)
        assert seen and all(f is rmm_cupy_allocator for f in seen)
    finally:
        device_grower.DeviceGrowth.tree = real
        device_grower.DeviceGrowth.pending_tree = real_pending
    assert json.dumps(a.to_dict()) == json.dumps(b.to_dict())
