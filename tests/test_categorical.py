"""#17 native categorical features on the CPU (dgbdt.data.categorical, kernels/cpu_categorical).

Parity: on numerical features with fewer distinct values than max_bin, and categorical ones
(their bins are their codes in both libraries), XGBoost's trees and dgbdt's must be the same:
structure, features, numerical thresholds, default directions, category sets, leaf values.
Then: pandas category input (re-coded by value at prediction, as XGBoost 3), the model file,
Dask byte-identical to in-process for every mode and partitioning, and the errors.
"""
import json

import numpy as np
import pandas as pd
import pytest

import dgbdt

xgb = pytest.importorskip("xgboost")


def xgb_trees(bst):
    return json.loads(bst.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]


def assert_same_trees(booster, bst, rtol=1e-5):
    """Same structure, features, default directions, float32 thresholds of numerical splits,
    category sets of categorical ones, leaf values within rtol of the tree's largest leaf."""
    theirs = xgb_trees(bst)
    assert len(booster.trees) == len(theirs)
    for i, (a, b) in enumerate(zip(booster.trees, theirs)):
        where = f"tree {i}"
        np.testing.assert_array_equal(a.left, b["left_children"], err_msg=where)
        np.testing.assert_array_equal(a.right, b["right_children"], err_msg=where)
        inner = ~a.is_leaf()
        np.testing.assert_array_equal(a.feature[inner], np.array(b["split_indices"])[inner],
                                      err_msg=where)
        np.testing.assert_array_equal(a.default_left[inner],
                                      np.array(b["default_left"], dtype=bool)[inner],
                                      err_msg=where)
        split_type = np.array(b.get("split_type") or [0] * a.n_nodes)
        theirs_cats = {n: b["categories"][s:s + k] for n, s, k in zip(
            b["categories_nodes"], b["categories_segments"], b["categories_sizes"])}
        ours = {n: list(c) for n, c in (a.categories or {}).items()}
        assert ours == theirs_cats, where
        numeric = inner & (split_type == 0)
        np.testing.assert_array_equal(
            a.threshold[numeric], np.array(b["split_conditions"], np.float32)[numeric],
            err_msg=where)
        leaves = np.array(b["split_conditions"], np.float32)[~inner]
        np.testing.assert_allclose(a.threshold[~inner], leaves, rtol=rtol,
                                   atol=rtol * np.abs(leaves).max(), err_msg=where)
        np.testing.assert_allclose(a.sum_hessian, b["sum_hessian"], rtol=1e-5, err_msg=where)


def cat_data(n=3000, cats=(3, 9, 24), missing=0.0, seed=0):
    """Categorical features of the given sizes (codes) then two numerical features of 12
    levels; a signal with an effect per category, not monotone in the code."""
    rng = np.random.default_rng(seed)
    cols = [rng.integers(0, k, n).astype(np.float32) for k in cats]
    cols += [rng.integers(0, 12, n).astype(np.float32) * 0.5 - 2.0 for _ in range(2)]
    X = np.stack(cols, axis=1)
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    signal = np.zeros(n)
    for j, k in enumerate(cats):
        effect = rng.normal(size=k + 1)
        code = np.nan_to_num(X[:, j], nan=k).astype(int)
        signal += effect[code]
    Z = np.nan_to_num(X[:, len(cats):], nan=0.7)
    signal += 0.5 * Z[:, 0] - 0.3 * Z[:, 1]
    types = ["c"] * len(cats) + ["q", "q"]
    return X, signal, types, rng


