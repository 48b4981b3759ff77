"""One rule wherever data meets a training's features (dgbdt.data.checks.check_feature_names):
named columns must be the training's names in the training's order; another order, or other
names, is refused with the fix, never trained or predicted on silently. Arrays (no names) are
taken by position. Eval sets in-process and on Dask, predict in-process and on Dask (frames
and DaskDatasets), and the command line's --eval."""
import numpy as np
import pytest

import dgbdt
from dgbdt.data.checks import check_feature_names

pd = pytest.importorskip("pandas")

COLS = ["a", "b", "c", "d"]
PARAMS = {"objective": "binary:logistic", "max_depth": 3}


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((600, 4))
    y = (X[:, 0] - 2 * X[:, 3] > 0).astype(float)
    return pd.DataFrame(X, columns=COLS), y


def test_the_rule():
    check_feature_names(None, COLS, "data")            # arrays: by position
    check_feature_names(COLS, None, "data")            # a model trained on arrays
    check_feature_names(list(COLS), COLS, "data")
    with pytest.raises(ValueError, match=r"another order \(column 0 is 'd' where the "
                                         r"training has 'a'\).*X\[booster.feature_names\]"):
        check_feature_names(["d", "b", "c", "a"], COLS, "data")
    with pytest.raises(ValueError, match=r"missing \['c'\], not in the training \['z'\]"):
        check_feature_names(["a", "b", "z", "d"], COLS, "data")


def test_an_eval_set_in_another_order_is_refused_before_training(frames):
    df, y = frames
    shuffled = df[["d", "c", "b", "a"]]
    calls = []

    class Watch(dgbdt.callback.TrainingCallback):
        def before_training(self, model):
            calls.append("trained")
            return model

    with pytest.raises(ValueError, match="eval set 'valid' has the training's feature names "
                                         "in another order"):
        dgbdt.train(PARAMS, dgbdt.Dataset(df, label=y), 5,
                    evals=[(dgbdt.Dataset(shuffled, label=y), "valid")],
                    callbacks=[Watch()], verbose_eval=False)
    assert calls == []
    with pytest.raises(ValueError, match="eval set 'valid''s feature names differ"):
        dgbdt.train(PARAMS, dgbdt.Dataset(df, label=y), 5,
                    evals=[(dgbdt.Dataset(df.rename(columns={"b": "B"}), label=y), "valid")],
                    verbose_eval=False)
    # in the training's order it trains, and an array eval set is taken by position
    dgbdt.train(PARAMS, dgbdt.Dataset(df, label=y), 2, verbose_eval=False,
                evals=[(dgbdt.Dataset(shuffled[COLS], label=y), "v1"),
                       (dgbdt.Dataset(df.to_numpy(), label=y), "v2")])


def test_the_estimators_eval_set_and_predict_follow_the_rule(frames):
    df, y = frames
    model = dgbdt.GBDTClassifier(n_estimators=3, max_depth=3)
    with pytest.raises(ValueError, match="another order"):
        model.fit(df, y, eval_set=[(df[["b", "a", "c", "d"]], y)])
    model.fit(df, y)
    with pytest.raises(ValueError, match="another order"):
        model.predict_proba(df[["b", "a", "c", "d"]])
    np.testing.assert_array_equal(model.predict_proba(df[COLS]), model.predict_proba(df))


@pytest.mark.dask
def test_dask_eval_sets_and_predict_follow_the_rule(frames, client2):
    dd = pytest.importorskip("dask.dataframe")
    from dgbdt import dask as dgd
    df, y = frames
    ddf = dd.from_pandas(df.assign(y=y), npartitions=2)
    dtrain = dgd.DaskDataset(client2, ddf[COLS], ddf["y"])
    shuffled = dgd.DaskDataset(client2, ddf[["c", "a", "b", "d"]], ddf["y"])
    with pytest.raises(ValueError, match="eval set 'valid' has the training's feature names "
                                         "in another order"):
        dgd.train(client2, PARAMS, dtrain, 3, evals=[(shuffled, "valid")], verbose_eval=False)
    booster = dgd.train(client2, PARAMS, dtrain, 3, verbose_eval=False)["booster"]
    with pytest.raises(ValueError, match="data has the training's feature names in another"):
        dgd.predict(client2, booster, ddf[["c", "a", "b", "d"]])
    with pytest.raises(ValueError, match="data has the training's feature names in another"):
        dgd.predict(client2, booster, shuffled)
    got = client2.compute(dgd.predict(client2, booster, ddf[COLS])).result()
    np.testing.assert_array_equal(np.asarray(got), booster.predict(df))


def test_the_command_lines_eval_file_follows_the_rule(frames, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    from dgbdt.cli import main
    df, y = frames
    df.assign(y=y).to_parquet(tmp_path / "train.parquet")
    df[["d", "a", "b", "c"]].assign(y=y).to_parquet(tmp_path / "valid.parquet")
    args = ["train", str(tmp_path / "train.parquet"), "--label", "y", "--no-dask",
            "--eval", str(tmp_path / "valid.parquet"), "--rounds", "2",
            "--model", str(tmp_path / "m.json")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "eval set 'eval' has the training's feature names in " \
        "another order" in err
    assert not (tmp_path / "m.json").exists()
    with pytest.raises(ValueError, match="another order"):      # --debug: the traceback
        main(["--debug"] + args)
