"""Booster: model files, the forms of predict, iteration ranges, importance, base_margin."""
import json
import pathlib

import numpy as np
import pandas as pd
import pytest

import dgbdt

OBJECTIVES = {
    "reg:squarederror": {},
    "reg:logistic": {},
    "binary:logistic": {},
    "binary:logitraw": {},
    "multi:softprob": {"num_class": 3},
    "multi:softmax": {"num_class": 3},
}


def make_data(n=400, f=5, missing=0.1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, f)).astype(np.float32)
    X[:, 3] = np.round(X[:, 3] * 2)
    Z = X.copy()
    X[rng.random(X.shape) < missing] = np.nan
    signal = Z[:, 0] + np.sin(2 * Z[:, 1]) - 0.5 * Z[:, 3]
    return X, signal, rng


def labels(objective, signal, rng):
    if objective.startswith("multi"):
        return np.digitize(signal + rng.normal(scale=0.3, size=signal.shape), [-0.5, 0.7]) \
            .astype(np.float64)
    if objective.startswith("reg:squared"):
        return signal + rng.normal(scale=0.3, size=signal.shape)
    return (rng.random(signal.shape) < 1 / (1 + np.exp(-2 * signal))).astype(np.float64)


def fit(objective, rounds=6, seed=0, **extra):
    X, signal, rng = make_data(seed=seed)
    y = labels(objective, signal, rng)
    params = {"objective": objective, "max_depth": 4, **OBJECTIVES[objective], **extra}
    b = dgbdt.train(params, dgbdt.Dataset(X, label=y), rounds, verbose_eval=False)
    return b, X, y, params


@pytest.fixture(scope="module", params=list(OBJECTIVES))
def trained(request):
    return fit(request.param)


def walk(tree, x):
    """Leaf id of one row in one tree: x < threshold goes left, NaN the default way."""
    node = 0
    while tree.left[node] != -1:
        v = x[tree.feature[node]]
        if np.isnan(v):
            go_left = bool(tree.default_left[node])
        else:
            go_left = np.float32(v) < tree.threshold[node]
        node = tree.left[node] if go_left else tree.right[node]
    return node


def reference_margin(booster, X):
    """[n, K] margins by a pure-Python walk of every tree."""
    out = np.tile(booster.base_margin, (X.shape[0], 1))
    for t, k in zip(booster.trees, booster.tree_class):
        for r in range(X.shape[0]):
            out[r, k] += np.float64(t.threshold[walk(t, X[r])])
    return out


# -- save / load ---------------------------------------------------------------------------
def test_round_trip_file_string_bytes(trained, tmp_path):
    b, X, _, _ = trained
    raw = b.save_raw()
    path = tmp_path / "model.json"
    b.save_model(path)
    loaded = [dgbdt.load_model(path), dgbdt.load_model(str(path)), dgbdt.load_model(raw),
              dgbdt.load_model(raw.encode("utf-8")), dgbdt.load_model(json.loads(raw)),
              dgbdt.Booster.from_dict(json.loads(raw))]
    expect = b.predict(X)
    margin = b.predict(X, output_margin=True)
    for m in loaded:
        assert m.save_raw() == raw
        assert m.num_boosted_rounds() == b.num_boosted_rounds()
        np.testing.assert_array_equal(m.predict(X), expect)
        np.testing.assert_array_equal(m.predict(X, output_margin=True), margin)
        np.testing.assert_array_equal(m.predict(X, pred_leaf=True), b.predict(X, pred_leaf=True))
    assert pathlib.Path(path).read_text(encoding="utf-8") == raw


def test_round_trip_keeps_names_and_best_iteration(tmp_path):
    X, signal, rng = make_data(seed=3)
    y = labels("binary:logistic", signal, rng)
    df = pd.DataFrame(X, columns=[f"col_{i}" for i in range(X.shape[1])])
    b = dgbdt.train({"objective": "binary:logistic", "eta": 1.0}, dgbdt.Dataset(df[:300], label=y[:300]),
                    30, evals=[(dgbdt.Dataset(df[300:], label=y[300:]), "v")],
                    early_stopping_rounds=3, verbose_eval=False)
    assert b.best_iteration is not None
    m = dgbdt.load_model(b.save_raw())
    assert m.feature_names == list(df.columns)
    assert m.best_iteration == b.best_iteration
    assert m.best_score == b.best_score
    assert m.get_score("gain") == b.get_score("gain")
    np.testing.assert_array_equal(m.predict(df), b.predict(df))


