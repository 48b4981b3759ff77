"""XGBoost's model API on dgbdt Boosters: slicing, attributes, dumps (compared with XGBoost's
dump of the same trees), trees_to_dataframe, strict_shape and inplace_predict."""
import json

import numpy as np
import pytest

import dgbdt


def fitted(objective="binary:logistic", rounds=6, names=False, **extra):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1200, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    Z = np.nan_to_num(X)
    y = (np.digitize(Z[:, 0], [-0.5, 0.5]).astype(float) if objective.startswith("multi")
         else (Z[:, 0] + Z[:, 1] * Z[:, 2] > 0).astype(float))
    kw = {"num_class": 3} if objective.startswith("multi") else {}
    d = dgbdt.Dataset(X, y, feature_names=[f"c{i}" for i in range(5)] if names else None)
    return dgbdt.train({"objective": objective, "max_depth": 4, **kw, **extra}, d, rounds,
                       verbose_eval=False), X


def test_slicing_by_rounds():
    b, X = fitted("multi:softprob", rounds=8)
    part = b[2:5]
    assert part.num_boosted_rounds() == 3 and len(part.trees) == 9
    np.testing.assert_array_equal(part.predict(X, output_margin=True),
                                  b.predict(X, output_margin=True, iteration_range=(2, 5)))
    assert b[3].num_boosted_rounds() == 1 and b[-1].trees[0] is b.trees[-3]
    assert b[::2].num_boosted_rounds() == 4
    with pytest.raises(IndexError, match="outside the model's 8 rounds"):
        b[8]
    with pytest.raises(TypeError, match="sliced by rounds"):
        b["a"]


def test_attributes_are_saved_in_both_formats(tmp_path):
    b, _ = fitted()
    b.set_attr(owner="team-a", note="x")
    b.set_attr(note=None)
    assert b.attr("owner") == "team-a" and b.attr("note") is None
    with pytest.raises(ValueError, match="must be a string"):
        b.set_attr(n=3)
    again = dgbdt.load_model(b.save_raw())
    assert again.attributes() == {"owner": "team-a"}
    assert dgbdt.load_model(b.save_raw("xgboost")).attributes() == {"owner": "team-a"}
    xgb = pytest.importorskip("xgboost")
    xb = xgb.Booster()
    xb.load_model(bytearray(b.save_raw("xgboost").encode()))
    assert xb.attr("owner") == "team-a"
    # a model file without attributes (saved before they existed) still loads
    d = json.loads(b.save_raw())
    del d["learner"]["attributes"]
    assert dgbdt.load_model(d).attributes() == {}


@pytest.mark.parametrize("names", [False, True])
def test_dumps_are_xgboosts(names):
    xgb = pytest.importorskip("xgboost")
    b, _ = fitted(names=names)
    xb = xgb.Booster()
    xb.load_model(bytearray(b.save_raw("xgboost").encode()))
    for stats in (False, True):
        assert b.get_dump(with_stats=stats) == xb.get_dump(with_stats=stats)
        ours = [json.loads(t) for t in b.get_dump(with_stats=stats, dump_format="json")]
        theirs = [json.loads(t) for t in xb.get_dump(with_stats=stats, dump_format="json")]
        f32 = (lambda o: {k: (np.float32(v) if isinstance(v, float) else
                              [f32(c) for c in v] if k == "children" else v)
                          for k, v in o.items()})
        assert [f32(t) for t in ours] == [f32(t) for t in theirs]
    pd = pytest.importorskip("pandas")
    ours, theirs = b.trees_to_dataframe(), xb.trees_to_dataframe()
    assert list(ours.columns) == list(theirs.columns)
    pd.testing.assert_frame_equal(ours.drop(columns=["Category"]),
                                  theirs.drop(columns=["Category"]), check_dtype=False,
                                  rtol=1e-6)
    with pytest.raises(FileNotFoundError):       # a feature map is read now: this one is absent
        b.get_dump(fmap="no-such-featmap.txt")


def test_strict_shape_and_inplace_predict():
    xgb = pytest.importorskip("xgboost")
    for objective in ("binary:logistic", "multi:softprob", "multi:softmax"):
        b, X = fitted(objective, rounds=4)
        xb = xgb.Booster()
        xb.load_model(bytearray(b.save_raw("xgboost").encode()))
        dm = xgb.DMatrix(X)
        for kw in ({}, {"output_margin": True}, {"pred_leaf": True}, {"pred_contribs": True}):
            ours = b.predict(X, strict_shape=True, **kw)
            assert ours.shape == xb.predict(dm, strict_shape=True, **kw).shape, (objective, kw)
        np.testing.assert_allclose(b.inplace_predict(X, predict_type="margin"),
                                   xb.inplace_predict(X, predict_type="margin"), atol=1e-5)
    Xm = np.where(np.isnan(X), -999.0, X)       # missing= marks the sentinel missing
    np.testing.assert_array_equal(b.inplace_predict(Xm, missing=-999.0), b.inplace_predict(X))