def fit_both(params, X, y, types, rounds, weight=None):
    # one thread each: the machine running the suite is shared, and XGBoost's OpenMP threads
    # spinning after its training slow numba's parallel kernels down 50x on 2 busy cores
    params = {**params, "nthread": 1}
    y = np.asarray(y, dtype=np.float32)     # XGBoost keeps labels in float32: same inputs
    booster = dgbdt.train(params, dgbdt.Dataset(X, label=y, weight=weight,
                                                feature_types=types), rounds,
                          verbose_eval=False)
    bst = xgb.train({**params, "tree_method": "hist"},
                    xgb.DMatrix(X, label=y, weight=weight, feature_types=types,
                                enable_categorical=True), rounds)
    return booster, bst


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic"])
@pytest.mark.parametrize("extra", [
    {},                                         # 3 categories one-hot, 9 and 24 partitioned
    {"max_cat_to_onehot": 1},                   # all partition-based
    {"max_cat_to_onehot": 32},                  # all one-hot
    {"max_cat_threshold": 3, "lambda": 2.0, "gamma": 0.3, "min_child_weight": 3.0},
    {"alpha": 0.5, "max_delta_step": 0.8},
    {"monotone_constraints": "(0,0,0,1,-1)"},   # numerical features constrained
    {"monotone_constraints": "(1,0,-1,1,0)", "max_cat_to_onehot": 5},  # categorical too
])
@pytest.mark.slow  # XGBoost trains every case
def test_same_trees_as_xgboost(objective, extra):
    X, signal, types, rng = cat_data(missing=0.1)
    y = signal + rng.normal(scale=0.5, size=len(signal))
    y = y if objective.startswith("reg") else (y > np.median(y)).astype(float)
    w = rng.uniform(0.3, 2.0, size=len(y))
    params = {"objective": objective, "eta": 0.3, "max_depth": 4, **extra}
    booster, bst = fit_both(params, X, y, types, 5, weight=w)
    assert any(t.categories for t in booster.trees)
    assert_same_trees(booster, bst)
    np.testing.assert_allclose(booster.predict(X), bst.predict(xgb.DMatrix(
        X, feature_types=types, enable_categorical=True)), rtol=1e-5, atol=1e-6)


def test_multiclass_same_trees():
    X, signal, types, rng = cat_data(seed=4, missing=0.05)
    y = np.digitize(signal, np.quantile(signal, [0.33, 0.66]))
    params = {"objective": "multi:softprob", "num_class": 3, "eta": 0.3, "max_depth": 3}
    booster, bst = fit_both(params, X, y, types, 3)
    assert_same_trees(booster, bst)


def test_lossguide_same_trees():
    X, signal, types, rng = cat_data(seed=5, missing=0.1)
    y = signal + rng.normal(scale=0.5, size=len(signal))
    params = {"eta": 0.3, "grow_policy": "lossguide", "max_leaves": 10, "max_depth": 0,
              "interaction_constraints": "[[0, 1, 3], [2, 4]]"}
    booster, bst = fit_both(params, X, y, types, 4)
    assert_same_trees(booster, bst)


def test_unseen_and_invalid_codes_predict_as_xgboost():
    """A code past a split's set, a negative or huge one goes left (XGBoost's Decision);
    NaN the default way."""
    X, signal, types, rng = cat_data(n=2000, seed=2)
    booster, bst = fit_both({"max_depth": 3, "max_cat_to_onehot": 1}, X, signal, types, 4)
    Q = X[:40].copy()
    Q[:10, 1] = 50.0
    Q[10:20, 1] = -3.0
    Q[20:30, 2] = np.nan
    Q[30:40, 0] = 2.5          # truncated to 2, as XGBoost's cast
    np.testing.assert_allclose(booster.predict(Q), bst.predict(xgb.DMatrix(
        Q, feature_types=types, enable_categorical=True)), rtol=1e-5, atol=1e-6)


def test_native_splits_beat_codes():
    """Category effects that are not monotone in the code: depth-2 trees on the codes as
    numbers need many thresholds to isolate them; one categorical split groups them."""
    rng = np.random.default_rng(7)
    n, k = 6000, 30
    code = rng.integers(0, k, n)
    effect = rng.permutation(np.linspace(-2, 2, k))
    y = effect[code] + rng.normal(scale=0.3, size=n)
    X = code[:, None].astype(np.float32)
    tr, te = slice(0, 4000), slice(4000, None)
    params = {"max_depth": 2, "eta": 0.3, "nthread": 1}

    def rmse(types):
        b = dgbdt.train(params, dgbdt.Dataset(X[tr], label=y[tr], feature_types=types), 10,
                        verbose_eval=False)
        return float(np.sqrt(np.mean((b.predict(X[te]) - y[te]) ** 2)))
    native, codes = rmse(["c"]), rmse(["q"])
    assert native < 0.8 * codes, (native, codes)


