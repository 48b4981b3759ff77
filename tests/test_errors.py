"""Bad input gets a clear, specific error, and leaves nothing half-changed."""
import json

import numpy as np
import pandas as pd
import pytest

import dgbdt
from dgbdt import ModelFormatError, ParameterError


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float64)
    return X, y


@pytest.fixture(scope="module")
def booster(data):
    X, y = data
    return dgbdt.train({"objective": "binary:logistic"}, dgbdt.Dataset(X, label=y), 3,
                       verbose_eval=False)


def test_nan_label(data):
    X, y = data
    y = y.copy()
    y[7] = np.nan
    with pytest.raises(ValueError, match=r"label contains NaN or infinite values \(first at row 7\)"):
        dgbdt.Dataset(X, label=y)


def test_inf_label(data):
    X, y = data
    y = y.copy()
    y[3] = np.inf
    with pytest.raises(ValueError, match="label contains NaN or infinite"):
        dgbdt.Dataset(X, label=y)


def test_label_length_mismatch(data):
    X, y = data
    with pytest.raises(ValueError, match="label has 299 entries but data has 300 rows"):
        dgbdt.Dataset(X, label=y[:-1])


def test_weight_length_mismatch(data):
    X, y = data
    with pytest.raises(ValueError, match="weight has 10 entries but data has 300 rows"):
        dgbdt.Dataset(X, label=y, weight=np.ones(10))


def test_negative_weight(data):
    X, y = data
    w = np.ones(len(y))
    w[5] = -1
    with pytest.raises(ValueError, match="weight must be >= 0; row 5"):
        dgbdt.Dataset(X, label=y, weight=w)


def test_all_zero_weights(data):
    X, y = data
    with pytest.raises(ValueError, match="all sample weights are zero"):
        dgbdt.Dataset(X, label=y, weight=np.zeros(len(y)))


def test_non_numeric_columns():
    df = pd.DataFrame({"a": [1.0, 2.0], "city": ["x", "y"], "b": [1, 2]})
    with pytest.raises(TypeError, match=r"non-numeric columns: 'city' \(.*Convert them to numbers"):
        dgbdt.Dataset(df)


def test_categorical_column_explained():
    """As XGBoost: a category column needs enable_categorical=True (tests/test_categorical)."""
    df = pd.DataFrame({"a": [1.0, 2.0], "c": pd.Categorical(["u", "v"])})
    with pytest.raises(ValueError, match=r"category columns \('c'\): pass "
                                         r"enable_categorical=True"):
        dgbdt.Dataset(df)


def test_string_array():
    with pytest.raises(TypeError, match="data must hold numbers"):
        dgbdt.Dataset(np.array([["a", "b"], ["c", "d"]]))


@pytest.mark.parametrize("shape", [(0, 3), (5, 0)])
def test_empty_data(shape):
    with pytest.raises(ValueError, match="data is empty"):
        dgbdt.Dataset(np.zeros(shape))


def test_one_dimensional_data():
    with pytest.raises(ValueError, match=r"must be 2-D.*reshape\(-1, 1\)"):
        dgbdt.Dataset(np.zeros(5))


def test_infinite_feature():
    X = np.zeros((4, 2))
    X[2, 1] = -np.inf
    with pytest.raises(ValueError, match="infinite values \\(first at row 2, feature 1\\)"):
        dgbdt.Dataset(X)


def test_labels_outside_num_class(data):
    X, _ = data
    y = np.zeros(len(X))
    y[4] = 3
    with pytest.raises(ValueError, match=r"label must be an integer in \[0, num_class\)"):
        dgbdt.train({"objective": "multi:softprob", "num_class": 3},
                    dgbdt.Dataset(X, label=y), 1, verbose_eval=False)


def test_logistic_labels_outside_unit_interval(data):
    X, y = data
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        dgbdt.train({"objective": "binary:logistic"}, dgbdt.Dataset(X, label=y * 2), 1,
                    verbose_eval=False)


def test_predict_wrong_feature_count(booster, data):
    X, _ = data
    with pytest.raises(ValueError, match="data has 3 features but the model was trained on 4"):
        booster.predict(X[:, :3])


def test_predict_other_feature_names(data):
    X, y = data
    df = pd.DataFrame(X, columns=list("abcd"))
    b = dgbdt.train({}, dgbdt.Dataset(df, label=y), 1, verbose_eval=False)
    with pytest.raises(ValueError, match="feature names differ from the training.s: missing .+c.+, not in the training .+z"):
        b.predict(df.rename(columns={"c": "z"}))


def test_unknown_parameter(data):
    X, y = data
    with pytest.raises(ParameterError, match="Did you mean 'max_depth'"):
        dgbdt.train({"max_dpeth": 3}, dgbdt.Dataset(X, label=y), 1)


