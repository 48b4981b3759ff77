"""#17 categorical features on the GPU: the CPU backend is the oracle. Trees with categorical
cuts grow on the host over the GPU's merged histograms, the GPU applying the category sets to
its rows (cuda/tree.cu's partition_scatter_cat); the model must be the CPU's, byte for byte
(squared error: the two backends' gradients are the same bits), for one-hot and partition
splits, numpy codes, cupy codes, pandas and cuDF category frames, in-process and on Dask."""
import json

import numpy as np
import pandas as pd
import pytest

import cupy as cp

import dgbdt

SQ = {"objective": "reg:squarederror", "eta": 0.3, "max_depth": 5}


def _data(n=6000, cats=(3, 9, 40), missing=0.08, seed=0):
    """Categorical codes of the given sizes, then two numerical features; a target with an
    effect per category (not monotone in the code)."""
    rng = np.random.default_rng(seed)
    cols = [rng.integers(0, k, n).astype(np.float32) for k in cats]
    cols += [rng.standard_normal(n).astype(np.float32) for _ in range(2)]
    X = np.stack(cols, 1)
    X[rng.random(X.shape) < missing] = np.nan
    y = np.zeros(n)
    for j, k in enumerate(cats):
        effect = rng.normal(size=k + 1)
        y += effect[np.nan_to_num(X[:, j], nan=k).astype(int)]
    Z = np.nan_to_num(X[:, len(cats):])
    y += 0.5 * Z[:, 0] - 0.3 * Z[:, 1] + rng.normal(scale=0.3, size=n)
    return X, y, ["c"] * len(cats) + ["q", "q"]


def _set_sizes(b):
    return [len(c) for t in b.trees for c in (t.categories or {}).values()]


@pytest.mark.parametrize("extra", [
    {"max_cat_to_onehot": 64},                               # every feature one-hot
    {"max_cat_to_onehot": 1},                                # every feature partitioned
    {},                                                      # 3 one-hot, 9 and 40 partitioned
    {"max_cat_threshold": 3, "lambda": 2.0, "gamma": 0.2, "min_child_weight": 3.0},
], ids=["onehot", "partition", "mixed", "threshold"])
def test_gpu_model_is_the_cpu_model(extra):
    X, y, types = _data()
    p = {**SQ, **extra}
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y, feature_types=types), 8, verbose_eval=False)
    sizes = _set_sizes(cpu)
    assert sizes, "the test needs categorical splits"
    if extra.get("max_cat_to_onehot") == 64:
        assert set(sizes) == {1}
    if extra.get("max_cat_to_onehot") == 1:
        assert max(sizes) > 1
    host_rows = dgbdt.train({**p, "device": "cuda"},
                            dgbdt.Dataset(X, label=y, feature_types=types), 8,
                            verbose_eval=False)
    dev_rows = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y),
                                            feature_types=types), 8, verbose_eval=False)
    assert host_rows.save_raw() == cpu.save_raw()
    assert dev_rows.save_raw() == cpu.save_raw()


@pytest.mark.parametrize("smem", ["600", "40"])
def test_features_too_wide_for_shared_memory(monkeypatch, smem):
    """A feature whose bins exceed the shared-memory histogram (thousands of categories) is
    summed in global memory, the others still in shared-memory groups (600 bytes: the 4 and
    10 slot features in groups, the 41 slot and numerical ones global; 40: all global):
    the CPU's model."""
    monkeypatch.setenv("DGBDT_HIST_SMEM", smem)
    X, y, types = _data(n=5000, seed=9)
    p = {**SQ, "max_cat_to_onehot": 4}
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y, feature_types=types), 6, verbose_eval=False)
    gpu = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y),
                                       feature_types=types), 6, verbose_eval=False)
    assert _set_sizes(cpu) and gpu.save_raw() == cpu.save_raw()


