"""#15 piecewise-linear trees (linear_tree) on one GPU, in-process: the CPU backend is the oracle.
The GPU builds the 9-sum histograms, the larger children's p~ pass, the leaves' ridge sums and
the margins with cuda/linear.cu (each float64 term formed as cpu_linear's, compiled with
--fmad=false, each summand rounded once to an integer) and searches each level's splits with
cuda/linear_split.cu (the CPU search's float64 steps and tie rule; its winners only go to the
host, which fits the children and the leaves); so under squared error (whose gradients are the
same bits on both backends) the model must be the CPU's byte for byte, for numpy and cupy
input, depth-wise and loss-guided, with weights, missing values, several pages, sampling and
continued training. Logistic gradients may differ in a last bit between the backends (CUDA's
exp), so there the losses and predictions are compared to 1e-5. The histograms come from the
shared-memory kernel by default; one test runs the global-atomic one (DGBDT_LINEAR_HIST=global)
and one a feature too wide for shared memory. Prediction of a linear model on cupy rows runs
cuda/linear.cu's predict_linear (leaf ids go through the host): the CPU's values bit for bit."""
import json

import numpy as np
import pytest

import cupy as cp

import dgbdt

LIN = {"linear_tree": True, "objective": "reg:squarederror", "max_depth": 4, "eta": 0.4,
       "lambda": 0.7, "linear_lambda": 0.3, "max_linear_features": 3, "max_bin": 32,
       "base_score": 0.5, "eval_metric": ["rmse"]}


