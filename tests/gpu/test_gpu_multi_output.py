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


def test_vector_leaf_trees_are_refused_on_the_gpu_by_name():
    """multi_strategy="multi_output_tree" grows on the CPU only: cupy input is refused with
    the feature's name and both alternatives, before any tree."""
    X, Y = _data(n=2000)
    p = {"multi_strategy": "multi_output_tree", "max_depth": 3}
    with pytest.raises(NotImplementedError, match="multi_output_tree.*GPU"):
        dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(Y)), 2, verbose_eval=False)
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=Y), 2, verbose_eval=False)   # the alternative
    assert cpu.predict(X).shape == (len(X), 3)


def test_gblinear_on_cupy_input_is_the_host_model():
    """booster="gblinear" trains on the host: cupy rows are copied there, the same weights."""
    X, Y = _data(n=3000)
    X = np.nan_to_num(X)
    p = {"booster": "gblinear", "updater": "coord_descent", "lambda": 0.1, "alpha": 0.01}
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=Y[:, 0]), 5, verbose_eval=False)
    gpu = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(Y[:, 0])), 5,
                      verbose_eval=False)
    assert _json(gpu) == _json(cpu)
    out = gpu.predict(cp.asarray(X))
    np.testing.assert_array_equal(cp.asnumpy(out) if isinstance(out, cp.ndarray) else out,
                                  cpu.predict(X))
