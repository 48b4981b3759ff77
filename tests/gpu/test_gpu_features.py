"""0.7's features on GPU data: the CPU backend is the oracle (squared error is byte-identical
between the backends), so each feature must give the CPU model from cupy arrays."""
import numpy as np
import pytest

import cupy as cp

import dgbdt

SQ = {"objective": "reg:squarederror", "max_depth": 5, "max_bin": 64}


def _data(n=8000, nf=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, nf)).astype(np.float32)
    X[rng.random((n, nf)) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) - 2 * np.nan_to_num(X[:, 1]) ** 2 + rng.standard_normal(n) * .1
    return X, y


def _both(params, X, y, rounds, **kw):
    cpu = dgbdt.train(params, dgbdt.Dataset(X, label=y), rounds, verbose_eval=False, **kw)
    gpu = dgbdt.train(params, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y)), rounds,
                      verbose_eval=False, **kw)
    return cpu, gpu


@pytest.mark.parametrize("growth", ["device", "host"])
def test_row_and_column_sampling_on_the_gpu_is_the_cpu_model(monkeypatch, growth):
    monkeypatch.setenv("DGBDT_GROWTH", growth)
    X, y = _data()
    p = {**SQ, "subsample": 0.7, "colsample_bytree": 0.8, "colsample_bylevel": 0.9,
         "colsample_bynode": 0.8, "seed": 5}
    cpu, gpu = _both(p, X, y, 12)
    assert gpu.save_raw() == cpu.save_raw()
    unsampled = dgbdt.train(SQ, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y)), 12,
                            verbose_eval=False)
    assert unsampled.save_raw() != gpu.save_raw()


@pytest.mark.parametrize("growth", ["device", "host"])
def test_gradient_based_sampling_on_the_gpu_is_the_cpu_model(monkeypatch, growth):
    """The threshold's bucket sums, the draws and the 1/p weights on cupy give the CPU's
    bits (dgbdt.engine.gradient_sampling), in core and from pages."""
    monkeypatch.setenv("DGBDT_GROWTH", growth)
    X, y = _data(seed=2)
    p = {**SQ, "subsample": 0.25, "sampling_method": "gradient_based", "seed": 3}
    cpu, gpu = _both(p, X, y, 12)
    assert gpu.save_raw() == cpu.save_raw()
    paged = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y), page_rows=3000),
                        12, verbose_eval=False)
    assert paged.save_raw() == cpu.save_raw()
    uniform = dgbdt.train({**p, "sampling_method": "uniform"}, dgbdt.Dataset(X, label=y), 12,
                          verbose_eval=False)
    assert uniform.save_raw() != cpu.save_raw()


def test_the_gpu_holders_find_the_hosts_threshold():
    """Sorted q and binary searches on the GPU, narrowing bincounts on the host: the same
    bucket sums, so the same threshold (dgbdt.engine.gradient_sampling.Holder)."""
    from dgbdt.engine.gradient_sampling import Holder, threshold
    rng = np.random.default_rng(4)
    q = rng.integers(0, 2 ** 24, 300_000)
    q[rng.random(q.size) < 0.2] = 0
    q[:5000] = 77
    for T in (1, 1000, 60_000, 290_000):
        host = [Holder(q[:100_000], np), Holder(q[100_000:], np)]
        dev = [Holder(cp.asarray(q[:100_000]), cp), Holder(cp.asarray(q[100_000:]), cp)]
        assert threshold(T, lambda p, st: sum(h.sums(p, st) for h in dev)) == \
            threshold(T, lambda p, st: sum(h.sums(p, st) for h in host))


def test_continued_training_on_the_gpu():
    X, y = _data(seed=1)
    d = dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y))
    whole = dgbdt.train(SQ, d, 10, verbose_eval=False)
    first = dgbdt.train(SQ, d, 6, verbose_eval=False)
    more = dgbdt.train(SQ, d, 4, verbose_eval=False, xgb_model=first)
    assert more.save_raw() == whole.save_raw()
    cpu = dgbdt.train(SQ, dgbdt.Dataset(X, label=y), 10, verbose_eval=False)
    assert whole.save_raw() == cpu.save_raw()


def test_custom_objective_on_cupy_arrays():
    X, y = _data(seed=2)
    seen = []

    def squared(preds, dtrain):
        seen.append(type(preds).__module__.split(".")[0])
        label = dtrain.get_label()
        return preds - cp.asarray(label), cp.ones_like(preds)
    d = dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y))
    built_in = dgbdt.train({**SQ, "base_score": 0.5}, d, 8, verbose_eval=False)
    custom = dgbdt.train(SQ, d, 8, verbose_eval=False, obj=squared)
    assert custom.save_raw() == built_in.save_raw()
    assert set(seen) == {"cupy"}


def test_shap_of_cupy_rows_equals_the_cpu_values():
    X, y = _data(n=3000, seed=3)
    booster = dgbdt.train(SQ, dgbdt.Dataset(X, label=y), 6, verbose_eval=False)
    host = booster.predict(X[:500], pred_contribs=True)
    dev = booster.predict(cp.asarray(X[:500]), pred_contribs=True)
    # the GPU sums the path form of TreeSHAP (kernels/gpu_shap.py) in another order
    assert isinstance(dev, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(dev), host, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(host.sum(axis=1), booster.predict(X[:500], output_margin=True),
                               rtol=1e-5, atol=1e-5)


def test_cv_and_callbacks_on_gpu_data():
    from dgbdt.callback import EarlyStopping, LearningRateScheduler
    X, y = _data(seed=4)
    d = dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y))
    res = dgbdt.cv(SQ, d, 8, nfold=3, seed=0)
    res_cpu = dgbdt.cv(SQ, dgbdt.Dataset(X, label=y), 8, nfold=3, seed=0)
    assert res == res_cpu if isinstance(res, dict) else res.equals(res_cpu)
    dv = dgbdt.Dataset(cp.asarray(X[:2000]), label=cp.asarray(y[:2000]))
    cbs = [EarlyStopping(3, save_best=True), LearningRateScheduler(lambda r: 0.3 / (1 + r))]
    gpu = dgbdt.train(SQ, d, 30, evals=[(dv, "v")], callbacks=cbs, verbose_eval=False)
    cbs = [EarlyStopping(3, save_best=True), LearningRateScheduler(lambda r: 0.3 / (1 + r))]
    cpu = dgbdt.train(SQ, dgbdt.Dataset(X, label=y), 30,
                      evals=[(dgbdt.Dataset(X[:2000], label=y[:2000]), "v")], callbacks=cbs,
                      verbose_eval=False)
    assert gpu.save_raw() == cpu.save_raw()
