"""dgbdt.compat.xgboost.dask: XGBoost's Dask functions and estimators over dgbdt.dask
(predict's strict shapes, inplace_predict's base_margin, apply, the configuration's nthread,
the data an estimator makes, the global configuration in callbacks, dask.config's keys).
Lazy results are computed through the fixture's client (tests/conftest.py): a bare
``.compute()`` went to whatever client was the default, after other tests another cluster,
which lacks the partitions ("lost dependencies")."""
import json

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
import dask  # noqa: E402

import dgbdt.compat.xgboost as xgb  # noqa: E402
from dgbdt.compat import xgboost_dask as dxgb  # noqa: E402


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.rand(120, 4)
    y = np.floor(rng.rand(120) * 3)
    return X, y, dd.from_array(X, chunksize=40), dd.from_array(y, chunksize=40)


def test_forest_leaves_strict_shape(client2, data):
    """pred_leaf with strict_shape: [n, rounds, K, num_parallel_tree], as the in-process
    Booster's; apply gives the same leaves with known row chunks."""
    X_, _, X, y = data
    cls = dxgb.DaskXGBClassifier(n_estimators=2, num_parallel_tree=2, max_depth=2)
    cls.client = client2
    cls.fit(X, y)
    booster = cls.get_booster()
    leaf = client2.compute(dxgb.predict(client2, booster, X.to_dask_array(), pred_leaf=True,
                                        strict_shape=True, validate_features=False)).result()
    assert leaf.shape == (120, 2, 3, 2)
    np.testing.assert_array_equal(leaf, booster.predict(xgb.DMatrix(X_), pred_leaf=True,
                                                        strict_shape=True,
                                                        validate_features=False))
    applied = cls.apply(X)
    assert not np.isnan(applied.shape[0])
    np.testing.assert_array_equal(client2.compute(applied.reshape(leaf.shape)).result(), leaf)


def test_inplace_predict_base_margin(client2, data):
    _, _, X, y = data
    reg = dxgb.DaskXGBRegressor(n_estimators=2, max_depth=2)
    reg.client = client2
    reg.fit(X, y)
    booster = reg.get_booster()
    inplace = client2.compute(dxgb.inplace_predict(client2, booster, X, base_margin=y)).result()
    copied = dxgb.predict(client2, booster, dxgb.DaskDMatrix(client2, X, base_margin=y))
    np.testing.assert_allclose(inplace, client2.compute(copied).result())
    plain = client2.compute(dxgb.inplace_predict(client2, booster, X)).result()
    assert not np.allclose(inplace, plain)
    with pytest.raises(ValueError, match="predict_type"):
        dxgb.inplace_predict(client2, booster, X, predict_type="leaf")


def test_config_nthread_and_doc_link(client2, data):
    """save_config's nthread is the workers' threads (1 here), as XGBoost's Dask reports."""
    _, _, X, y = data
    out = dxgb.train(client2, {"max_depth": 2}, dxgb.DaskDMatrix(client2, X, y), 2)
    config = json.loads(out["booster"].save_config())
    assert config["learner"]["generic_param"]["nthread"] == "1"
    reg = dxgb.DaskXGBRegressor(n_estimators=2, max_depth=2)
    reg.client = client2
    reg.fit(X, y)
    config = json.loads(reg.get_booster().save_config())
    assert config["learner"]["generic_param"]["nthread"] == "1"
    assert "xgboost.dask.DaskXGBRegressor" in reg._get_doc_link()


def test_estimator_makes_one_matrix_per_collection(client2, data, monkeypatch):
    """An eval set of the training's own objects is the training's matrix (XGBoost's rule)."""
    _, _, X, y = data
    made = []
    init = dxgb.DaskQuantileDMatrix.__init__

    def counted(self, **kwargs):
        made.append(1)
        init(self, **kwargs)
    monkeypatch.setattr(dxgb.DaskQuantileDMatrix, "__init__", counted)
    cls = dxgb.DaskXGBClassifier(n_estimators=1, max_depth=2)
    cls.client = client2
    cls.fit(X, y, eval_set=[(X, y)])
    assert len(made) == 1
    cls.fit(X, y, eval_set=[(X, y.copy())])
    assert len(made) == 3


def test_global_config_in_callbacks(client2, data, tmp_path):
    """Callbacks see the client's xgboost.config settings wherever they run (written to a
    file: the callbacks are copies made for the training's tasks)."""
    _, _, X, y = data
    seen = tmp_path / "seen"

    class Watch(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            with open(seen, "a") as f:
                f.write(str(xgb.config.get_config()["verbosity"]))
            return False
    with xgb.config.config_context(verbosity=0):
        dxgb.train(client2, {"max_depth": 2}, dxgb.DaskDMatrix(client2, X, y), 2,
                   callbacks=[Watch()])
    text = seen.read_text()         # every rank runs the callbacks, as XGBoost's workers
    assert set(text) == {"0"} and len(text) >= 2


def test_unknown_dask_config(client2, data):
    _, _, X, y = data
    dtrain = dxgb.DaskDMatrix(client2, X, y)
    with dask.config.set({"xgboost.foo": "bar"}):
        with pytest.raises(ValueError, match="Unknown configuration: foo"):
            dxgb.train(client2, {}, dtrain, 1)
    with dask.config.set({"xgboost.scheduler_address": "127.0.0.1:1"}):
        with pytest.raises(NotImplementedError, match="scheduler_address"):
            dxgb.train(client2, {}, dtrain, 1)


def test_exact_refuses_categorical_data(client2):
    """XGBoost's rule on Dask too: tree_method="exact" takes no categorical data."""
    import pandas as pd
    df = pd.DataFrame({"x": np.arange(40.0), "c": pd.Categorical(list("ab") * 20)})
    X, y = dd.from_pandas(df, npartitions=2), dd.from_array(np.arange(40.0), chunksize=20)
    reg = dxgb.DaskXGBRegressor(n_estimators=1, tree_method="exact", enable_categorical=True)
    reg.client = client2
    with pytest.raises(ValueError, match="categorical data"):
        reg.fit(X, y)
    m = dxgb.DaskDMatrix(client2, X, y, enable_categorical=True)
    with pytest.raises(ValueError, match="categorical data"):
        dxgb.train(client2, {"tree_method": "exact"}, m, 1)


def test_continuation_recodes_categories(client2):
    """Continuing a model on frames whose categories are ordered otherwise: the rows are
    re-coded to the model's codes by value (the same model as on the model's own order)."""
    import pandas as pd
    rng = np.random.RandomState(0)
    codes = rng.randint(0, 3, 60)
    enc = pd.DataFrame({"x": rng.rand(60),
                        "c": pd.Categorical.from_codes(codes, categories=list("abc"))})
    reenc = enc.assign(c=enc["c"].cat.reorder_categories(list("cab")))
    y = dd.from_array(codes + rng.rand(60), chunksize=30)

    def train(df, model=None):
        m = dxgb.DaskDMatrix(client2, dd.from_pandas(df, npartitions=2), y,
                             enable_categorical=True)
        return dxgb.train(client2, {"max_depth": 2}, m, 2, xgb_model=model)["booster"]
    first = train(enc)
    assert train(reenc, first).save_raw("dgbdt") == train(enc, first).save_raw("dgbdt")
