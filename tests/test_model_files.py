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


BAD_VALUES = [None, "abc", -1, 2 ** 40, 1e308, float("nan"), [], {}, True, [1, 2], 0, 2 ** 31]


def _paths(d, pre=()):
    """Every field of a model document (lists: their first two items)."""
    if isinstance(d, dict):
        for k, v in d.items():
            yield pre + (k,)
            yield from _paths(v, pre + (k,))
    elif isinstance(d, list):
        for i in range(min(len(d), 2)):
            yield pre + (i,)
            yield from _paths(d[i], pre + (i,))


def _model_docs(xgboost_model):
    rng = np.random.default_rng(0)
    X = rng.random((300, 4))
    X[:10, 1] = np.nan
    docs = {"xgboost": xgboost_model}
    for name, p, y in [("binary", {"objective": "binary:logistic"}, X[:, 0] > 0.5),
                       ("softprob", {"objective": "multi:softprob", "num_class": 3},
                        rng.integers(0, 3, 300))]:
        b = dgbdt.train(p, dgbdt.Dataset(X, y.astype(float)), 3)
        docs[name] = json.loads(b.save_raw())
    return docs, X


@pytest.mark.filterwarnings("ignore::RuntimeWarning")     # casts of the planted values
def test_every_field_malformed_is_a_model_format_error_or_a_model_that_round_trips(
        xgboost_model):
    """Issue 44, item 4: each field of a dgbdt and an XGBoost model file set to each of
    BAD_VALUES (4,900 files): the load raises ModelFormatError, or the model predicts, saves
    and loads back. Before, num_features 2^40 loaded (predict then failed) and an XGBoost
    num_feature of true loaded as 1."""
    docs, X = _model_docs(xgboost_model)
    escaped = []
    for name, doc in docs.items():
        for path in _paths(doc):
            for value in BAD_VALUES:
                d = json.loads(json.dumps(doc))
                t = d
                for k in path[:-1]:
                    t = t[k]
                t[path[-1]] = value
                try:
                    b = dgbdt.load_model(json.loads(json.dumps(d)))
                    b.predict(dgbdt.Dataset(X[:20]))
                    dgbdt.load_model(json.loads(b.save_raw()))
                except ModelFormatError:
                    pass
                except Exception as e:  # noqa: BLE001  (what the test looks for)
                    escaped.append((name, path, value, f"{type(e).__name__}: {e}"[:200]))
    assert not escaped, escaped[:10]
