"""Training callbacks with XGBoost's protocol: the calls and their order, early stopping
(save_best, min_delta, maximize) against XGBoost's, the learning-rate schedule against XGBoost's
trees, checkpoints, in-process and in every Dask mode."""

import numpy as np
import pytest

import dgbdt
from dgbdt.callback import (EarlyStopping, EvaluationMonitor, LearningRateScheduler,
                            TrainingCallback, TrainingCheckPoint)


def data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6)).astype(np.float32)
    Z = np.nan_to_num(X)
    y = (Z[:, 0] + Z[:, 1] * Z[:, 2] + 0.5 * rng.standard_normal(n) > 0).astype(np.float64)
    return X, y


class Recorder(TrainingCallback):
    def __init__(self, stop_at=None):
        self.calls, self.stop_at = [], stop_at

    def before_training(self, model):
        self.calls.append(("before_training", model.num_boosted_rounds()))
        return model

    def before_iteration(self, model, epoch, evals_log):
        self.calls.append(("before", epoch, model.num_boosted_rounds()))
        return False

    def after_iteration(self, model, epoch, evals_log):
        self.calls.append(("after", epoch, model.num_boosted_rounds(),
                           {d: {m: len(v) for m, v in ms.items()} for d, ms in evals_log.items()}))
        return epoch == self.stop_at

    def after_training(self, model):
        self.calls.append(("after_training", model.num_boosted_rounds()))
        return model


def test_the_protocol_in_order_and_a_stop():
    X, y = data()
    rec = Recorder(stop_at=2)
    d = dgbdt.Dataset(X, y)
    b = dgbdt.train({"objective": "binary:logistic", "eval_metric": ["auc"]}, d, 10,
                    evals=[(d, "train")], verbose_eval=False, callbacks=[rec])
    assert b.num_boosted_rounds() == 3
    assert rec.calls == [("before_training", 0),
                         ("before", 0, 0), ("after", 0, 1, {"train": {"auc": 1}}),
                         ("before", 1, 1), ("after", 1, 2, {"train": {"auc": 2}}),
                         ("before", 2, 2), ("after", 2, 3, {"train": {"auc": 3}}),
                         ("after_training", 3)]
    # continued training: epochs count from the model's first round
    rec2 = Recorder()
    dgbdt.train({}, d, 2, verbose_eval=False, callbacks=[rec2], xgb_model=b)
    assert [c[1] for c in rec2.calls if c[0] == "before"] == [3, 4]
    with pytest.raises(TypeError, match="TrainingCallback instances"):
        dgbdt.train({}, d, 2, callbacks=[lambda *a: None], verbose_eval=False)


@pytest.mark.parametrize("maximize, min_delta, save_best", [(None, 0.0, False),
                                                             (None, 0.002, True),
                                                             (False, 0.0, True)])
def test_early_stopping_callback_matches_xgboosts(maximize, min_delta, save_best):
    xgb = pytest.importorskip("xgboost")
    X, y = data(seed=1)
    Xv, yv = data(n=600, seed=2)
    p = {"objective": "binary:logistic", "max_depth": 5, "eta": 0.6,
         "eval_metric": ["logloss", "auc"]}
    d, dv = dgbdt.Dataset(X, y), dgbdt.Dataset(Xv, yv)
    hist = {}
    es = EarlyStopping(3, metric_name="logloss", maximize=maximize, save_best=save_best,
                       min_delta=min_delta)
    b = dgbdt.train(p, d, 60, evals=[(dv, "valid")], evals_result=hist, verbose_eval=False,
                    callbacks=[es])
    # XGBoost's callback on the same score history decides the same rounds
    xes = xgb.callback.EarlyStopping(rounds=3, metric_name="logloss", maximize=maximize,
                                     save_best=False, min_delta=min_delta)
    logloss = hist["valid"]["logloss"]
    stop_x = None

    class Model:          # what XGBoost's callback writes its decision to
        attrs: dict = {}

        def set_attr(self, **kw):
            self.attrs.update(kw)
    model = Model()
    for epoch in range(len(logloss)):
        if xes.after_iteration(model, epoch, {"valid": {"logloss": logloss[:epoch + 1]}}):
            stop_x = epoch
            break
    assert stop_x == len(logloss) - 1 < 59          # stopped early, at the same round
    assert b.best_iteration == int(model.attrs["best_iteration"])
    assert b.best_score == pytest.approx(float(model.attrs["best_score"]))
    assert b.num_boosted_rounds() == (b.best_iteration + 1 if save_best else len(logloss))


