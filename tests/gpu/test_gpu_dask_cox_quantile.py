"""survival:cox and the quantile losses on Dask GPU workers (#16): the in-process CPU model's
bytes in every mode.

* survival:cox: each round every holder of rows (a collective rank, or graph mode's unit)
  sends its (dataset index, label, margin, weight) rows from its GPU to the host; the
  gradients of all rows are the CPU's numba kernel on the gathered rows (NCCL gathers them
  between the devices), each holder keeps its own and writes them back to its GPU.
* reg:absoluteerror / reg:quantileerror: each tree's leaves' residuals are copied to the host
  once a tree (LocalSeam.leaf_residuals) and the exact quantile descent's sums are reduced as
  on CPU workers (all-reduced between ranks, one task hop a reduction in graph mode).

Three clusters: one GPU worker (the task mode, graph mode's one unit), two worker processes
sharing one GPU (graph mode's hops between units), and two GPUs (nccl, collective, graph;
skipped with fewer)."""
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


def _features(n, seed):
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((n, 5)) * 3).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, rng


def _cox_data(n=2400, seed=0):
    X, rng = _features(n, seed)
    t = np.round(rng.exponential(np.exp(-0.3 * np.nan_to_num(X[:, 0]))), 2) + 0.01
    return X, np.where(rng.random(n) < 0.3, -t, t), rng.uniform(0.5, 2.0, n)


def _quantile_data(n=2400, seed=1):
    X, rng = _features(n, seed)
    y = np.nan_to_num(X[:, 0]) - 0.5 * np.nan_to_num(X[:, 1]) + rng.standard_cauchy(n) * 0.3
    return X, y, rng.uniform(0.5, 2.0, n)


CASES = {
    "cox": ({"objective": "survival:cox", "max_depth": 3}, _cox_data),
    "cox-sampled": ({"objective": "survival:cox", "max_depth": 3, "subsample": 0.8},
                    _cox_data),
    "absolute": ({"objective": "reg:absoluteerror", "max_depth": 4, "eta": 0.5},
                 _quantile_data),
    "quantile": ({"objective": "reg:quantileerror", "quantile_alpha": 0.3, "max_depth": 4,
                  "subsample": 0.8}, _quantile_data),
    "quantiles": ({"objective": "reg:quantileerror", "quantile_alpha": [0.2, 0.7],
                   "max_depth": 3}, _quantile_data),
}


def _check(client, case, mode, weighted, parts):
    """The Dask GPU workers' model is the in-process CPU model's bytes; the history its values
    (the metrics read GPU margins: the CPU's up to the last bits of exp)."""
    params, make = CASES[case]
    X, y, w = make()
    w = w if weighted else None
    ref: dict = {}
    dv = dgbdt.Dataset(X[:400], label=y[:400])
    want = dgbdt.train(params, dgbdt.Dataset(X, label=y, weight=w), ROUNDS, evals=[(dv, "v")],
                       evals_result=ref, verbose_eval=False)
    d = placed(client, X, y, w, parts)
    dvd = placed(client, X[:400], y[:400], None, len(client.scheduler_info()["workers"]))
    out = dgd.train(client, {**params, "device": "cuda"}, d, ROUNDS, evals=[(dvd, "v")],
                    verbose_eval=False, mode=mode)
    if mode != "auto":
        assert out["mode"] == mode
    assert _json(out["booster"]) == _json(want)
    assert list(out["history"]["v"]) == list(ref["v"])
    for name, values in ref["v"].items():
        np.testing.assert_allclose(out["history"]["v"][name], values, rtol=1e-9)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", ["task", "graph", "auto"])
def test_one_gpu_worker(cuda_client, case, mode):
    _check(cuda_client, case, mode, weighted=case != "absolute", parts=3)


@pytest.mark.parametrize("case", list(CASES))
def test_graph_mode_units_on_one_gpu(two_on_one_gpu, case):
    """Two units: survival:cox's gather hop and the quantile descent's hops between them."""
    _check(two_on_one_gpu, case, "graph", weighted=case != "cox", parts=5)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", ["nccl", "collective", "graph"])
def test_two_gpus(two_gpus, case, mode):
    """NCCL ranks: cox's rows all-gathered on the devices then computed on each host; the
    descent's sums all-reduced (float64 integers below 2**53: exact)."""
    _check(two_gpus, case, mode, weighted=mode != "graph", parts=4)