def _data(n=6000, F=5, seed=0, missing=0.05):
    """A piecewise-linear target (the slope of feature 2 depends on feature 0's side),
    a feature far from 0 (centered by the normalization), missing values, weights."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 3, (n, F)).astype(np.float32)
    X[:, 1] = X[:, 1] * 10 + 100
    y = np.where(X[:, 0] > 0.5, 2 * X[:, 2] + 1, -X[:, 2]) + 0.1 * X[:, 1] \
        + 0.3 * X[:, 3] * (X[:, 4] > 0) + 0.1 * rng.normal(size=n)
    X[rng.random((n, F)) < missing] = np.nan
    w = rng.uniform(0.5, 2.0, n)
    return X, y, w


def _dataset(X, y, w, device: bool, **kw):
    if device:
        return dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y), weight=cp.asarray(w), **kw)
    return dgbdt.Dataset(X, label=y, weight=w, **kw)


def _n_features(b):
    return max(len(m["features"]) for t in json.loads(b.save_raw())["trees"]
               for m in t["linear_leaves"])


@pytest.mark.parametrize("growth", [{}, {"grow_policy": "lossguide", "max_leaves": 9,
                                         "max_depth": 0}], ids=["depthwise", "lossguide"])
@pytest.mark.parametrize("device_input", [False, True], ids=["numpy", "cupy"])
def test_gpu_model_is_the_cpu_model(growth, device_input):
    """The GPU's model file equals the CPU's (squared error, weights, missing values, three
    in-core pages on the GPU); its training and eval-set losses are the CPU's (the eval set's
    margins advanced by the GPU's predict_linear for cupy rows); the model's predictions of
    cupy rows (the GPU kernel) are its predictions of the same host rows, bit for bit, and so
    are its leaf ids (through the host)."""
    X, y, w = _data()
    Xv, yv, wv = _data(n=1500, seed=1)
    p = {**LIN, **growth}
    hc, hg = {}, {}
    dc = dgbdt.Dataset(X, label=y, weight=w)
    cpu = dgbdt.train(p, dc, 6, evals=[(dc, "train"), (dgbdt.Dataset(Xv, label=yv), "valid")],
                      evals_result=hc, verbose_eval=False)
    dg = _dataset(X, y, w, device_input, page_rows=2000)
    dv = (dgbdt.Dataset(cp.asarray(Xv), label=cp.asarray(yv)) if device_input
          else dgbdt.Dataset(Xv, label=yv))
    gpu = dgbdt.train({**p, "device": "cuda"}, dg, 6, evals=[(dg, "train"), (dv, "valid")],
                      evals_result=hg, verbose_eval=False)
    assert gpu.memory["pages"] == 3 and gpu.memory["pages_streamed"] == 0
    assert _n_features(cpu) == 3               # leaves reach the cap: regressors added
    assert gpu.save_raw() == cpu.save_raw()
    for name in ("train", "valid"):
        np.testing.assert_allclose(hg[name]["rmse"], hc[name]["rmse"], rtol=1e-12)
    assert hc["train"]["rmse"][-1] < 0.5 * hc["train"]["rmse"][0]
    host = cpu.predict(Xv)
    dev = gpu.predict(cp.asarray(Xv))
    assert isinstance(dev, cp.ndarray)
    np.testing.assert_array_equal(cp.asnumpy(dev).view(np.int64), host.view(np.int64))
    np.testing.assert_array_equal(
        cp.asnumpy(gpu.predict(cp.asarray(Xv), pred_leaf=True)), cpu.predict(Xv, pred_leaf=True))
    # inplace_predict of device rows, and a round trip of the model file
    np.testing.assert_array_equal(cp.asnumpy(gpu.inplace_predict(cp.asarray(Xv))),
                                  cpu.inplace_predict(Xv))
    assert dgbdt.load_model(gpu.save_raw()).save_raw() == cpu.save_raw()


def test_gpu_training_margins_are_the_model_predictions():
    """The margins the GPU added leaf by leaf (cuda/linear.cu add_linear_leaves, in the
    order of the CPU's walk) are the saved model's predictions of the training rows: the
    train loss recorded by the GPU training equals the loss of the model's predictions."""
    X, y, w = _data(seed=2)
    d = _dataset(X, y, w, True)
    hist = {}
    b = dgbdt.train({**LIN, "device": "cuda"}, d, 5, evals=[(d, "train")], evals_result=hist,
                    verbose_eval=False)
    pred = b.predict(X)
    rmse = np.sqrt(np.sum(w * (pred - y) ** 2) / w.sum())
    np.testing.assert_allclose(hist["train"]["rmse"][-1], rmse, rtol=1e-10)


def test_gpu_sampling_and_continued_training_are_the_cpu_model():
    """Row and column sampling (the same draws on both backends) and continued training
    (the prior's margins of cupy rows come from its predictions, through the host): the
    CPU's model file, and 3 + 2 rounds give the 5-round model."""
    X, y, w = _data(seed=3)
    p = {**LIN, "subsample": 0.7, "colsample_bynode": 0.8, "seed": 5}
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 5, verbose_eval=False)
    gp = {**p, "device": "cuda"}
    gpu = dgbdt.train(gp, _dataset(X, y, w, True), 5, verbose_eval=False)
    assert gpu.save_raw() == cpu.save_raw()
    first = dgbdt.train(gp, _dataset(X, y, w, True), 3, verbose_eval=False)
    more = dgbdt.train(gp, _dataset(X, y, w, True), 2, xgb_model=first, verbose_eval=False)
    assert more.save_raw() == cpu.save_raw()