def test_logistic_with_weights_pages_and_eval_on_the_gpu():
    """binary:logistic on several pages with weights: the training rows' margins, which
    reach the rows through the GPU's partition of them (the category sets applied by
    partition_scatter_cat), score as the model's own traversal of those rows predicts; and
    the GPU's log loss is the CPU's to 1e-5 (the backends' logistic gradients may differ in a
    last bit, so the trees are not asserted equal here: squared error's are, above)."""
    X, y, types = _data(n=9000, seed=3)
    lab = (y > np.median(y)).astype(np.float64)
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    p = {"objective": "binary:logistic", "max_depth": 6, "max_cat_to_onehot": 4,
         "eval_metric": ["logloss"]}
    hist_c, hist_g = {}, {}
    dc = dgbdt.Dataset(X, label=lab, weight=w, feature_types=types, page_rows=4000)
    cpu = dgbdt.train(p, dc, 10, evals=[(dc, "train")], evals_result=hist_c,
                      verbose_eval=False)
    dg = dgbdt.Dataset(cp.asarray(X), label=cp.asarray(lab), weight=cp.asarray(w),
                       feature_types=types, page_rows=4000)
    gpu = dgbdt.train(p, dg, 10, evals=[(dg, "train")], evals_result=hist_g,
                      verbose_eval=False)
    assert _set_sizes(gpu)
    prob = np.clip(cp.asnumpy(gpu.predict(cp.asarray(X))), 1e-16, 1 - 1e-16)
    loss = -np.sum(w * (lab * np.log(prob) + (1 - lab) * np.log(1 - prob))) / w.sum()
    np.testing.assert_allclose(hist_g["train"]["logloss"][-1], loss, rtol=1e-5)
    np.testing.assert_allclose(hist_g["train"]["logloss"], hist_c["train"]["logloss"],
                               rtol=1e-5)
    np.testing.assert_allclose(cp.asnumpy(gpu.predict(cp.asarray(X))), cpu.predict(X),
                               rtol=1e-5, atol=1e-7)


def test_host_setting_and_lossguide_with_categories(monkeypatch):
    """Loss-guided trees (one node a request, carried splits) with categorical sets, and
    interaction constraints across categorical and numerical features: the CPU's model."""
    X, y, types = _data(seed=5)
    p = {**SQ, "grow_policy": "lossguide", "max_leaves": 12, "max_depth": 0,
         "max_cat_to_onehot": 4, "interaction_constraints": [[0, 1, 3], [2, 4]]}
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y, feature_types=types), 6, verbose_eval=False)
    assert _set_sizes(cpu)
    gpu = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y),
                                       feature_types=types), 6, verbose_eval=False)
    assert gpu.save_raw() == cpu.save_raw()
    monkeypatch.setenv("DGBDT_GROWTH", "host")
    mono = {**SQ, "monotone_constraints": [1, 0, -1, 1, 0]}
    cpu = dgbdt.train(mono, dgbdt.Dataset(X, label=y, feature_types=types), 6,
                      verbose_eval=False)
    gpu = dgbdt.train(mono, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y),
                                          feature_types=types), 6, verbose_eval=False)
    assert gpu.save_raw() == cpu.save_raw()


@pytest.mark.parametrize("onehot,threshold,bounded", [
    (4, 64, False), (4, 64, True), (1, 8, False), (1, 300, True), (5000, 64, False),
    (2, 2, False)])