def test_float32_values_exact_in_json(trained):
    b, _, _, _ = trained
    m = dgbdt.load_model(b.save_raw())
    for a, c in zip(b.trees, m.trees):
        for attr in ("threshold", "base_weight", "loss_change", "sum_hessian"):
            np.testing.assert_array_equal(getattr(a, attr), getattr(c, attr))
            assert getattr(c, attr).dtype == np.float32


# -- predict forms -------------------------------------------------------------------------
def test_predict_shapes_and_transforms(trained):
    b, X, _, params = trained
    obj = params["objective"]
    n = X.shape[0]
    margin = b.predict(X, output_margin=True)
    pred = b.predict(X)
    if obj.startswith("multi"):
        assert margin.shape == (n, 3)
    else:
        assert margin.shape == (n,)
    np.testing.assert_allclose(
        margin.reshape(n, -1), reference_margin(b, X), rtol=1e-12, atol=1e-12)
    if obj == "multi:softprob":
        assert pred.shape == (n, 3)
        np.testing.assert_allclose(pred.sum(axis=1), 1.0, rtol=1e-12)
        e = np.exp(margin - margin.max(axis=1, keepdims=True))
        np.testing.assert_allclose(pred, e / e.sum(axis=1, keepdims=True), rtol=1e-12)
    elif obj == "multi:softmax":
        assert pred.shape == (n,)
        np.testing.assert_array_equal(pred, np.argmax(margin, axis=1))
        assert set(np.unique(pred)) <= {0.0, 1.0, 2.0}
    elif obj in ("binary:logistic", "reg:logistic"):
        np.testing.assert_allclose(pred, 1 / (1 + np.exp(-margin)), rtol=1e-12)
        assert np.all((pred > 0) & (pred < 1))
    else:  # squarederror, logitraw: prediction is the margin
        np.testing.assert_array_equal(pred, margin)


def test_pred_leaf(trained):
    b, X, _, _ = trained
    leaves = b.predict(X, pred_leaf=True)
    assert leaves.shape == (X.shape[0], len(b.trees))
    assert leaves.dtype == np.int32
    for t, tree in enumerate(b.trees):
        assert np.all(tree.left[leaves[:, t]] == -1)
        for r in range(0, X.shape[0], 37):
            assert leaves[r, t] == walk(tree, X[r])
    # leaf values of the recorded leaves sum to the margin
    K = b.n_outputs
    m = np.tile(b.base_margin, (X.shape[0], 1))
    for t, tree in enumerate(b.trees):
        m[:, b.tree_class[t]] += tree.threshold[leaves[:, t]].astype(np.float64)
    np.testing.assert_allclose(m, b.predict(X, output_margin=True).reshape(-1, K), rtol=1e-12,
                               atol=1e-12)
    # with an iteration range: only the trees of those rounds
    part = b.predict(X, pred_leaf=True, iteration_range=(1, 3))
    np.testing.assert_array_equal(part, leaves[:, K:3 * K])


@pytest.mark.parametrize("objective", ["binary:logistic", "multi:softprob", "reg:squarederror"])
def test_iteration_range_equals_shorter_training(objective):
    full, X, _, _ = fit(objective, rounds=7)
    for k in (1, 3, 6):
        short, _, _, _ = fit(objective, rounds=k)
        np.testing.assert_array_equal(full.predict(X, iteration_range=(0, k)), short.predict(X))
        np.testing.assert_array_equal(full.predict(X, iteration_range=(0, k), output_margin=True),
                                      short.predict(X, output_margin=True))
    np.testing.assert_array_equal(full.predict(X, iteration_range=(0, 0)), full.predict(X))
    np.testing.assert_array_equal(full.predict(X, iteration_range=(0, 7)), full.predict(X))


def test_iteration_range_middle_and_invalid():
    b, X, _, _ = fit("reg:squarederror", rounds=5)
    whole = b.predict(X, output_margin=True)
    head = b.predict(X, output_margin=True, iteration_range=(0, 2))
    tail = b.predict(X, output_margin=True, iteration_range=(2, 5))
    # both ranges start from the base margin
    np.testing.assert_allclose(head + tail - b.base_margin[0], whole, rtol=1e-12, atol=1e-12)
    for bad in [(0, 6), (3, 2), (-1, 2)]:
        with pytest.raises(ValueError, match="iteration_range"):
            b.predict(X, iteration_range=bad)