def test_gpu_logistic_agrees_with_the_cpu():
    """binary:logistic with weights and missing values on two pages: the GPU's log loss per
    round is the CPU's to 1e-5, and so are its predictions (the backends' exp may differ in a
    last bit, so the trees are not asserted equal here)."""
    X, y, w = _data(n=8000, seed=4)
    lab = (y > np.median(y)).astype(np.float64)
    p = {**LIN, "objective": "binary:logistic", "base_score": None, "eval_metric": ["logloss"]}
    hc, hg = {}, {}
    dc = dgbdt.Dataset(X, label=lab, weight=w)
    cpu = dgbdt.train(p, dc, 6, evals=[(dc, "train")], evals_result=hc, verbose_eval=False)
    dg = _dataset(X, lab, w, True, page_rows=4000)
    gpu = dgbdt.train(p, dg, 6, evals=[(dg, "train")], evals_result=hg, verbose_eval=False)
    assert all(t.linear for t in gpu.trees)
    np.testing.assert_allclose(hg["train"]["logloss"], hc["train"]["logloss"], rtol=1e-5)
    assert hc["train"]["logloss"][-1] < hc["train"]["logloss"][0]
    np.testing.assert_allclose(cp.asnumpy(gpu.predict(cp.asarray(X))), cpu.predict(X),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("device_input", [False, True], ids=["numpy", "cupy"])
def test_streamed_pages_give_the_cpu_model(monkeypatch, device_input):
    """Pages streamed from host memory (a device_memory_budget of a quarter of the pages):
    host rows stream with their pages (Shard.raw_stream), cupy rows are read where they are;
    the CPU's model bytes either way, device-grown and host-grown (loss-guided)."""
    from dgbdt.data import page_store
    monkeypatch.setattr(page_store, "MIN_PAGE_BYTES", 1 << 14)
    X, y, w = _data(n=40_000, seed=6)
    for extra in ({}, {"grow_policy": "lossguide", "max_leaves": 8, "max_depth": 0}):
        p = {**LIN, **extra}
        cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 3, verbose_eval=False)
        whole = dgbdt.train({**p, "device": "cuda"}, _dataset(X, y, w, device_input), 1,
                            verbose_eval=False).memory["pages_in_memory_bytes"]
        gpu = dgbdt.train({**p, "device": "cuda", "device_memory_budget": whole // 4},
                          _dataset(X, y, w, device_input), 3, verbose_eval=False)
        m = gpu.memory
        assert m["pages_host"] == m["pages"] >= 3 and m["stream_copies"] > m["pages"]
        assert gpu.save_raw() == cpu.save_raw()


@pytest.mark.parametrize("setting,max_bin,smem", [
    ("global", 32, None), ("shared", 1024, None), ("shared", 256, 16384)],
    ids=["global-kernel", "a-group-a-feature", "feature-too-wide-for-shared"])
def test_both_histogram_kernels_give_the_cpu_model(monkeypatch, setting, max_bin, smem):
    """DGBDT_LINEAR_HIST=global (every summand a global atomic); the default setting with
    features of ~1000 slots (one a shared-memory block, opted in beyond 48 KiB); and with a
    16 KiB budget (DGBDT_LINEAR_SMEM), under one feature's 257 slots (the global kernel runs):
    the CPU's model file each way."""
    from dgbdt.backends import cuda_linear as gpu_linear
    monkeypatch.setenv("DGBDT_LINEAR_HIST", setting)
    if smem:
        monkeypatch.setenv("DGBDT_LINEAR_SMEM", str(smem))
        assert gpu_linear.feature_groups(np.cumsum([0] + [257] * 5), smem) is None
    X, y, w = _data(seed=7)
    p = {**LIN, "max_bin": max_bin}
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 4, verbose_eval=False)
    gpu = dgbdt.train({**p, "device": "cuda"}, _dataset(X, y, w, True), 4, verbose_eval=False)
    if max_bin == 1024 and smem is None:
        from dgbdt.backends.cuda import CudaBackend
        be = CudaBackend.for_ordinal(0)
        budget = gpu_linear.shared_budget(be.smem_optin, be.smem_per_sm)
        fg = gpu_linear.feature_groups(np.cumsum([0] + [1025] * 5), budget)
        assert budget > 72 * 1025 > 48 * 1024 and fg is not None
    assert gpu.save_raw() == cpu.save_raw()