def _frame(n=2000, seed=0, categories=None):
    rng = np.random.default_rng(seed)
    letters = list("abcdefghijkl")
    a = rng.choice(letters, n)
    b = rng.choice(["x", "y", "z"], n).astype(object)
    b[rng.random(n) < 0.1] = None
    df = pd.DataFrame({
        "a": pd.Categorical(a, categories=categories or letters),
        "b": pd.Categorical(b, categories=["x", "y", "z"]),
        "x": rng.integers(0, 10, n).astype(float)})
    effect = dict(zip(letters, rng.normal(size=len(letters))))
    y = df["a"].astype(str).map(effect).to_numpy() + (df["b"] == "y") + 0.2 * df["x"] \
        + rng.normal(scale=0.2, size=n)
    return df, y.to_numpy() if hasattr(y, "to_numpy") else y


def test_pandas_frame_as_xgboost_and_codes():
    df, y = _frame()
    y = y.astype(np.float32)
    params = {"max_depth": 3, "eta": 0.3, "nthread": 1}
    b = dgbdt.train(params, dgbdt.Dataset(df, label=y, enable_categorical=True), 4,
                    verbose_eval=False)
    assert b.feature_types == ["c", "c", "q"]
    assert b.categories[0] == list("abcdefghijkl") and b.categories[2] is None
    codes = np.stack([df["a"].cat.codes, df["b"].cat.codes, df["x"]], 1).astype(np.float32)
    codes[codes == -1] = np.nan
    by_codes = dgbdt.train(params, dgbdt.Dataset(codes, label=y,
                                                 feature_types=["c", "c", "q"],
                                                 feature_names=["a", "b", "x"]), 4,
                           verbose_eval=False)
    assert [t.to_dict() for t in b.trees] == [t.to_dict() for t in by_codes.trees]
    bst = xgb.train({**params, "tree_method": "hist"},
                    xgb.DMatrix(df, label=y, enable_categorical=True), 4)
    assert_same_trees(b, bst)
    np.testing.assert_allclose(b.predict(df), bst.predict(xgb.DMatrix(df, enable_categorical=True)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(b.predict(df), b.predict(codes))


def test_prediction_recodes_frames_by_value():
    """A frame listing its categories in another order, or only some of them, predicts by
    value (XGBoost 3 re-codes too); a category the training did not have is an error."""
    df, y = _frame()
    b = dgbdt.train({"max_depth": 3}, dgbdt.Dataset(df, label=y, enable_categorical=True), 4,
                    verbose_eval=False)
    ref = b.predict(df)
    shuffled = df.assign(a=df["a"].cat.reorder_categories(list("lkjihgfedcba")))
    np.testing.assert_array_equal(b.predict(shuffled), ref)
    np.testing.assert_array_equal(
        b.predict(dgbdt.Dataset(shuffled, enable_categorical=True)), ref)
    part = df[df["a"].isin(["c", "d"])].copy()
    part["a"] = part["a"].cat.remove_unused_categories()
    np.testing.assert_array_equal(b.predict(part), ref[df["a"].isin(["c", "d"]).to_numpy()])
    new = df.head(3).assign(a=pd.Categorical(["a", "zz", "b"]))
    with pytest.raises(ValueError, match="'zz' is not among the training data's categories"):
        b.predict(new)


def test_model_round_trip(tmp_path):
    df, y = _frame()
    b = dgbdt.train({"max_depth": 3, "max_cat_to_onehot": 1},
                    dgbdt.Dataset(df, label=y, enable_categorical=True), 3, verbose_eval=False)
    path = tmp_path / "m.json"
    b.save_model(path)
    doc = json.loads(path.read_text())
    assert doc["version"] == 2 and doc["learner"]["feature_types"] == ["c", "c", "q"]
    assert any("categories_nodes" in t for t in doc["trees"])
    back = dgbdt.load_model(path)
    assert back.save_raw() == b.save_raw()
    shuffled = df.assign(a=df["a"].cat.reorder_categories(list("lkjihgfedcba")))
    np.testing.assert_array_equal(back.predict(shuffled), b.predict(df))


def test_xgboost_export_predicts_alike():
    """save_model(format="xgboost"): XGBoost loads the categorical splits and (string
    categories) the encoder, so it re-codes frames by value as dgbdt; from codes too."""
    df, y = _frame()
    b = dgbdt.train({"max_depth": 3, "nthread": 1},
                    dgbdt.Dataset(df, label=y, enable_categorical=True), 4, verbose_eval=False)
    bst = xgb.Booster()
    bst.load_model(bytearray(b.save_raw("xgboost").encode()))
    shuffled = df.assign(a=df["a"].cat.reorder_categories(list("lkjihgfedcba")))
    for frame in (df, shuffled):
        np.testing.assert_allclose(
            bst.predict(xgb.DMatrix(frame, enable_categorical=True)), b.predict(df),
            rtol=1e-6, atol=1e-6)
    assert dgbdt.load_model(b.save_raw("xgboost")).categories == b.categories
    for values in ([7, 3, 11, 5], [-2, 40]):      # integer categories: a typed encoder
        dfn = df.assign(b=pd.Categorical(np.resize(values, len(df))))
        bn = dgbdt.train({"max_depth": 3, "nthread": 1},
                         dgbdt.Dataset(dfn, label=y, enable_categorical=True), 3,
                         verbose_eval=False)
        bst.load_model(bytearray(bn.save_raw("xgboost").encode()))
        reordered = dfn.assign(b=dfn["b"].cat.reorder_categories(
            sorted(values, reverse=True)))
        np.testing.assert_allclose(
            bst.predict(xgb.DMatrix(reordered, enable_categorical=True)), bn.predict(dfn),
            rtol=1e-6, atol=1e-6)
    X, signal, types, _ = cat_data(n=1500)
    bc = dgbdt.train({"max_depth": 3, "nthread": 1},
                     dgbdt.Dataset(X, label=signal, feature_types=types), 3, verbose_eval=False)
    bst.load_model(bytearray(bc.save_raw("xgboost").encode()))
    np.testing.assert_allclose(
        bst.predict(xgb.DMatrix(X, feature_types=types, enable_categorical=True)),
        bc.predict(X), rtol=1e-6, atol=1e-6)


def test_dumps_as_xgboost():
    """Text, JSON and DataFrame dumps show a categorical split as XGBoost's do: its set with
    yes = the right child."""
    df, y = _frame()
    y = y.astype(np.float32)
    params = {"max_depth": 2, "max_cat_to_onehot": 1, "nthread": 1}
    b = dgbdt.train(params, dgbdt.Dataset(df, label=y, enable_categorical=True), 2,
                    verbose_eval=False)
    bst = xgb.train({**params, "tree_method": "hist"},
                    xgb.DMatrix(df, label=y, enable_categorical=True), 2)

    def structure(text):       # leaf values differ in the last float32 digits
        return [line.split("leaf=")[0] for line in text.splitlines()]
    for ours, theirs in zip(b.get_dump(), bst.get_dump()):
        assert structure(ours) == structure(theirs)
    assert "[a:{" in b.get_dump()[0]
    ours = json.loads(b.get_dump(dump_format="json")[0])
    theirs = json.loads(bst.get_dump(dump_format="json")[0])
    assert (ours["split_condition"], ours["yes"], ours["no"]) == \
        (theirs["split_condition"], theirs["yes"], theirs["no"])
    a, t = b.trees_to_dataframe(), bst.trees_to_dataframe()
    assert list(a["Category"].iloc[:1]) == list(t["Category"].iloc[:1])
    assert list(a[["Yes", "No"]].iloc[0]) == list(t[["Yes", "No"]].iloc[0])


@pytest.mark.slow  # XGBoost's SHAP on every case
def test_shap_values_as_xgboost():
    """TreeSHAP walks a categorical split the way prediction does: XGBoost's SHAP values and
    interaction values, rows summing to the margin."""
    X, signal, types, rng = cat_data(n=1500, seed=10, missing=0.1)
    booster, bst = fit_both({"max_depth": 3, "max_cat_to_onehot": 5}, X, signal, types, 3)
    dm = xgb.DMatrix(X[:200], feature_types=types, enable_categorical=True)
    contribs = booster.predict(X[:200], pred_contribs=True)
    np.testing.assert_allclose(contribs, bst.predict(dm, pred_contribs=True), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(contribs.sum(1), booster.predict(X[:200], output_margin=True),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(booster.predict(X[:50], pred_interactions=True),
                               bst.predict(dm, pred_interactions=True)[:50], rtol=1e-4,
                               atol=1e-4)


def test_eval_set_recoded_to_the_training_categories():
    """An eval frame listing its categories in another order scores as the same frame."""
    df, y = _frame(seed=8)
    shuffled = df.assign(a=df["a"].cat.reorder_categories(list("lkjihgfedcba")))
    d = dgbdt.Dataset(df, label=y, enable_categorical=True)
    res = {}
    dgbdt.train({"max_depth": 3, "nthread": 1}, d, 3, verbose_eval=False, evals_result=res,
                evals=[(d, "same"), (dgbdt.Dataset(shuffled, label=y, enable_categorical=True),
                                     "shuffled")])
    assert res["same"] == res["shuffled"]


def test_compat_dmatrix_takes_categories():
    import dgbdt.compat.xgboost as cxgb
    df, y = _frame()
    b = cxgb.train({"max_depth": 3}, cxgb.DMatrix(df, y, enable_categorical=True), 2)
    ref = dgbdt.train({"max_depth": 3}, dgbdt.Dataset(df, label=y, enable_categorical=True), 2,
                      verbose_eval=False)
    got, want = json.loads(b.save_raw("dgbdt")), json.loads(ref.save_raw("dgbdt"))
    # the compat DMatrix names a float column's type as XGBoost does ("float"; dgbdt: "q")
    assert got["learner"].pop("feature_types") == ["c", "c", "float"]
    assert want["learner"].pop("feature_types") == ["c", "c", "q"]
    assert got == want


def test_version_1_models_still_load():
    X, signal, _, _ = cat_data(n=500)
    b = dgbdt.train({"max_depth": 2}, dgbdt.Dataset(X, label=signal), 2, verbose_eval=False)
    doc = json.loads(b.save_raw())
    assert doc["version"] == 2 and "feature_types" not in doc["learner"]
    doc["version"] = 1
    np.testing.assert_array_equal(dgbdt.load_model(doc).predict(X), b.predict(X))


def test_bad_category_fields_fail_to_load():
    X, signal, types, _ = cat_data(n=800)
    b = dgbdt.train({"max_depth": 2}, dgbdt.Dataset(X, label=signal, feature_types=types), 2,
                    verbose_eval=False)
    doc = json.loads(b.save_raw())
    t = next(t for t in doc["trees"] if "categories_nodes" in t)
    t["categories_sizes"][0] = 10 ** 6
    with pytest.raises(dgbdt.ModelFormatError, match="category segment"):
        dgbdt.load_model(doc)


def test_errors():
    df, y = _frame(200)
    with pytest.raises(ValueError, match=r"category columns \('a', 'b'\): pass "
                                         r"enable_categorical=True"):
        dgbdt.Dataset(df, label=y)
    X = np.zeros((10, 3), np.float32)
    with pytest.raises(ValueError, match="feature_types has 2 entries but data has 3"):
        dgbdt.Dataset(X, feature_types=["c", "q"])
    with pytest.raises(ValueError, match=r"unknown type\(s\) \['x'\]"):
        dgbdt.Dataset(X, feature_types=["c", "q", "x"])
    with pytest.raises(ValueError, match="feature 0 is numerical"):
        dgbdt.Dataset(df, feature_types=["q", "c", "q"], enable_categorical=True)
    bad = X.copy()
    bad[3, 0] = -1
    with pytest.raises(ValueError, match="categorical feature 0: invalid category code -1.0"):
        dgbdt.Dataset(bad, feature_types=["c", "q", "q"])
    bad[3, 0] = 1.5
    with pytest.raises(ValueError, match="invalid category code 1.5"):
        dgbdt.Dataset(bad, feature_types=["c", "q", "q"])


def test_gpu_cuts_are_the_cpu_cuts_and_search_values_give_codes():
    """The cuts of a categorical feature no longer depend on the backend asking (a GPU's
    sketch is the CPU's bit for bit, dgbdt.data.sketch_device): here the CPU's, and the values
    quantization searches (the GPU's quantize_pack too) give each code its own bin."""
    from dgbdt.data.quantize import quantize
    X, signal, types, _ = cat_data(n=300)
    d = dgbdt.Dataset(X, label=signal, feature_types=types)
    cuts = d.cuts(256)
    f = int(np.flatnonzero(cuts.categorical)[0])
    codes = cuts.feature(f)
    np.testing.assert_array_equal(codes, np.arange(len(codes), dtype=np.float32))
    q = quantize(np.where(np.arange(X.shape[1]) == f, codes[:, None], 0.0).astype(np.float32),
                 cuts)
    np.testing.assert_array_equal(q[:, f], np.arange(len(codes)))


# -- Dask ----------------------------------------------------------------------------------------
dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")
from dgbdt import dask as dgd  # noqa: E402


@pytest.mark.parametrize("mode", ["graph", "collective"])
@pytest.mark.parametrize("parts", [1, 4])
def test_dask_frames_give_the_in_process_model(client2, mode, parts):
    df, y = _frame(seed=3)
    p = {"max_depth": 3, "max_cat_to_onehot": 5, "subsample": 0.8, "seed": 1}
    ref = dgbdt.train(p, dgbdt.Dataset(df, label=y, enable_categorical=True), 4,
                      verbose_eval=False)
    d = dgd.DaskDataset(client2, dd.from_pandas(df, npartitions=parts),
                        dd.from_pandas(pd.Series(y), npartitions=parts),
                        enable_categorical=True)
    out = dgd.train(client2, p, d, 4, mode=mode, verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()


def test_dask_one_worker_task_mode_and_predict(client1):
    """Partitions whose own dtypes list the categories in other orders (known categories of
    the frame re-code them): the in-process model; dgbdt.dask.predict from frames."""
    df, y = _frame(seed=4)
    ref = dgbdt.train({"max_depth": 3}, dgbdt.Dataset(df, label=y, enable_categorical=True),
                      3, verbose_eval=False)
    ddf = dd.from_pandas(df, npartitions=3)
    d = dgd.DaskDataset(client1, ddf, dd.from_pandas(pd.Series(y), npartitions=3),
                        enable_categorical=True)
    out = dgd.train(client1, {"max_depth": 3}, d, 3, mode="task", verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()
    pred = client1.compute(dgd.predict(client1, out["booster"], ddf)).result()
    np.testing.assert_array_equal(np.asarray(pred), ref.predict(df))
    pred_d = client1.compute(dgd.predict(client1, out["booster"], d)).result()
    np.testing.assert_array_equal(np.asarray(pred_d), ref.predict(df))


def test_dask_arrays_with_feature_types(client2):
    import dask.array as da
    X, signal, types, _ = cat_data(n=2400, seed=6, missing=0.05)
    ref = dgbdt.train({"max_depth": 3}, dgbdt.Dataset(X, label=signal, feature_types=types),
                      3, verbose_eval=False)
    for chunks in (2400, 700):
        d = dgd.DaskDataset(client2, da.from_array(X, chunks=(chunks, 5)),
                            da.from_array(signal, chunks=chunks), feature_types=types)
        out = dgd.train(client2, {"max_depth": 3}, d, 3, verbose_eval=False)
        assert out["booster"].save_raw() == ref.save_raw()


def test_dask_errors(client1):
    df, y = _frame(400)
    ddf = dd.from_pandas(df, npartitions=2)
    dy = dd.from_pandas(pd.Series(y), npartitions=2)
    with pytest.raises(ValueError, match="pass enable_categorical=True"):
        dgd.DaskDataset(client1, ddf, dy)
    d = dgd.DaskDataset(client1, ddf, dy, enable_categorical=True)
    numeric_b = ddf.assign(b=ddf["b"].cat.codes.astype(float))
    dv = dgd.DaskDataset(client1, numeric_b, dy, enable_categorical=True)
    with pytest.raises(ValueError, match="eval set 'v' has other category columns"):
        dgd.train(client1, {}, d, 1, evals=[(dv, "v")], verbose_eval=False)
    # an eval set with a category the training data lacks: refused before training (XGBoost too)
    more = ddf.assign(a=ddf["a"].cat.add_categories(["zz"]))
    dv = dgd.DaskDataset(client1, more, dy, enable_categorical=True)
    with pytest.raises(ValueError, match=r"eval set 'v': column 'a' has categories the "
                                         r"training data lacks \('zz'\)"):
        dgd.train(client1, {}, d, 1, evals=[(dv, "v")], verbose_eval=False)


def _unknown(df, parts):
    """A dask frame whose category columns have unknown categories: each partition's dtype
    lists the values it holds (astype("category") partition by partition)."""
    plain = df.assign(a=df["a"].astype(object), b=df["b"].astype(object))
    ddf = dd.from_pandas(plain, npartitions=parts, sort=False)
    out = ddf.assign(a=ddf["a"].astype("category"), b=ddf["b"].astype("category"))
    assert not out["a"].cat.known
    return out


@pytest.mark.parametrize("mode", ["collective", "graph"])
def test_dask_unknown_categories_are_gathered(client2, mode):
    """Unknown categories (dask_cudf's frames always read this way): the partitions' values
    gathered as their sorted union, every partition re-coded to it: the in-process model of
    the frame with sorted categories, for any partitioning; an eval set whose partitions
    lack some categories is re-coded to the training's."""
    df, y = _frame(n=1500, seed=13)
    # the first rows without 'a' = 'c' and 'b' = 'z': partitions list other categories
    keep = ~((np.arange(len(df)) < 700) & ((df["a"] == "c") | (df["b"] == "z"))).to_numpy()
    df, y = df[keep].reset_index(drop=True), y[keep]
    p = {"max_depth": 3, "max_cat_to_onehot": 5, "eta": 0.5}
    ref = dgbdt.train(p, dgbdt.Dataset(df, label=y, enable_categorical=True), 3,
                      verbose_eval=False)
    for parts in (1, 5):
        ddf = _unknown(df, parts)
        dy = dd.from_pandas(pd.Series(y), npartitions=parts, sort=False)
        d = dgd.DaskDataset(client2, ddf, dy, enable_categorical=True)
        assert d.categories == [list("abcdefghijkl"), ["x", "y", "z"], None]
        assert d.feature_types == ["c", "c", "q"]
        ev = dgd.DaskDataset(client2, _unknown(df.iloc[:400], 3),
                             dd.from_pandas(pd.Series(y[:400]), npartitions=3, sort=False),
                             enable_categorical=True)
        assert ev.categories[0] != d.categories[0]      # 'c' is absent there
        out = dgd.train(client2, p, d, 3, mode=mode, evals=[(ev, "v")], verbose_eval=False)
        res = out["history"]
        assert out["booster"].save_raw() == ref.save_raw()
        want = np.sqrt(np.mean((ref.predict(df.iloc[:400]) - y[:400]) ** 2))
        np.testing.assert_allclose(res["v"]["rmse"][-1], want, rtol=1e-6)
        pred = client2.compute(dgd.predict(client2, out["booster"], ddf)).result()
        np.testing.assert_array_equal(np.asarray(pred), ref.predict(df))


def test_estimators_take_enable_categorical(client1):
    """XGBoost's estimator arguments enable_categorical / feature_types reach the Dataset
    (they are no training parameters); in-process and Dask estimators give train()'s model."""
    df, y = _frame(seed=9)
    ref = dgbdt.train({"max_depth": 3}, dgbdt.Dataset(df, label=y, enable_categorical=True),
                      4, verbose_eval=False)
    est = dgbdt.GBDTRegressor(n_estimators=4, max_depth=3, enable_categorical=True).fit(df, y)
    assert est.get_params()["enable_categorical"] is True
    assert est.get_booster().save_raw() == ref.save_raw()
    np.testing.assert_array_equal(est.predict(df), ref.predict(df))
    dest = dgd.DaskGBDTRegressor(n_estimators=4, max_depth=3, enable_categorical=True)
    dest.client = client1
    dest.fit(dd.from_pandas(df, npartitions=2), dd.from_pandas(pd.Series(y), npartitions=2))
    assert dest.get_booster().save_raw() == ref.save_raw()


def test_save_binary_keeps_categories(tmp_path):
    df, y = _frame(seed=11)
    d = dgbdt.Dataset(df, label=y, enable_categorical=True)
    ref = dgbdt.train({"max_depth": 3}, d, 3, verbose_eval=False)
    d.save_binary(tmp_path / "d.npz")
    back = dgbdt.Dataset.load_binary(tmp_path / "d.npz")
    assert back.feature_types == d.feature_types and back.categories == d.categories
    assert back.cuts(256).equals(d.cuts(256))
    assert dgbdt.train({"max_depth": 3}, back, 3, verbose_eval=False).save_raw() == \
        ref.save_raw()


def test_continued_training_and_cv():
    """xgb_model: rounds added to a categorical model equal one longer training; data with
    its categories in another order is re-coded to the model's (XGBoost's re-coding), data
    with a category the model lacks is refused. dgbdt.cv folds keep the categories."""
    df, y = _frame(seed=12)
    d = dgbdt.Dataset(df, label=y, enable_categorical=True)
    full = dgbdt.train({"max_depth": 3}, d, 4, verbose_eval=False)
    first = dgbdt.train({"max_depth": 3}, d, 2, verbose_eval=False)
    more = dgbdt.train({"max_depth": 3}, d, 2, xgb_model=first, verbose_eval=False)
    assert more.save_raw() == full.save_raw()
    shuffled = df.assign(a=df["a"].cat.reorder_categories(list("lkjihgfedcba")))
    more = dgbdt.train({"max_depth": 3}, dgbdt.Dataset(shuffled, label=y,
                                                       enable_categorical=True),
                       2, xgb_model=first, verbose_eval=False)
    assert more.save_raw() == full.save_raw()      # re-coded to the model's, by value
    renamed = df.assign(a=df["a"].cat.rename_categories(list("abcdefghijkz")))
    with pytest.raises(ValueError, match="not among the training data's categories"):
        dgbdt.train({"max_depth": 3}, dgbdt.Dataset(renamed, label=y, enable_categorical=True),
                    1, xgb_model=first, verbose_eval=False)
    codes = dgbdt.Dataset(d.data, label=y, feature_types=d.feature_types,
                          feature_names=d.feature_names)
    more = dgbdt.train({"max_depth": 3}, codes, 2, xgb_model=first, verbose_eval=False)
    assert more.save_raw() == full.save_raw()      # codes: read as the model's categories
    res = dgbdt.cv({"max_depth": 3, "eval_metric": "rmse"}, d, 3, nfold=3, seed=0)
    assert len(res["test-rmse-mean"]) == 3


def test_batches_and_data_iter():
    """BatchDataset / XGBoost's DataIter: batches with the same categories give the in-memory
    model; batches with other categories are refused."""
    import dgbdt.compat.xgboost as cxgb
    df, y = _frame(seed=13)
    ref = dgbdt.train({"max_depth": 3}, dgbdt.Dataset(df, label=y, enable_categorical=True), 3,
                      verbose_eval=False)
    parts = [(df.iloc[a:a + 700], y[a:a + 700]) for a in range(0, len(df), 700)]

    def batches():
        return [dgbdt.Dataset(X, label=t, enable_categorical=True) for X, t in parts]
    b = dgbdt.train({"max_depth": 3}, dgbdt.BatchDataset(batches), 3, verbose_eval=False)
    assert b.save_raw() == ref.save_raw()

    class It(cxgb.DataIter):
        def __init__(self):
            super().__init__()
            self.i = 0

        def next(self, input_data):
            if self.i == len(parts):
                return False
            input_data(data=parts[self.i][0], label=parts[self.i][1])
            self.i += 1
            return True

        def reset(self):
            self.i = 0
    m = cxgb.train({"max_depth": 3}, cxgb.DMatrix(It(), enable_categorical=True), 3)
    assert m.save_raw("dgbdt") == ref.save_raw("dgbdt")
    flipped = list("lkjihgfedcba")
    other = [(X.assign(a=X["a"].cat.reorder_categories(flipped)) if i == 1 else X, t)
             for i, (X, t) in enumerate(parts)]
    with pytest.raises(ValueError, match="other categories .* in batch 1 than in batch 0"):
        dgbdt.BatchDataset(lambda: [dgbdt.Dataset(X, label=t, enable_categorical=True)
                                    for X, t in other])
