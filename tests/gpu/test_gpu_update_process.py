"""process_type="update" on GPU rows (cupy, in process and on a LocalCUDACluster): the CPU
rows' model byte for byte (the leaves come from GPU prediction, the sums on the host)."""
import numpy as np
import pytest

import cupy as cp

import dgbdt


def _rows(n, shift, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + shift + 0.5 * rng.standard_normal(n) > 0).astype(np.float32)
    return X, y


P = {"objective": "binary:logistic", "max_depth": 4, "eval_metric": ["logloss"]}
Q = {**P, "process_type": "update", "updater": "refresh,prune", "gamma": 1.0}


def _start():
    X, y = _rows(4000, 0.0, 1)
    return dgbdt.train(P, dgbdt.Dataset(X, y), 4, verbose_eval=False)


def test_gpu_rows_update_as_cpu_rows():
    start = _start()
    X, y = _rows(3000, 0.7, 2)
    cpu = dgbdt.train(Q, dgbdt.Dataset(X, y), 4, xgb_model=start, verbose_eval=False)
    d = dgbdt.Dataset(cp.asarray(X), cp.asarray(y))
    hist = {}
    gpu = dgbdt.train({**Q, "device": "cuda"}, d, 4, xgb_model=start, evals=[(d, "v")],
                      evals_result=hist, verbose_eval=False)
    assert gpu.save_raw() == cpu.save_raw()
    assert len(hist["v"]["logloss"]) == 4


def test_gpu_partitions_update_as_cpu_rows(cuda_client):
    import dask.array as da

    from dgbdt import dask as dgd
    start = _start()
    X, y = _rows(3000, 0.7, 2)
    cpu = dgbdt.train(Q, dgbdt.Dataset(X, y), 4, xgb_model=start, verbose_eval=False)
    dd = dgd.DaskDataset(cuda_client, da.from_array(cp.asarray(X), chunks=(1000, 6)),
                         da.from_array(cp.asarray(y), chunks=1000))
    out = dgd.train(cuda_client, {**Q, "device": "cuda"}, dd, 4, xgb_model=start,
                    verbose_eval=False)
    assert out["booster"].save_raw() == cpu.save_raw()