def test_device_search_is_the_cpu_kernel(onehot, threshold, bounded):
    """cuda/categorical.cu + _pick against kernels/cpu_categorical on the same integer
    histograms: every output equal, with empty categories (equal keys, ordered by category as
    the CPU's stable sort), repeated category statistics, thousands of categories, one-hot,
    partitions shorter and longer than max_cat_threshold, and monotone bounds."""
    from dgbdt.kernels import cpu_categorical
    from dgbdt.kernels import gpu_categorical as gc
    from dgbdt.backends.cuda import CudaBackend
    from dgbdt.kernels.launch import kernel
    from dgbdt.tree.split import SplitParams
    rng = np.random.default_rng(onehot * 7 + threshold)
    nbs = np.array([16, 3, 40, 12, 70, 3000])        # features 1, 3, 4, 5 categorical
    features = np.array([1, 3, 4, 5], np.int64)
    hp = np.concatenate([[0], np.cumsum(nbs + 1)]).astype(np.int64)
    m = 37
    hist = np.zeros((m, int(hp[-1]), 2), np.int64)
    hist[..., 0] = rng.integers(-(1 << 21), 1 << 21, hist.shape[:2])
    hist[..., 1] = rng.integers(0, 1 << 21, hist.shape[:2])
    hist[rng.random(hist.shape[:2]) < 0.3] = 0                   # empty categories
    hist[:, hp[5] + 10:hp[5] + 20] = hist[:, hp[5] + 100:hp[5] + 110]   # repeated stats
    totals = hist[:, hp[5]:hp[6]].sum(axis=1)
    mono = (0, 1, 0, -1, 1, -1)
    p = SplitParams(eta=0.3, lam=1.0, alpha=0.0, gamma=0.0, min_child_weight=0.5,
                    max_delta_step=0.0, monotone=mono if bounded else None,
                    max_cat_to_onehot=onehot, max_cat_threshold=threshold)
    inv = 1.0 / (1 << 20)
    lower = rng.uniform(-2, 0, m) if bounded else np.full(m, -np.inf)
    upper = rng.uniform(0, 2, m) if bounded else np.full(m, np.inf)
    width = int(nbs[features].max())
    cpu = cpu_categorical.evaluate_categorical(
        hist, hp, totals, inv, inv, p.lam, p.alpha, p.max_delta_step, p.min_child_weight,
        features, onehot, threshold, width, bounded, np.asarray(mono, np.int8), lower, upper)
    be = CudaBackend.for_ordinal(0)
    gpu = gc.evaluate_categorical(kernel, be.upload, cp.asarray(hist), totals, hp, inv, inv,
                                  p, features, width, (lower, upper) if bounded else None)
    assert (cpu[1] >= 0).sum() > m // 2
    for name, a, b in zip(("gain", "feature", "default_left", "left", "cats"), cpu, gpu):
        np.testing.assert_array_equal(np.asarray(b), a, err_msg=name)


def _frame(n=5000, seed=0, categories=None):
    rng = np.random.default_rng(seed)
    letters = list("abcdefghijkl")
    b = rng.choice(["x", "y", "z"], n).astype(object)
    b[rng.random(n) < 0.1] = None
    df = pd.DataFrame({"a": pd.Categorical(rng.choice(letters, n),
                                           categories=categories or letters),
                       "b": pd.Categorical(b, categories=["x", "y", "z"]),
                       "x": rng.standard_normal(n)})
    effect = dict(zip(letters, rng.normal(size=len(letters))))
    y = df["a"].astype(str).map(effect).to_numpy() + (df["b"] == "y").to_numpy() \
        + 0.2 * df["x"].to_numpy() + rng.normal(scale=0.2, size=n)
    return df, y


def test_pandas_category_frame_on_the_gpu():
    df, y = _frame()
    p = {**SQ, "max_cat_to_onehot": 1}
    cpu = dgbdt.train(p, dgbdt.Dataset(df, label=y, enable_categorical=True), 6,
                      verbose_eval=False)
    gpu = dgbdt.train({**p, "device": "cuda"},
                      dgbdt.Dataset(df, label=y, enable_categorical=True), 6,
                      verbose_eval=False)
    assert _set_sizes(cpu) and gpu.save_raw() == cpu.save_raw()
    assert gpu.categories == cpu.categories


