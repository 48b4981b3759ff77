"""The quantile losses (reg:absoluteerror, reg:quantileerror) on the GPU: gradients on the
device, each tree's leaf refresh on the host (dgbdt.engine.seam.LocalSeam.leaf_quantiles copies the
leaves' residuals once a tree and runs dgbdt.objectives.leaf_quantiles as the CPU does), trees grown by the
host grower: the CPU's model, byte for byte (the gradients are exact: signs and 1 - alpha),
with one quantile and with several (one output each)."""
import json

import numpy as np
import pytest

import cupy as cp

import dgbdt


def _data(n=3000, nf=6, seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((n, nf)) * 3).astype(np.float32)
    X[rng.random((n, nf)) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) - 0.5 * np.nan_to_num(X[:, 1]) + rng.standard_cauchy(n) * 0.3
    return X, y


def _json(b):
    return json.dumps(b.to_dict(), sort_keys=True)


@pytest.mark.parametrize("objective,extra", [
    ("reg:absoluteerror", {}), ("reg:quantileerror", {"quantile_alpha": 0.3}),
    ("reg:quantileerror", {"quantile_alpha": 0.8, "subsample": 0.7})])
@pytest.mark.parametrize("rows", ["numpy", "cupy"])
def test_quantile_losses_give_the_cpu_model(objective, extra, rows):
    X, y = _data()
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    p = {"objective": objective, "max_depth": 5, "eta": 0.5, **extra}
    hc, hg = {}, {}
    dc = dgbdt.Dataset(X, label=y, weight=w)
    cpu = dgbdt.train(p, dc, 6, evals=[(dc, "t")], evals_result=hc, verbose_eval=False)
    put = cp.asarray if rows == "cupy" else (lambda a: a)
    dg = dgbdt.Dataset(put(X), label=put(y), weight=put(w))
    gpu = dgbdt.train({**p, "device": "cuda"}, dg, 6, evals=[(dg, "t")], evals_result=hg,
                      verbose_eval=False)
    assert _json(gpu) == _json(cpu)
    for name in hc["t"]:
        np.testing.assert_allclose(hg["t"][name], hc["t"][name], rtol=1e-6)


@pytest.mark.parametrize("rows", ["numpy", "cupy"])
def test_several_quantiles_give_the_cpu_model(rows):
    """quantile_alpha a list: one output a quantile, column k's gradients at alphas[k]
    (cuda/objective.cu quantiles), leaves refreshed to their own quantile on the host."""
    X, y = _data(seed=2)
    p = {"objective": "reg:quantileerror", "quantile_alpha": [0.1, 0.5, 0.9], "max_depth": 4,
         "eta": 0.5}
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y), 5)
    put = cp.asarray if rows == "cupy" else (lambda a: a)
    gpu = dgbdt.train({**p, "device": "cuda"}, dgbdt.Dataset(put(X), label=put(y)), 5)
    assert len(gpu.trees) == 15
    assert _json(gpu) == _json(cpu)
    pg = cp.asnumpy(gpu.predict(cp.asarray(X)))
    assert pg.shape == (len(y), 3)
    np.testing.assert_allclose(pg, cpu.predict(X), rtol=1e-6, atol=1e-9)
