"""#17 on the GPU: monotone and interaction constraints and grow_policy="lossguide" grow on
the host over the GPU's merged histograms (the device grower has none of them). The CPU
backend is the oracle: squared error's model must be the CPU's byte for byte, in-process
(device data, host data with device='cuda', several pages) and in every Dask mode on one GPU
worker."""
import json

import numpy as np
import pytest

import cupy as cp

import dgbdt

SQ = {"objective": "reg:squarederror", "eta": 0.3, "max_depth": 5, "max_bin": 64}

CASES = {
    "monotone": {"monotone_constraints": [1, -1, 0, 1, 0, 0]},
    "monotone-regularized": {"monotone_constraints": "(1,0,-1,0,0,1)", "lambda": 2.0,
                             "alpha": 0.3, "max_delta_step": 0.7, "min_child_weight": 3.0},
    "interaction": {"interaction_constraints": [[0, 1], [2, 3, 4], [5]]},
    "lossguide": {"grow_policy": "lossguide", "max_leaves": 17, "max_depth": 0},
    "lossguide-depth": {"grow_policy": "lossguide", "max_leaves": 0, "max_depth": 4,
                        "gamma": 0.1},
    "all": {"grow_policy": "lossguide", "max_leaves": 11, "max_depth": 6,
            "monotone_constraints": [1, -1, 0, 0, 0, 0],
            "interaction_constraints": [[0, 1, 2], [3, 4, 5]], "colsample_bynode": 0.8,
            "subsample": 0.8, "seed": 3},
}


def _data(n=8000, nf=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, nf)).astype(np.float32)
    X[rng.random((n, nf)) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    y = 2 * Z[:, 0] - np.sin(2 * Z[:, 1]) + Z[:, 2] * Z[:, 3] + 0.5 * Z[:, 4] ** 2 \
        + rng.standard_normal(n) * .2
    return X, y


def _json(b):
    return json.dumps(b.to_dict(), sort_keys=True)


@pytest.mark.parametrize("name", list(CASES))
def test_gpu_model_is_the_cpu_model(name):
    X, y = _data()
    p = {**SQ, **CASES[name]}
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y), 8, verbose_eval=False)
    dev = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y)), 8,
                      verbose_eval=False)
    assert dev.save_raw() == cpu.save_raw()
    host = dgbdt.train({**p, "device": "cuda"}, dgbdt.Dataset(X, label=y, page_rows=3000), 8,
                       verbose_eval=False)
    assert host.save_raw() == cpu.save_raw()
    plain = dgbdt.train(SQ, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y)), 8,
                        verbose_eval=False)
    assert plain.save_raw() != cpu.save_raw()       # the option did change the trees


def test_constraints_hold_on_the_gpu_model():
    """What the options mean, on the GPU's model: predictions monotone in the constrained
    features; every path's features within one interaction group; at most max_leaves leaves."""
    X, y = _data(seed=2)
    d = dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y))
    mono = dgbdt.train({**SQ, **CASES["monotone"]}, d, 10, verbose_eval=False)
    base = np.nan_to_num(X[:200])
    grid = np.linspace(-3, 3, 25, dtype=np.float32)
    for f, c in ((0, 1), (1, -1), (3, 1)):
        rows = np.repeat(base, len(grid), 0)
        rows[:, f] = np.tile(grid, len(base))
        pred = cp.asnumpy(mono.predict(cp.asarray(rows))).reshape(len(base), len(grid))
        assert (c * np.diff(pred, axis=1) >= -1e-6).all()
    groups = [{0, 1}, {2, 3, 4}, {5}]
    inter = dgbdt.train({**SQ, **CASES["interaction"]}, d, 10, verbose_eval=False)
    for t in inter.trees:
        def walk(node, path):
            if t.left[node] == -1:
                assert any(path <= g for g in groups), path
                return
            walk(t.left[node], path | {int(t.feature[node])})
            walk(t.right[node], path | {int(t.feature[node])})
        walk(0, set())
    lg = dgbdt.train({**SQ, **CASES["lossguide"]}, d, 6, verbose_eval=False)
    assert max(int((t.left == -1).sum()) for t in lg.trees) == 17


@pytest.mark.parametrize("mode", ["nccl", "graph", "task"])
def test_dask_modes_give_the_cpu_model(cuda_client, mode):
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    if mode == "nccl":
        from dgbdt.dask.collective import nccl_status
        workers = cuda_client.scheduler_info()["workers"]
        if cuda_client.run(nccl_status) != {w: None for w in workers}:
            pytest.fail("NCCL is not usable on the worker")
    X, y = _data(n=5000, seed=4)
    Xd = da.from_array(cp.asarray(X), chunks=(1700, X.shape[1]), asarray=False)
    yd = da.from_array(cp.asarray(y), chunks=1700, asarray=False)
    d = dgd.DaskDataset(cuda_client, Xd, yd)
    for name in ("monotone", "interaction", "lossguide", "all"):
        p = {**SQ, **CASES[name]}
        cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y), 5, verbose_eval=False)
        out = dgd.train(cuda_client, p, d, 5, mode=mode, verbose_eval=False)
        assert out["mode"] == mode
        assert _json(out["booster"]) == _json(cpu), name
