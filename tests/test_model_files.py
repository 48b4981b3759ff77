"""Model files are validated with bounded sizes (issue 44, item 4): a malformed file raises
ModelFormatError naming what is wrong, never a bare ValueError / OverflowError /
RecursionError, and no field makes loading or predicting allocate beyond what the kernels read
(a category code of 2^31 - 1 made predict allocate 2 GiB a node)."""
import json

import numpy as np
import pytest

import dgbdt
from dgbdt import ModelFormatError

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def categorical_model():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.standard_normal(400),
                       "c": pd.Categorical(rng.integers(0, 12, 400).astype(str))})
    y = ((df["c"].cat.codes % 3 == 0) ^ (df["x"] > 0)).astype(float)
    b = dgbdt.train({"objective": "binary:logistic", "max_depth": 3},
                    dgbdt.Dataset(df, label=y, enable_categorical=True), 3, verbose_eval=False)
    return json.loads(b.save_raw()), df


def _first_categorical_tree(doc):
    for t in doc["trees"]:
        if t.get("categories"):
            return t
    raise AssertionError("the model has no categorical split")


@pytest.mark.parametrize("code", [2 ** 24, 2 ** 31 - 1, 2 ** 40])
def test_a_category_code_beyond_the_limit_is_refused(categorical_model, code):
    doc, df = categorical_model
    bad = json.loads(json.dumps(doc))
    t = _first_categorical_tree(bad)
    t["categories"][-1] = code
    with pytest.raises(ModelFormatError, match=rf"'categories' holds the code {code}, beyond"):
        dgbdt.load_model(bad)
    ok = dgbdt.load_model(doc)          # the untouched file still loads and predicts
    assert ok.predict(df).shape == (len(df),)


def test_deep_nesting_is_a_model_format_error():
    text = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ModelFormatError, match="nests its JSON too deeply"):
        dgbdt.load_model(text.replace("[", "{\"a\":[", 1))
    with pytest.raises(ModelFormatError, match="nests its JSON too deeply"):
        dgbdt.load_model(b"{\"a\":" + b"[" * 100_000 + b"]" * 100_000 + b"}")


@pytest.fixture(scope="module")
def xgboost_model():
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 4))
    y = (X[:, 0] > 0).astype(float)
    bst = xgb.train({"objective": "binary:logistic", "max_depth": 2}, xgb.DMatrix(X, label=y), 4)
    return json.loads(bytes(bst.save_raw(raw_format="json")))


def test_xgboost_fields_that_fail_their_conversion_are_model_format_errors(xgboost_model):
    doc = json.loads(json.dumps(xgboost_model))
    doc["learner"]["learner_model_param"]["num_feature"] = "abc"
    with pytest.raises(ModelFormatError, match="XGBoost model: a malformed field"):
        dgbdt.load_model(doc)
    doc = json.loads(json.dumps(xgboost_model))
    doc["learner"]["gradient_booster"]["model"]["tree_info"][0] = "x"
    with pytest.raises(ModelFormatError):
        dgbdt.load_model(doc)
    assert dgbdt.load_model(xgboost_model).num_boosted_rounds() == 4


def test_an_xgboost_best_iteration_beyond_its_rounds_is_refused(xgboost_model, tmp_path):
    doc = json.loads(json.dumps(xgboost_model))
    doc["learner"]["attributes"] = {"best_iteration": "9", "best_score": "0.5"}
    with pytest.raises(ModelFormatError, match="best_iteration 9 is outside the model's 4 "
                                               "rounds"):
        dgbdt.load_model(doc)
    doc["learner"]["attributes"] = {"best_iteration": "2", "best_score": "0.5"}
    b = dgbdt.load_model(doc)
    b.save_model(tmp_path / "m.json")   # what loads saves a file that loads back
    assert dgbdt.load_model(tmp_path / "m.json").best_iteration == 2