@pytest.mark.parametrize("params,match", [
    ({"max_depth": -1}, "max_depth"),
    ({"eta": -0.1}, "eta must be >= 0"),
    ({"learning_rate": -0.5}, "eta must be >= 0"),
    ({"objective": "binary:logistc"}, "binary:logistic"),
])
def test_invalid_parameter_values(data, params, match):
    X, y = data
    with pytest.raises(ParameterError, match=match):
        dgbdt.train(params, dgbdt.Dataset(X, label=y), 1)


def test_missing_label(data):
    X, _ = data
    with pytest.raises(ValueError, match="dtrain has no label"):
        dgbdt.train({}, dgbdt.Dataset(X), 1)


def test_not_a_dataset(data):
    X, y = data
    with pytest.raises(TypeError, match=r"wrap arrays with dgbdt.Dataset"):
        dgbdt.train({}, X, 1)


def test_eval_set_feature_mismatch(data):
    X, y = data
    with pytest.raises(ValueError, match="eval set 'v' has 3 features; dtrain has 4"):
        dgbdt.train({}, dgbdt.Dataset(X, label=y), 1,
                    evals=[(dgbdt.Dataset(X[:, :3], label=y), "v")])


def test_early_stopping_without_evals(data):
    X, y = data
    with pytest.raises(ValueError, match="early_stopping_rounds needs at least one"):
        dgbdt.train({}, dgbdt.Dataset(X, label=y), 5, early_stopping_rounds=2)


def test_max_bin_conflict(data):
    X, y = data
    with pytest.raises(ValueError, match="max_bin=16 but the training parameters say max_bin=32"):
        dgbdt.train({"max_bin": 32}, dgbdt.Dataset(X, label=y, max_bin=16), 1)


def test_cuda_device_without_gpu(data, monkeypatch):
    """device='cuda' where no GPU is usable: a clear error naming the fix, before any work."""
    import dgbdt.backends.device
    monkeypatch.setattr(dgbdt.backends.device, "cuda_available", lambda: False)
    X, y = data
    with pytest.raises(RuntimeError, match="needs a CUDA GPU.*device='cpu'"):
        dgbdt.train({"device": "cuda"}, dgbdt.Dataset(X, label=y), 1)


def test_truncated_model_file(booster, tmp_path):
    path = tmp_path / "m.json"
    booster.save_model(path)
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(ModelFormatError, match="not valid JSON.*truncated"):
        dgbdt.load_model(path)


@pytest.mark.parametrize("edit,match", [
    (lambda m: m.update(version=99), "unsupported dgbdt model version 99"),
    (lambda m: m.update(format="xgboost"), "not a dgbdt model"),
    (lambda m: m["trees"][0]["left_children"].pop(), "entries, expected"),
    (lambda m: m["trees"][0]["left_children"].__setitem__(0, 999), "out of range"),
    (lambda m: m["trees"][0]["split_indices"].__setitem__(0, 17), "split feature is outside"),
    (lambda m: m["learner"].pop("objective"), "missing field 'objective'"),
    (lambda m: m["learner"].update(base_margin=[0.0, 1.0]), "base_margin must be 1"),
    (lambda m: m["tree_class"].pop(), "tree_class"),
])
def test_edited_model_rejected(booster, edit, match):
    model = json.loads(booster.save_raw())
    edit(model)
    with pytest.raises(ModelFormatError, match=match):
        dgbdt.load_model(json.dumps(model))


def test_failed_training_leaves_dataset_usable(data):
    X, y = data
    d = dgbdt.Dataset(X, label=y)
    with pytest.raises(ParameterError):
        dgbdt.train({"eta": -1}, d, 1)
    b = dgbdt.train({"objective": "binary:logistic"}, d, 2, verbose_eval=False)
    assert b.num_boosted_rounds() == 2


def test_a_finite_value_beyond_float32_is_not_called_infinite():
    """1e308 is finite: it was reported as an infinite value (features are float32)."""
    X = np.zeros((10, 3))
    X[4, 1] = 1e308
    for data in (X, pd.DataFrame(X, columns=list("abc"))):
        with pytest.raises(ValueError, match=r"holds 1e\+308 at row 4, feature (1|b): beyond "
                                             r"the float32 range"):
            dgbdt.Dataset(data, label=np.zeros(10))
    X[4, 1] = np.inf
    with pytest.raises(ValueError, match="contains infinite values"):
        dgbdt.Dataset(X, label=np.zeros(10))


def test_predict_on_one_row_gives_both_reshapes(booster, data):
    X, _ = data
    with pytest.raises(ValueError, match=r"one row: X.reshape\(1, -1\); one feature: "
                                         r"X.reshape\(-1, 1\)"):
        booster.predict(X[0])
