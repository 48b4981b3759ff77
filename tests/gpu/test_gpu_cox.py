"""survival:cox on one GPU in-process (#16): the gradients are the CPU's numba kernel on host
copies of the margins (dgbdt.objectives.survival.Cox.seam_gradients; the risk sets are one
sequential pass in the order of the times), written back into the device shards, so the GPU
training grows the CPU's trees: the model bytes are the CPU's. cox-nloglik reads the GPU
margins (exp on the device, then the host): the CPU's values up to the last bits."""
import json

import numpy as np
import pytest

import cupy as cp

import dgbdt


def _data(n=3000, nf=6, seed=0):
    """Times with ties (rounded) and 30 % censored (negative), a signal in feature 0."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((n, nf)) * 3).astype(np.float32)
    X[rng.random((n, nf)) < 0.05] = np.nan
    t = np.round(rng.exponential(np.exp(-0.3 * np.nan_to_num(X[:, 0]))), 2) + 0.01
    y = np.where(rng.random(n) < 0.3, -t, t)
    w = rng.uniform(0.5, 2.0, n)
    return X, y, w


def _json(b):
    return json.dumps(b.to_dict(), sort_keys=True)


@pytest.mark.parametrize("weighted,extra", [(False, {}), (True, {}),
                                            (True, {"subsample": 0.7})])
@pytest.mark.parametrize("rows", ["numpy", "cupy"])
def test_cox_on_a_gpu_is_the_cpu_model(weighted, extra, rows):
    X, y, w = _data()
    w = w if weighted else None
    p = {"objective": "survival:cox", "max_depth": 4, "eta": 0.3, **extra}
    put = cp.asarray if rows == "cupy" else (lambda a: a)
    dc = dgbdt.Dataset(X, label=y, weight=w)
    vc = dgbdt.Dataset(X[:500], label=y[:500])
    hc, hg = {}, {}
    cpu = dgbdt.train(p, dc, 6, evals=[(dc, "t"), (vc, "v")], evals_result=hc,
                      verbose_eval=False)
    dg = dgbdt.Dataset(put(X), label=put(y), weight=None if w is None else put(w))
    vg = dgbdt.Dataset(put(X[:500]), label=put(y[:500]))
    gpu = dgbdt.train({**p, "device": "cuda"}, dg, 6, evals=[(dg, "t"), (vg, "v")],
                      evals_result=hg, verbose_eval=False)
    assert _json(gpu) == _json(cpu)
    for name in ("t", "v"):
        np.testing.assert_allclose(hg[name]["cox-nloglik"], hc[name]["cox-nloglik"],
                                   rtol=1e-9)
    pg = gpu.predict(cp.asarray(X[:500]))
    np.testing.assert_allclose(cp.asnumpy(pg), cpu.predict(X[:500]), rtol=1e-12)


def test_cox_on_a_gpu_continues_a_model():
    """From a prior model's margins (xgb_model): 3 + 3 rounds are the 6-round model's bytes,
    as on the CPU."""
    X, y, _ = _data(seed=1)
    p = {"objective": "survival:cox", "max_depth": 3, "device": "cuda"}
    d = dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y))
    whole = dgbdt.train(p, d, 6, verbose_eval=False)
    first = dgbdt.train(p, d, 3, verbose_eval=False)
    both = dgbdt.train(p, d, 3, xgb_model=first, verbose_eval=False)
    assert _json(both) == _json(whole)
    cpu = dgbdt.train({**p, "device": "cpu"}, dgbdt.Dataset(X, label=y), 6, verbose_eval=False)
    assert _json(whole) == _json(cpu)
