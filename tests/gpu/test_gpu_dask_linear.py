"""Piecewise-linear trees on Dask GPU workers (#15): the in-process CPU model's bytes in every
mode. Each GPU shard keeps its rows' raw features in its GPU's memory (a persisted dataset's
host rows copied up for the training); the linear histograms and leaf sums merge as on CPU
workers (NCCL all-reduces between ranks, task hops in graph mode); a worker's LocalSeam
(task mode, one rank) grows the trees on the device.

Clusters: one GPU worker (task, graph, auto), two worker processes on one GPU (graph mode's
hops between units), two GPUs (nccl, collective, graph; skipped with fewer)."""
import json

import numpy as np
import pytest

import dgbdt
import dgbdt.dask as dgd
from dask_parts import placed

dask_cuda = pytest.importorskip("dask_cuda")
da = pytest.importorskip("dask.array")

ROUNDS = 4


def _json(b):
    return json.dumps(b.to_dict(), sort_keys=True)


def _data(n=2400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 6)).astype(np.float32)
    Z = X.astype(np.float64)
    y = np.where(Z[:, 0] > 0, 2 * Z[:, 1] + Z[:, 2], -Z[:, 3]) + 0.1 * rng.standard_normal(n)
    X[rng.random(X.shape) < 0.03] = np.nan
    return X, y, rng.uniform(0.5, 2.0, n)


CASES = {
    "depthwise": {"linear_tree": True, "max_depth": 4, "eta": 0.3, "max_bin": 64},
    "capped-sampled": {"linear_tree": True, "max_depth": 3, "max_linear_features": 2,
                       "subsample": 0.8, "colsample_bynode": 0.8, "seed": 3},
    "lossguide": {"linear_tree": True, "grow_policy": "lossguide", "max_leaves": 8,
                  "max_depth": 0, "eta": 0.3},
}


def _check(client, case, mode, weighted, parts, on_device=True):
    params = CASES[case]
    X, y, w = _data()
    w = w if weighted else None
    want = dgbdt.train(params, dgbdt.Dataset(X, label=y, weight=w), ROUNDS, verbose_eval=False)
    assert want.trees[0].linear
    d = placed(client, X, y, w, parts, on_device)
    out = dgd.train(client, {**params, "device": "cuda"}, d, ROUNDS, verbose_eval=False,
                    mode=mode)
    if mode != "auto":
        assert out["mode"] == mode
    assert _json(out["booster"]) == _json(want)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", ["task", "graph", "auto"])
def test_one_gpu_worker(cuda_client, case, mode):
    _check(cuda_client, case, mode, weighted=case != "lossguide", parts=3)


def test_host_partitions_on_a_gpu_worker(cuda_client):
    """numpy partitions trained with device='cuda': the raw rows go up with the pages."""
    _check(cuda_client, "depthwise", "task", weighted=True, parts=3, on_device=False)


@pytest.mark.parametrize("case", ["depthwise", "lossguide"])
def test_graph_mode_units_on_one_gpu(two_on_one_gpu, case):
    _check(two_on_one_gpu, case, "graph", weighted=True, parts=5)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", ["nccl", "collective", "graph"])
def test_two_gpus(two_gpus, case, mode):
    _check(two_gpus, case, mode, weighted=mode != "graph", parts=4)