def test_num_boosted_rounds_and_features():
    b, X, _, _ = fit("multi:softprob", rounds=4)
    assert b.num_boosted_rounds() == 4
    assert len(b.trees) == 12
    assert b.tree_class == [0, 1, 2] * 4
    assert b.num_features() == X.shape[1]


def test_multiclass_margin_layout():
    b, X, _, _ = fit("multi:softprob", rounds=3)
    margin = b.predict(X, output_margin=True)
    for k in range(3):
        col = np.full(X.shape[0], b.base_margin[k])
        out = np.zeros((X.shape[0], 3))
        b.predict_margin_trees(X, [r * 3 + k for r in range(3)], out)
        assert np.all(out[:, [j for j in range(3) if j != k]] == 0)
        np.testing.assert_allclose(margin[:, k], col + out[:, k], rtol=1e-12, atol=1e-12)


# -- importance ----------------------------------------------------------------------------
def brute_force_importance(booster):
    stats = {}
    for t in booster.trees:
        for node in range(t.n_nodes):
            if t.left[node] == -1:
                continue
            f = int(t.feature[node])
            s = stats.setdefault(f, [0, 0.0, 0.0])
            s[0] += 1
            s[1] += float(t.loss_change[node])
            s[2] += float(t.sum_hessian[node])
    return stats


@pytest.mark.parametrize("use_frame", [False, True])
def test_get_score(use_frame):
    X, signal, rng = make_data(seed=5)
    y = labels("binary:logistic", signal, rng)
    names = [f"feat{i}" for i in range(X.shape[1])]
    data = pd.DataFrame(X, columns=names) if use_frame else X
    b = dgbdt.train({"objective": "binary:logistic", "max_depth": 3}, dgbdt.Dataset(data, label=y),
                    5, verbose_eval=False)
    ref = brute_force_importance(b)
    assert ref, "the model should have splits"
    key = (lambda f: names[f]) if use_frame else (lambda f: f"f{f}")
    expect = {
        "weight": {key(f): float(s[0]) for f, s in ref.items()},
        "total_gain": {key(f): s[1] for f, s in ref.items()},
        "total_cover": {key(f): s[2] for f, s in ref.items()},
        "gain": {key(f): s[1] / s[0] for f, s in ref.items()},
        "cover": {key(f): s[2] / s[0] for f, s in ref.items()},
    }
    for kind, want in expect.items():
        got = b.get_score(importance_type=kind)
        assert set(got) == set(want), kind
        for name in want:
            assert got[name] == pytest.approx(want[name], rel=1e-12), (kind, name)
    assert b.get_score() == b.get_score("weight")
    with pytest.raises(ValueError, match="importance_type"):
        b.get_score("split")


def test_get_score_empty_without_splits():
    X, signal, rng = make_data()
    b = dgbdt.train({"min_child_weight": 1e9}, dgbdt.Dataset(X, label=signal), 2,
                    verbose_eval=False)
    assert b.get_score("gain") == {}


# -- base_margin ---------------------------------------------------------------------------
@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic", "multi:softprob"])
def test_predict_base_margin_is_a_shift(objective):
    b, X, _, _ = fit(objective, rounds=3)
    K = b.n_outputs
    rng = np.random.default_rng(1)
    bm = rng.normal(size=(X.shape[0], K))
    with_bm = b.predict(dgbdt.Dataset(X, base_margin=bm if K > 1 else bm[:, 0]),
                        output_margin=True).reshape(-1, K)
    plain = b.predict(X, output_margin=True).reshape(-1, K)
    np.testing.assert_allclose(with_bm - bm, plain - b.base_margin, rtol=1e-12, atol=1e-12)
    # the transform is applied to the shifted margins
    pred = b.predict(dgbdt.Dataset(X, base_margin=bm if K > 1 else bm[:, 0]))
    np.testing.assert_allclose(pred, b.objective.transform(with_bm), rtol=1e-12)


