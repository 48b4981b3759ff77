"""XGBoost's scikit-learn conventions on dgbdt's estimators: tags, doc links, label checks,
the data of a fit (one QuantileDMatrix, XGBoost's input rules) and XGBRanker's ``qid``
column, score and per-query custom metrics."""
import numpy as np
import pytest

import dgbdt.compat.xgboost as xgb
from dgbdt import GBDTClassifier, GBDTRanker, GBDTRegressor

pytest.importorskip("sklearn", minversion="1.6")
pd = pytest.importorskip("pandas")


def test_tags_as_xgboost():
    for est in (xgb.XGBRegressor(), xgb.XGBRFRegressor(), GBDTRegressor()):
        tags = est.__sklearn_tags__()
        assert tags.no_validation and tags.input_tags.allow_nan and tags.input_tags.sparse
        assert not tags.non_deterministic and tags.estimator_type == "regressor"
        assert tags.target_tags.multi_output and tags.target_tags.single_output
        assert est._more_tags()["multioutput"] is True
    for est in (xgb.XGBClassifier(), xgb.XGBRFClassifier(), GBDTClassifier()):
        tags = est.__sklearn_tags__()
        assert tags.classifier_tags.multi_label and tags.no_validation
        assert "multioutput" not in est._more_tags()
    assert "multioutput" not in xgb.XGBRanker()._more_tags()
    assert xgb.XGBRegressor(enable_categorical=True).__sklearn_tags__().input_tags.categorical


def test_doc_link_is_xgboosts_page_for_the_xgboost_names():
    for cls in (xgb.XGBRegressor, xgb.XGBClassifier, xgb.XGBRanker, xgb.XGBRFRegressor,
                xgb.XGBRFClassifier):
        assert cls()._get_doc_link().endswith(f"python_api.html#xgboost.{cls.__name__}")
    assert GBDTRegressor()._get_doc_link() == ""     # dgbdt has no published API site


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_non_finite_labels_refused_with_xgboosts_words(bad):
    X, y = np.random.default_rng(0).random((10, 3)), np.ones(10)
    y[4] = bad
    for est in (xgb.XGBRegressor(n_estimators=2), GBDTRegressor(n_estimators=2)):
        with pytest.raises(ValueError, match=r"contains NaN, infinity or a value too large "
                                             r"\(first at row 4\)"):
            est.fit(X, y)


def test_one_quantile_dmatrix_per_distinct_eval_set(monkeypatch):
    X = np.random.default_rng(1).random((60, 3))
    y = (X[:, 0] > 0.5).astype(int)
    made = []
    init = xgb.QuantileDMatrix.__init__
    monkeypatch.setattr(xgb.QuantileDMatrix, "__init__",
                        lambda self, **kw: made.append(1) or init(self, **kw))
    xgb.XGBClassifier(n_estimators=1).fit(X, y, eval_set=[(X, y)], verbose=False)
    assert len(made) == 1                  # the training rows scored as the eval set
    xgb.XGBClassifier(n_estimators=1).fit(X, y, eval_set=[(X, y.copy())], verbose=False)
    assert len(made) == 3


def test_object_array_categories_and_load_model(tmp_path):
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 3, size=(40, 2))
    y = codes[:, 0] * 1.0 + rng.normal(scale=0.1, size=40)
    reg = xgb.XGBRegressor(n_estimators=3, feature_types=["c", "c"], enable_categorical=True)
    reg.fit(codes.astype(object), y, verbose=False)      # XGBoost reads object as float32
    np.testing.assert_allclose(reg.predict(codes.astype(object)), reg.predict(codes))
    reg.save_model(tmp_path / "m.json")
    loaded = xgb.XGBRegressor()
    loaded.load_model(tmp_path / "m.json")
    assert loaded.feature_types == ["c", "c"] and loaded.enable_categorical is True


def test_apply_names_enable_categorical():
    df = pd.DataFrame({"a": np.arange(6.0), "c": pd.Categorical(list("xyzxyz"))})
    model = xgb.XGBRegressor(n_estimators=2, enable_categorical=True).fit(
        df, np.arange(6.0), verbose=False)
    assert model.apply(df).shape == (6, 2)
    model.set_params(enable_categorical=False)
    with pytest.raises(ValueError, match="`enable_categorical`"):
        model.apply(df)


@pytest.fixture(scope="module")
def ltr():
    rng = np.random.default_rng(3)
    X = rng.random((96, 3))
    qid = np.repeat(np.arange(8), 12)
    y = (X[:, 0] * 3).astype(int)
    return X, y, qid


def test_ranker_qid_column(ltr):
    X, y, qid = ltr
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(qid=qid)
    by_column = xgb.XGBRanker(n_estimators=3).fit(df, y, eval_set=[(df, y)], verbose=False)
    by_arg = xgb.XGBRanker(n_estimators=3).fit(df.drop(columns="qid"), y, qid=qid,
                                                 verbose=False)
    assert by_column.get_booster().save_raw() == by_arg.get_booster().save_raw()
    np.testing.assert_array_equal(by_column.predict(df), by_arg.predict(X))
    assert np.isclose(by_column.score(df, y), by_arg.score(df, y)) and by_arg.score(df, y) > 0.7
    with pytest.raises(ValueError, match="Either `group` or `qid`"):
        by_column.fit(df, y, eval_set=[(X, y)], verbose=False)
    with pytest.raises(ValueError, match="both the special column `qid`"):
        by_column.fit(df, y, qid=qid)
    with pytest.raises(ValueError, match="needs the query of every row"):
        GBDTRanker().fit(X, y)


def test_ranker_custom_metric_is_a_mean_over_queries(ltr):
    X, y, qid = ltr

    def neg_abs(y_true, y_pred):
        return -float(np.abs(y_true - y_pred).max())    # per query: not the overall max

    df = pd.DataFrame(X).assign(qid=qid)
    ranker = xgb.XGBRanker(n_estimators=2, eval_metric=neg_abs,
                           disable_default_eval_metric=True)
    ranker.fit(df, y, eval_set=[(df, y)], verbose=False)
    pred = ranker.predict(df)
    want = np.mean([-np.abs(y[qid == q] - pred[qid == q]).max() for q in range(8)])
    assert np.isclose(ranker.evals_result()["validation_0"]["neg_abs"][-1], want)
    assert np.isclose(ranker.score(df, y), want)