def test_cudf_category_frame(rmm_default):
    """cuDF category columns: their codes stay on the device, their categories go in the
    model; the model is the pandas frame's on the CPU, and a cuDF frame whose categories are
    listed in another order predicts as the pandas one (re-coded by value on the device)."""
    cudf = pytest.importorskip("cudf")
    df, y = _frame(seed=2)
    p = {**SQ, "max_cat_to_onehot": 1}
    cpu = dgbdt.train(p, dgbdt.Dataset(df, label=y, enable_categorical=True), 6,
                      verbose_eval=False)
    g = cudf.from_pandas(df)
    d = dgbdt.Dataset(g, label=cp.asarray(y), enable_categorical=True)
    assert d.on_device and d.feature_types == ["c", "c", "q"]
    gpu = dgbdt.train(p, d, 6, verbose_eval=False)
    assert _set_sizes(cpu) and gpu.save_raw() == cpu.save_raw()
    other = df.assign(a=df["a"].cat.reorder_categories(list("lkjihgfedcba")))
    want = cpu.predict(df)
    got = gpu.predict(cudf.from_pandas(other))
    assert isinstance(got, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-6, atol=1e-6)


def test_device_codes_are_checked():
    X, y, types = _data(n=500)
    X[7, 1] = 2.5
    with pytest.raises(ValueError, match="categorical feature 1: invalid category code 2.5"):
        dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y), feature_types=types)


def test_prediction_of_gpu_rows_equals_the_cpu():
    """A categorical model predicts device rows of codes on the GPU (cuda/predict.cu's
    predict_raw_cat): the CPU's values, leaves included, with XGBoost's rule for codes outside
    a set, negative, non-integer or missing."""
    rng = np.random.default_rng(1)
    X = np.stack([rng.integers(0, 12, 3000), rng.standard_normal(3000)], 1).astype(np.float32)
    y = np.where(np.isin(X[:, 0], [1, 4, 5, 9]), 2.0, -1.0) + X[:, 1]
    b = dgbdt.train({"device": "cpu", "max_depth": 4, "max_cat_to_onehot": 1},
                    dgbdt.Dataset(X, label=y, feature_types=["c", "q"]), 8, verbose_eval=False)
    assert any(t.categories for t in b.trees)
    Z = X[:500].copy()
    Z[:5, 0] = [np.nan, -1.0, 2.5, 40.0, 1e9]                  # missing, outside, not whole
    for kw in ({}, {"pred_leaf": True}, {"output_margin": True}):
        host = b.predict(Z, **kw)
        dev = b.predict(cp.asarray(Z), **kw)
        assert isinstance(dev, cp.ndarray)
        np.testing.assert_array_equal(cp.asnumpy(dev), host)


# -- Dask on one GPU worker ----------------------------------------------------------------


def _json(b):
    return json.dumps(b.to_dict(), sort_keys=True)


@pytest.mark.parametrize("mode", ["nccl", "graph", "task"])
def test_dask_modes_give_the_cpu_model(cuda_client, mode):
    """cupy partitions of codes (feature_types) on a GPU worker, and pandas category
    partitions trained on it (device='cuda'): the in-process CPU model in every mode."""
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    import dgbdt.dask as dgd
    if mode == "nccl":
        from dgbdt.dask.collective import nccl_status
        workers = cuda_client.scheduler_info()["workers"]
        if cuda_client.run(nccl_status) != {w: None for w in workers}:
            pytest.fail("NCCL is not usable on the worker")
    X, y, types = _data(n=5000, seed=7)
    p = {**SQ, "max_cat_to_onehot": 4, "max_depth": 4}
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y, feature_types=types), 5, verbose_eval=False)
    assert _set_sizes(cpu)
    Xd = da.from_array(cp.asarray(X), chunks=(1700, X.shape[1]), asarray=False)
    yd = da.from_array(cp.asarray(y), chunks=1700, asarray=False)
    d = dgd.DaskDataset(cuda_client, Xd, yd, feature_types=types)
    assert d.on_device
    out = dgd.train(cuda_client, p, d, 5, mode=mode, verbose_eval=False)
    assert out["mode"] == mode
    assert _json(out["booster"]) == _json(cpu)
    df, fy = _frame(n=4000, seed=3)
    pc = {**SQ, "max_cat_to_onehot": 1, "max_depth": 4}
    ref = dgbdt.train(pc, dgbdt.Dataset(df, label=fy, enable_categorical=True), 4,
                      verbose_eval=False)
    dfd = dgd.DaskDataset(cuda_client, dd.from_pandas(df, npartitions=3),
                          dd.from_pandas(pd.Series(fy), npartitions=3),
                          enable_categorical=True)
    out = dgd.train(cuda_client, {**pc, "device": "cuda"}, dfd, 4, mode=mode,
                    verbose_eval=False)
    assert _json(out["booster"]) == _json(ref)