def test_learning_rate_schedule_gives_xgboosts_trees():
    """After round e the rate becomes rates[e] (XGBoost's callback): the same leaf values as
    training round by round with those rates."""
    X, y = data(seed=3)
    rates = [0.5, 0.3, 0.1, 0.05, 0.02]
    d = dgbdt.Dataset(X, y)
    b = dgbdt.train({"objective": "binary:logistic", "eta": 0.9, "max_depth": 3}, d, 5,
                    verbose_eval=False, callbacks=[LearningRateScheduler(rates)])
    # the same rounds one at a time, each continuing the last with its rate
    m = dgbdt.train({"objective": "binary:logistic", "eta": 0.9, "max_depth": 3}, d, 1,
                    verbose_eval=False)
    for e in range(4):
        m = dgbdt.train({"eta": rates[e], "max_depth": 3}, d, 1, verbose_eval=False,
                        xgb_model=m)
    assert b.save_raw() == m.save_raw()
    with pytest.raises(ValueError, match="only the learning rate"):
        b.set_param("max_depth", 3)


def test_checkpoints_and_monitor(tmp_path, capsys):
    X, y = data(seed=4)
    d = dgbdt.Dataset(X, y)
    b = dgbdt.train({"objective": "binary:logistic"}, d, 6, evals=[(d, "train")],
                    verbose_eval=False,
                    callbacks=[TrainingCheckPoint(tmp_path, interval=2), EvaluationMonitor(3)])
    saved = sorted(p.name for p in tmp_path.iterdir())
    # XGBoost's rounds and names: epoch `interval`, then every `interval` epochs
    assert saved == ["model_2.json", "model_4.json"]
    assert TrainingCheckPoint.default_format == "json"
    assert dgbdt.load_model(tmp_path / "model_4.json").save_raw() == b[:5].save_raw()
    assert dgbdt.load_model(tmp_path / "model_2.json").num_boosted_rounds() == 3
    lines = capsys.readouterr().out.strip().splitlines()
    assert [ln.split("\t")[0] for ln in lines] == ["[0]", "[3]", "[5]"]   # the last, as XGBoost
    with pytest.raises(ValueError, match="does not pickle"):
        TrainingCheckPoint(tmp_path, as_pickle=True)


@pytest.mark.parametrize("mode, workers", [("task", 1), ("collective", 2), ("graph", 2)])
def test_callbacks_in_every_dask_mode(request, mode, workers):
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    client = request.getfixturevalue(f"client{workers}")
    X, y = data(seed=5)
    Xv, yv = data(n=600, seed=6)
    d = dgd.DaskDataset(client, da.from_array(X, chunks=(500, 6)), da.from_array(y, chunks=500))
    dv = dgd.DaskDataset(client, da.from_array(Xv, chunks=(300, 6)),
                         da.from_array(yv, chunks=300))
    p = {"objective": "binary:logistic", "max_depth": 5, "eta": 0.6, "eval_metric": "logloss"}
    cbs = [EarlyStopping(3, save_best=True), LearningRateScheduler(lambda e: 0.6 / (1 + e))]
    out = dgd.train(client, p, d, 40, evals=[(dv, "valid")], mode=mode, verbose_eval=False,
                    callbacks=cbs)
    ref = dgbdt.train(p, dgbdt.Dataset(X, y), 40, evals=[(dgbdt.Dataset(Xv, yv), "valid")],
                      verbose_eval=False,
                      callbacks=[EarlyStopping(3, save_best=True),
                                 LearningRateScheduler(lambda e: 0.6 / (1 + e))])
    assert out["booster"].save_raw() == ref.save_raw()
    assert out["booster"].best_iteration == ref.best_iteration
    assert out["booster"].num_boosted_rounds() == ref.best_iteration + 1


def test_client_log_shows_lines_in_the_callers_context(monkeypatch):
    """dgbdt.dask.train's lines arrive on the client's event-loop thread, whose tasks carry the
    context of whatever started the Client; they are shown in the context of the training's
    caller (in Jupyter: under the cell that trains, not the one that made the Client)."""
    import contextvars
    import sys
    import threading

    from dgbdt.callback import ClientLog

    cell = contextvars.ContextVar("cell", default="the cell that made the Client")
    seen = []

    class Client:
        def subscribe_topic(self, topic, handler):
            self.handler = handler

        def unsubscribe_topic(self, topic):
            pass

    class Out:                      # stdout, and a progress bar: what was shown, and where
        def write(self, text):
            if text.strip():
                seen.append((text.strip(), cell.get()))

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", Out())
    client = Client()
    token = cell.set("the training's cell")
    log = ClientLog(client, "topic")
    cell.reset(token)

    def loop():       # a thread of its own, as the event loop's: none of the caller's context
        client.handler((0, "[0]\tvalid-auc:0.5"))
        log.bar = Out()
        client.handler((0, "[1]\tvalid-auc:0.6"))
        client.handler((0, None))

    t = threading.Thread(target=loop)
    t.start()
    t.join()
    log.close(True)
    assert seen == [("[0]\tvalid-auc:0.5", "the training's cell"),
                    ("[1]\tvalid-auc:0.6", "the training's cell")]