def _random_histograms(seed, m, nb=(5, 300, 0, 300, 40)):
    """Fixed-point linear histograms [m, S, 9] of m nodes' random rows (each summand rounded
    once, as the kernels sum them): missing values in every other node, feature 3 a copy of
    feature 1 (ties), a feature of 300 bins (more than a split block's threads), one without
    candidates, one whose rows use a few of its bins (empty bins); node 0 without rows."""
    rng = np.random.default_rng(seed)
    ptrs = np.concatenate([[0], np.cumsum(np.array(nb) + 1)]).astype(np.int64)
    hist = np.zeros((m, int(ptrs[-1]), 9), np.int64)
    sg, sh = 2.0 ** 40, 2.0 ** 41
    has_p = rng.random(m) < 0.6
    for j in range(1, m):
        n = int(rng.integers(1, 600))
        g, h = rng.normal(size=n), rng.uniform(0.0, 1.0, n)
        pt = rng.uniform(-1, 1, n) if has_p[j] else np.zeros(n)
        x1 = rng.uniform(-1, 1, n)
        miss1 = rng.random(n) < 0.2 * (j % 2)
        g += 1.5 * ((x1 < -0.3) | miss1)
        for f, k in enumerate(nb):
            if f in (1, 3):
                x, miss = x1, miss1
                b = np.minimum((x1 + 1) / 2 * k, k - 1).astype(np.int64)
            else:
                x, miss = rng.uniform(-1, 1, n), rng.random(n) < (0.2 * (j % 2) if k else 1.0)
                b = rng.integers(0, max(k, 1), n) if f != 4 else rng.choice([0, 7, 39], n)
            x, b = np.where(miss, 0.0, x), np.where(miss, k, b)
            gs, hs = g * sg, h * sh
            for c, t in enumerate([g * sg, h * sh, gs * pt, hs * pt, hs * pt * pt, gs * x,
                                   hs * x, hs * pt * x, hs * x * x]):
                np.add.at(hist[j, :, c], ptrs[f] + b, np.rint(t).astype(np.int64))
    totals = hist[:, ptrs[0]:ptrs[1]].sum(axis=1)
    hist[min(2, m - 1), ptrs[0]:ptrs[1]] = 0               # a node's column sample
    addable = rng.random((m, len(nb))) < 0.7
    addable[:, 3] = addable[:, 1]
    return hist, ptrs, totals, addable, has_p, 1.0 / sg, 1.0 / sh


@pytest.mark.parametrize("m", [1, 2, 64])
@pytest.mark.parametrize("mcw,lam0,lam1", [(0.0, 1.0, 0.5), (3.0, 0.0, 1e-3)])
def test_split_search_kernel_equals_the_cpu_search(m, mcw, lam0, lam1):
    """cuda/linear_split.cu through CudaLinear.evaluate_linear_splits on device histograms:
    the CPU backend's result (cpu_linear's numba search and feature totals) exactly, gains
    bit for bit."""
    from dgbdt.backends.cpu import CPU
    from dgbdt.backends.cuda import CudaBackend
    hist, ptrs, totals, addable, has_p, inv_sg, inv_sh = _random_histograms(m + 30, m)
    ref = CPU.evaluate_linear_splits(hist, ptrs, totals, addable, has_p, inv_sg, inv_sh, lam0,
                                     lam1, mcw)
    be = CudaBackend.for_ordinal(cp.cuda.runtime.getDevice())
    got = be.evaluate_linear_splits(cp.asarray(hist), ptrs, cp.asarray(totals), addable, has_p,
                                    inv_sg, inv_sh, lam0, lam1, mcw)
    assert all(isinstance(a, np.ndarray) for a in got)
    np.testing.assert_array_equal(got[0].view(np.uint32), ref[0].view(np.uint32))
    for a, b in zip(got[1:], ref[1:]):
        np.testing.assert_array_equal(a, b)
    if m == 64:
        assert (ref[1] >= 0).sum() > 40 and ref[3].any() and (ref[1] == 1).any()


def test_gpu_training_searches_splits_on_the_device(monkeypatch):
    """A GPU training never runs the host's split search (the numba kernel is replaced by
    one that fails) and still gives the CPU's model file; interaction constraints and column
    sampling zero device histogram slots first."""
    from dgbdt.kernels import cpu_linear
    X, y, w = _data(seed=8)
    p = {**LIN, "colsample_bynode": 0.8, "seed": 3,
         "interaction_constraints": [[0, 2], [1, 2, 3, 4]]}
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 4, verbose_eval=False)

    def host_search(*a, **k):
        raise AssertionError("the host split search ran for GPU shards")
    monkeypatch.setattr(cpu_linear, "evaluate_linear_splits", host_search)
    gpu = dgbdt.train({**p, "device": "cuda"}, _dataset(X, y, w, True), 4, verbose_eval=False)
    assert gpu.save_raw() == cpu.save_raw()