def test_predict_base_margin_wrong_width():
    b, X, _, _ = fit("multi:softprob", rounds=1)
    with pytest.raises(ValueError, match="base_margin has 1 columns"):
        b.predict(dgbdt.Dataset(X, base_margin=np.zeros(X.shape[0])))


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic", "multi:softprob"])
def test_train_with_base_margin_matches_xgboost(objective):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(7)
    n = 1500
    X = (rng.integers(0, 10, size=(n, 4)) * 0.5 - 1.0).astype(np.float32)
    s = X[:, 0] - 0.5 * X[:, 1] + 0.3 * X[:, 2] * X[:, 3]
    K = 3 if objective.startswith("multi") else 1
    if K == 3:
        y = np.digitize(s + rng.normal(scale=0.5, size=n), [-0.5, 0.5]).astype(np.float32)
    elif objective == "binary:logistic":
        y = (rng.random(n) < 1 / (1 + np.exp(-s))).astype(np.float32)
    else:
        y = (s + rng.normal(scale=0.3, size=n)).astype(np.float32)
    bm = (0.4 * X[:, [2]] - 0.2 + 0.1 * np.arange(K)).astype(np.float32)
    if K == 1:
        bm = bm[:, 0]
    params = {"objective": objective, "max_depth": 3, "eta": 0.5}
    if K == 3:
        params["num_class"] = 3
    ours = dgbdt.train(params, dgbdt.Dataset(X, label=y, base_margin=bm), 5, verbose_eval=False)
    theirs = xgb.train({**params, "tree_method": "hist"},
                       xgb.DMatrix(X, label=y, base_margin=bm.reshape(n, K) if K > 1 else bm), 5)
    a = ours.predict(dgbdt.Dataset(X, base_margin=bm), output_margin=True)
    b = theirs.predict(xgb.DMatrix(X, base_margin=bm.reshape(n, K) if K > 1 else bm),
                       output_margin=True)
    np.testing.assert_allclose(a, b, atol=1e-5)
    # the base margin changed the trees: a model trained without it differs
    plain = dgbdt.train(params, dgbdt.Dataset(X, label=y), 5, verbose_eval=False)
    assert plain.save_raw() != ours.save_raw()


# -- input forms ---------------------------------------------------------------------------
def test_predict_dataframe_equals_numpy(trained):
    b, X, _, _ = trained
    df = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    np.testing.assert_array_equal(b.predict(df), b.predict(X))
    np.testing.assert_array_equal(b.predict(dgbdt.Dataset(X)), b.predict(X))
    np.testing.assert_array_equal(b.predict(X.astype(np.float64)), b.predict(X))


def test_predict_dataframe_model_with_names():
    X, signal, rng = make_data(seed=2)
    cols = list("abcde")
    df = pd.DataFrame(X, columns=cols)
    b = dgbdt.train({}, dgbdt.Dataset(df, label=signal), 3, verbose_eval=False)
    np.testing.assert_array_equal(b.predict(df), b.predict(X))
    # nullable dtypes: pd.NA is missing, like NaN
    nullable = df.astype("Float64")
    np.testing.assert_array_equal(b.predict(nullable), b.predict(X))


def test_nan_goes_default_direction():
    X, signal, rng = make_data(n=600, missing=0.25, seed=4)
    y = labels("binary:logistic", signal, rng)
    b = dgbdt.train({"objective": "binary:logistic", "max_depth": 4}, dgbdt.Dataset(X, label=y),
                    4, verbose_eval=False)
    dl = np.concatenate([t.default_left[t.left != -1] for t in b.trees])
    assert dl.any() and not dl.all(), "expected both default directions in the model"
    T = np.full((8, X.shape[1]), np.nan, dtype=np.float32)
    T[1:, :] = X[:7]
    T[2:, 0] = np.nan
    np.testing.assert_allclose(b.predict(T, output_margin=True),
                               reference_margin(b, T)[:, 0], rtol=1e-12, atol=1e-12)
    # an all-missing row follows every tree's default path
    leaves = b.predict(T[:1], pred_leaf=True)[0]
    for t, tree in enumerate(b.trees):
        node = 0
        while tree.left[node] != -1:
            node = tree.left[node] if tree.default_left[node] else tree.right[node]
        assert leaves[t] == node


@pytest.mark.parametrize("objective", ["reg:squarederror", "multi:softprob", "multi:softmax"])
def test_predict_one_row(objective):
    b, X, _, _ = fit(objective, rounds=3)
    one = b.predict(X[5:6])
    full = b.predict(X)
    assert one.shape == (1,) + full.shape[1:]
    np.testing.assert_array_equal(one, full[5:6])
    m = b.predict(X[5:6], output_margin=True)
    assert m.shape == ((1, 3) if objective.startswith("multi") else (1,))
    assert b.predict(X[5:6], pred_leaf=True).shape == (1, len(b.trees))
