"""A label of several targets on the GPU (dgbdt.objectives.multi_target: the one-column
objective kernel over the n*T entries): the CPU backend's model bytes."""
import json

import numpy as np
import pytest

import cupy as cp

import dgbdt


def _data(n=6000, nf=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, nf)).astype(np.float32)
    X[rng.random((n, nf)) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    Y = np.stack([Z[:, 0] - Z[:, 1], np.sin(Z[:, 2]) + 0.1 * rng.standard_normal(n),
                  Z[:, 3] * Z[:, 4]], axis=1)
    return X, Y


def _json(b):
    return json.dumps(b.to_dict(), sort_keys=True)


@pytest.mark.parametrize("objective", ["reg:squarederror", "reg:pseudohubererror",
                                       "binary:logistic"])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_target_model_is_the_cpus(objective, weighted):
    X, Y = _data()
    if objective == "binary:logistic":
        Y = (Y > np.median(Y, axis=0)).astype(np.float64)
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(X)) if weighted else None
    p = {"objective": objective, "max_depth": 5, "max_bin": 64}
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=Y, weight=w), 6, verbose_eval=False)
    gpu = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(Y),
                                       weight=None if w is None else cp.asarray(w)), 6,
                      verbose_eval=False)
    assert cpu.predict(X).shape == (len(X), 3)
    assert _json(cpu) == _json(gpu)
