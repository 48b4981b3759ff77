"""XGBoost's JSON model format: dgbdt models that XGBoost loads and predicts alike, XGBoost
models that dgbdt loads and predicts alike, and clear refusals of what dgbdt cannot read."""
import json

import numpy as np
import pytest

import dgbdt
from dgbdt.tree.model import ModelFormatError

xgb = pytest.importorskip("xgboost")

OBJECTIVES = ["reg:squarederror", "reg:logistic", "binary:logistic", "binary:logitraw",
              "multi:softprob", "multi:softmax"]


def data(objective, n=2500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    Z = np.nan_to_num(X)
    if objective.startswith("multi"):
        y = np.digitize(Z[:, 0] + 0.5 * Z[:, 3], [-0.5, 0.5]).astype(np.float64)
    elif "log" in objective:
        y = (Z[:, 0] + Z[:, 1] * Z[:, 2] + 0.3 * rng.standard_normal(n) > 0).astype(np.float64)
    else:
        y = Z[:, 0] * 2 + np.sin(Z[:, 2])
    return X, y


def params(objective, **kw):
    return {"objective": objective, "max_depth": 4, **kw,
            **({"num_class": 3} if objective.startswith("multi") else {})}


def xgb_from(raw: str):
    b = xgb.Booster()
    b.load_model(bytearray(raw.encode()))
    return b


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_xgboost_loads_the_export_and_predicts_alike(objective, tmp_path):
    X, y = data(objective)
    b = dgbdt.train(params(objective), dgbdt.Dataset(X, y), 25, verbose_eval=False)
    path = tmp_path / "model.json"
    b.save_model(path, format="xgboost")
    xb = xgb.Booster()
    xb.load_model(str(path))
    dm = xgb.DMatrix(X, missing=np.nan)
    # XGBoost sums float32 leaf values in float32 (dgbdt: float64) and reads the intercept as
    # float32: margins agree to that rounding
    np.testing.assert_allclose(xb.predict(dm, output_margin=True),
                               b.predict(X, output_margin=True), rtol=0, atol=1e-5)
    np.testing.assert_allclose(xb.predict(dm), b.predict(X), rtol=0, atol=1e-5)
    assert xb.num_boosted_rounds() == b.num_boosted_rounds() == 25
    assert json.loads(xb.save_config())["learner"]["objective"]["name"] == objective


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_dgbdt_loads_xgboost_models_and_predicts_alike(objective):
    X, y = data(objective, seed=1)
    xb = xgb.train({**params(objective), "tree_method": "hist", "max_depth": 5},
                   xgb.DMatrix(X, y), 15)
    b = dgbdt.load_model(xb.save_raw("json").decode())
    assert b.objective.name == objective and b.num_boosted_rounds() == 15
    dm = xgb.DMatrix(X)
    np.testing.assert_allclose(b.predict(X, output_margin=True),
                               xb.predict(dm, output_margin=True), rtol=0, atol=1e-5)
    np.testing.assert_allclose(b.predict(X), xb.predict(dm), rtol=0, atol=1e-5)
    # and back: the trees survive both conversions unchanged
    again = dgbdt.load_model(b.save_raw("xgboost"))
    assert [t.to_dict() for t in again.trees] == [t.to_dict() for t in b.trees]


def test_feature_names_and_best_iteration_cross_over():
    pd = pytest.importorskip("pandas")
    X, y = data("binary:logistic", seed=2)
    df = pd.DataFrame(X, columns=[f"col_{i}" for i in range(X.shape[1])])
    d = dgbdt.Dataset(df, y)
    dv = dgbdt.Dataset(df.iloc[:500] * 1.2, y[:500])
    b = dgbdt.train({"objective": "binary:logistic", "max_depth": 6, "eta": 1.0}, d, 60,
                    evals=[(dv, "v")], early_stopping_rounds=3, verbose_eval=False)
    assert b.best_iteration is not None
    xb = xgb_from(b.save_raw("xgboost"))
    assert xb.feature_names == list(df.columns)
    assert int(xb.attr("best_iteration")) == b.best_iteration
    np.testing.assert_allclose(xb.predict(xgb.DMatrix(df)), b.predict(df), atol=1e-5)
    back = dgbdt.load_model(b.save_raw("xgboost"))
    assert back.feature_names == list(df.columns) and back.best_iteration == b.best_iteration


def test_what_dgbdt_cannot_read_is_refused_clearly(tmp_path):
    X, y = data("reg:squarederror", n=400)
    dm = xgb.DMatrix(X, y)
    linear = json.loads(xgb.train({"booster": "gblinear"}, dm, 2).save_raw("json"))
    linear["learner"]["gradient_booster"]["name"] = "gbother"     # (gblinear loads: dgbdt.engine.gblinear)
    with pytest.raises(ModelFormatError, match="booster 'gbother'; dgbdt reads 'gbtree'"):
        dgbdt.load_model(linear)
    forest = json.loads(xgb.train({"num_parallel_tree": 3, "subsample": 0.8, "max_depth": 2},
                                  dm, 2).save_raw("json"))
    assert dgbdt.load_model(forest).num_parallel_tree == 3      # a forest reads (test_forest)
    forest["learner"]["gradient_booster"]["model"]["iteration_indptr"] = [0, 2, 6]
    with pytest.raises(ModelFormatError, match="iteration_indptr is not 3 trees a round"):
        dgbdt.load_model(forest)
    quantile = xgb.train({"objective": "survival:aft", "max_depth": 2},
                         xgb.DMatrix(X, label_lower_bound=np.abs(y) + 1,
                                     label_upper_bound=np.abs(y) + 2), 2)
    aft = dgbdt.load_model(quantile.save_raw("json"))      # survival:aft reads (#16)
    np.testing.assert_allclose(aft.predict(X), quantile.predict(xgb.DMatrix(X)), rtol=1e-5)
    path = tmp_path / "model.ubj"
    quantile.save_model(str(path))          # XGBoost's binary UBJSON reads too
    np.testing.assert_allclose(dgbdt.load_model(path).predict(X),
                               quantile.predict(xgb.DMatrix(X)), rtol=1e-5)
    cut = path.read_bytes()[:200]
    with pytest.raises(ModelFormatError, match="not a valid UBJSON model"):
        dgbdt.load_model(cut)
    b = dgbdt.train({"max_depth": 2}, dgbdt.Dataset(X, y), 2, verbose_eval=False)
    with pytest.raises(ValueError, match="format must be 'dgbdt' or 'xgboost'"):
        b.save_raw("ubj")


def test_categorical_xgboost_models_load():
    """#17: XGBoost's categorical splits and its encoder of string and integer categories
    are read: the same predictions from a frame (re-coded by value)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"a": rng.standard_normal(300),
                       "c": pd.Categorical(rng.choice(["x", "y", "z", "w"], 300))})
    y = (df["a"] > 0).astype(float) + (df["c"] == "y")
    xb = xgb.train({"max_depth": 2, "tree_method": "hist", "max_cat_to_onehot": 1},
                   xgb.DMatrix(df, y, enable_categorical=True), 3)
    b = dgbdt.load_model(xb.save_raw("json"))
    assert b.feature_types == ["float", "c"] and b.categories[1] == ["w", "x", "y", "z"]
    np.testing.assert_allclose(b.predict(df), xb.predict(xgb.DMatrix(df, enable_categorical=True)),
                               rtol=1e-6, atol=1e-6)
    for values in ([10, 20, 30], [-4, 7]):               # int64 categories
        df2 = df.assign(c=pd.Categorical(rng.choice(values, 300)))
        xb = xgb.train({"max_depth": 2, "tree_method": "hist"},
                       xgb.DMatrix(df2, y, enable_categorical=True), 2)
        b = dgbdt.load_model(xb.save_raw("json"))
        assert b.categories[1] == values
        shuffled = df2.assign(c=df2["c"].cat.reorder_categories(values[::-1]))
        np.testing.assert_allclose(b.predict(shuffled),
                                   xb.predict(xgb.DMatrix(df2, enable_categorical=True)),
                                   rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("objective", ["count:poisson", "reg:gamma", "reg:tweedie",
                                       "binary:hinge", "reg:pseudohubererror",
                                       "reg:squaredlogerror", "reg:absoluteerror",
                                       "reg:quantileerror", "survival:cox"])
def test_more_objectives_both_ways(tmp_path, objective):
    """#16's objectives: XGBoost loads the exported model (its objective section, base_score
    through the objective's link) and predicts what dgbdt does; the file loads back."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((1500, 4)).astype(np.float32)
    y = {"count:poisson": rng.poisson(np.exp(0.3 * X[:, 0])).astype(float),
         "reg:tweedie": rng.poisson(1.0, 1500).astype(float),
         "reg:gamma": rng.gamma(2.0, 1.0, 1500),
         "binary:hinge": (X[:, 0] > 0).astype(float),
         "reg:pseudohubererror": 3 * X[:, 0],
         "reg:squaredlogerror": np.exp(0.3 * X[:, 0]),
         "reg:absoluteerror": 3 * X[:, 0] + rng.standard_t(3, 1500),
         "reg:quantileerror": 3 * X[:, 0] + rng.standard_t(3, 1500),
         "survival:cox": np.where(rng.random(1500) < 0.3, -1, 1)
         * rng.exponential(np.exp(-0.5 * X[:, 0]))}[objective]
    b = dgbdt.train({"objective": objective, "eval_metric": "rmse"}, dgbdt.Dataset(X, label=y),
                    5, verbose_eval=False)
    path = str(tmp_path / "m.json")
    b.save_model(path, format="xgboost")
    ours = b.predict(X)
    theirs = xgb.Booster(model_file=path).predict(xgb.DMatrix(X))
    np.testing.assert_allclose(theirs, ours, rtol=1e-6, atol=1e-6 * np.abs(ours).max())
    np.testing.assert_allclose(dgbdt.load_model(path).predict(X), ours, rtol=1e-6,
                               atol=1e-6 * np.abs(ours).max())    # (base_score as float32)


def test_the_intercept_crosses_xgboosts_format_exactly():
    """XGBoost keeps the intercept as a float32 base_score; dgbdt writes its exact margins as
    an attribute beside it and reads them back while they still are that base_score, so a
    model round-trips through XGBoost's JSON and UBJSON with the same predictions. A file
    whose base_score was changed since falls back to the base_score."""
    from dgbdt.model.xgboost_format import EXACT_MARGIN
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 4)).astype(np.float32)
    y = (X[:, 0] + 0.3 * rng.standard_normal(400) > 0.2).astype(np.float64)
    b = dgbdt.train({"objective": "binary:logistic"}, dgbdt.Dataset(X, label=y), 4,
                    verbose_eval=False)
    doc = json.loads(b.save_raw("xgboost"))
    assert EXACT_MARGIN in doc["learner"]["attributes"]
    back = dgbdt.load_model(doc)
    np.testing.assert_array_equal(back.base_margin, b.base_margin)
    np.testing.assert_array_equal(back.predict(X), b.predict(X))
    assert EXACT_MARGIN not in back.attributes()
    doc["learner"]["learner_model_param"]["base_score"] = "[3E-1]"      # edited since
    edited = dgbdt.load_model(doc)
    assert abs(edited.base_margin[0] - np.log(0.3 / 0.7)) < 1e-6