@pytest.mark.parametrize("mode", ["nccl", "graph"])
def test_dask_cudf_category_columns(cuda_client, mode):
    """dask_cudf category columns (#17's RAPIDS path): each partition's categories gathered
    as their sorted union, its codes re-coded on the GPU: the CPU model of the pandas frame
    for any partitioning, whether the partitions list the frame's categories (from_cudf of a
    category frame) or only their own (astype("category") per partition); an eval set with
    fewer categories; dgbdt.dask.predict and the estimator from the same frames."""
    dask_cudf = pytest.importorskip("dask_cudf")
    cudf = pytest.importorskip("cudf")
    import dgbdt.dask as dgd
    df, fy = _frame(n=4000, seed=5)
    keep = ~((np.arange(len(df)) < 1500) & (df["a"] == "c")).to_numpy()
    df, fy = df[keep].reset_index(drop=True), fy[keep]
    pc = {**SQ, "max_cat_to_onehot": 1, "max_depth": 4}
    ref = dgbdt.train(pc, dgbdt.Dataset(df, label=fy, enable_categorical=True), 4,
                      verbose_eval=False)
    assert _set_sizes(ref)
    feats = ["a", "b", "x"]
    for parts, per_partition in ((2, False), (5, True)):
        g = cudf.from_pandas(df.assign(y=fy))
        if per_partition:
            g = g.assign(a=g["a"].astype("str"), b=g["b"].astype("str"))   # nulls stay null
        ddf = dask_cudf.from_cudf(g, npartitions=parts)
        if per_partition:
            ddf = ddf.assign(a=ddf["a"].astype("category"), b=ddf["b"].astype("category"))
        d = dgd.DaskDataset(cuda_client, ddf[feats], ddf["y"], enable_categorical=True)
        assert d.on_device and d.feature_types == ["c", "c", "q"]
        assert d.categories[:2] == [list("abcdefghijkl"), ["x", "y", "z"]]
        ev = dask_cudf.from_cudf(g.iloc[:1000], npartitions=2)   # no 'c' in these rows
        if per_partition:
            ev = ev.assign(a=ev["a"].astype("category"), b=ev["b"].astype("category"))
        dv = dgd.DaskDataset(cuda_client, ev[feats], ev["y"], enable_categorical=True)
        out = dgd.train(cuda_client, pc, d, 4, mode=mode, evals=[(dv, "v")],
                        verbose_eval=False)
        assert _json(out["booster"]) == _json(ref), (parts, per_partition)
        want = np.sqrt(np.mean((ref.predict(df.iloc[:1000]) - fy[:1000]) ** 2))
        np.testing.assert_allclose(out["history"]["v"]["rmse"][-1], want, rtol=1e-5)
        pred = dgd.predict(cuda_client, out["booster"], ddf[feats]).compute()
        np.testing.assert_allclose(cp.asnumpy(pred.values), ref.predict(df),
                                   rtol=1e-6, atol=1e-6)
    est = dgd.DaskGBDTRegressor(n_estimators=4, enable_categorical=True, **pc)
    est.client = cuda_client
    est.fit(ddf[feats], ddf["y"], eval_set=[(ev[feats], ev["y"])])
    assert _json(est.get_booster()) == _json(ref)
    with pytest.raises(ValueError, match="pass enable_categorical=True"):
        dgd.DaskDataset(cuda_client, ddf[feats], ddf["y"])
