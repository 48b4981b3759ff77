"""Piecewise-linear trees on Dask (dgbdt.dask.train with linear_tree, issue #15): the model of
dgbdt.train, byte for byte, on 1 and 2 CPU workers, in every mode that trains them (task,
graph, collective; depth-wise and loss-guided), for several partitionings, persisted and
streamed datasets; the training's margins on the workers (its train metric) and prediction
on Dask; the estimators; and the error of what is not built (categorical features). GPU
workers and mode='nccl': tests/gpu/test_gpu_dask_linear.py.

The clusters are conftest's shared in-process ones (one per worker count for the session).
"""
import json

import numpy as np
import pytest

pytest.importorskip("distributed")

import dask.array as da  # noqa: E402

import dgbdt  # noqa: E402
import dgbdt.dask as dgd  # noqa: E402
from dgbdt.dask.data import workers_of  # noqa: E402

# the data of tests/test_linear_tree.py: piecewise-linear target, a feature far from 0,
# 5% missing values, weights
from test_linear_tree import LIN, _data  # noqa: E402

pytestmark = pytest.mark.slow  # every Dask mode with linear leaves

ROUNDS = 3
GROWTH = {"depthwise": {"max_depth": 3},
          "lossguide": {"grow_policy": "lossguide", "max_leaves": 6, "max_depth": 0}}
# row and column sampling: their draws come from (seed, round, global row), not the layout
SAMPLED = {"subsample": 0.8, "colsample_bynode": 0.8, "seed": 3, "max_linear_features": 2}


def _chunks(n: int, parts) -> tuple:
    """Row counts of the partitions: ``parts`` nearly equal ones, or the given counts."""
    if isinstance(parts, tuple):
        return parts
    return tuple(len(a) for a in np.array_split(np.arange(n), parts))


def _dataset(client, X, y, w, parts, persist=True):
    rows = _chunks(len(y), parts)
    return dgd.DaskDataset(client, da.from_array(X, chunks=(rows, X.shape[1])),
                           da.from_array(y, chunks=(rows,)),
                           None if w is None else da.from_array(w, chunks=(rows,)),
                           persist=persist)


def test_level_payloads_merge_to_the_sum_of_the_partials(monkeypatch):
    """What the Dask seams exchange for a linear level (each holder's smaller children's 9
    sums and larger children's p~ sums, linear_growth.level_payload), merged with the kept
    parent level (merged_level), is the sum of the holders' full partials at every level of
    a training, bit for bit; and fewer int64 than those (5 of 9 entries of a larger child
    stay home)."""
    from dgbdt.engine.seam import LocalSeam
    from dgbdt.tree.linear_growth import level_payload, merged_level
    checked = []

    def level(self, req):
        parts = [s.level_step(req, self.hist_ptrs) for s in self._visit()]
        full = sum(parts)
        if req.linear is not None:
            pay = [level_payload(p, req) for p in parts]
            got = merged_level(sum(pay), req, getattr(self, "_kept", None))
            np.testing.assert_array_equal(got, full)
            assert pay[0].size < parts[0].size or not len(req.large)
            self._kept = got if req.keep else None
            checked.append(len(req.large))
        return full
    monkeypatch.setattr(LocalSeam, "level", level)
    X, y, w = _data(n=900, seed=5)
    dgbdt.train({**LIN, "max_depth": 4}, dgbdt.Dataset(X, label=y, weight=w, page_rows=250),
                2, verbose_eval=False)
    assert len(checked) == 8 and sum(n > 0 for n in checked) == 6


# (workers, mode, partitions, persisted): each layout trains the in-process model
LAYOUTS = [(1, "task", 1, True), (1, "graph", 3, False),
           (2, "collective", 4, True), (2, "collective", (100, 700, 0, 400), False),
           (2, "graph", 3, True), (2, "graph", (500, 50, 650), False)]


@pytest.mark.parametrize("growth", list(GROWTH))
def test_same_model_as_in_process_in_every_mode(_clusters, growth):
    """Depth-wise and loss-guided, with weights, missing values and row and column sampling:
    the same model file for 1 and 2 workers, every mode and partitioning (one with an empty
    partition), persisted and streamed datasets."""
    X, y, w = _data(n=1200, seed=6)
    params = {**LIN, **GROWTH[growth], **SAMPLED}
    ref = dgbdt.train(params, dgbdt.Dataset(X, label=y, weight=w), ROUNDS,
                      verbose_eval=False).save_raw()
    doc = json.loads(ref)
    assert doc["version"] == 3 and all(t["linear_leaves"] for t in doc["trees"])
    assert max(len(m["features"]) for t in doc["trees"] for m in t["linear_leaves"]) == 2
    for workers, mode, parts, persist in LAYOUTS:
        client = _clusters(workers)
        d = _dataset(client, X, y, w, parts, persist)
        out = dgd.train(client, params, d, ROUNDS, mode=mode, verbose_eval=False)
        assert out["mode"] == mode
        assert out["booster"].save_raw() == ref, (workers, mode, parts, persist)
        if persist:     # the pages (with their raw rows) are spread over the workers
            held = [f for _, f in d.held()]
            assert len(set(workers_of(client, held))) == workers
            assert all(r.raw is not None for r in client.gather(held))


def test_classes_budget_and_gradient_sampling(client2):
    """Three classes (a tree a class a round: graph mode's leaf-sum hop per tree), pages
    spilled to files by device_memory_budget on the workers (the raw rows stay in memory, as
    in-process), and gradient-based sampling (its threshold all-reduced): the in-process
    model in the collective and graph modes (gradient-based: collective only)."""
    X, y, w = _data(n=900, seed=2)
    y3 = np.digitize(y, np.quantile(y, [0.33, 0.66])).astype(np.float64)
    cases = [({**LIN, "objective": "multi:softprob", "num_class": 3, "base_score": None,
               "device_memory_budget": 1}, y3, ("collective", "graph")),
             ({**LIN, "subsample": 0.5, "sampling_method": "gradient_based"}, y,
              ("collective",))]
    for params, target, modes in cases:
        ref = dgbdt.train(params, dgbdt.Dataset(X, label=target, weight=w), 2,
                          verbose_eval=False).save_raw()
        for mode, persist in zip(modes, (True, False)):
            d = _dataset(client2, X, target, w, 3, persist)
            out = dgd.train(client2, params, d, 2, mode=mode, verbose_eval=False)
            assert out["booster"].save_raw() == ref, (params, mode)
            if persist and "device_memory_budget" in params:
                for paged in client2.gather([f for _, f in d.held()]):
                    assert all(isinstance(pg.words, np.memmap) for pg in paged.pages)
                    assert paged.raw is not None and not isinstance(paged.raw, np.memmap)


@pytest.mark.parametrize("mode", ["auto", "graph"])
def test_margins_on_the_workers_are_the_models_predictions(client2, mode):
    """The train metric of every round (the workers' margins, advanced by the linear leaves
    through the row segments) equals the in-process one, and so does an eval set's (advanced
    by the new trees on the workers that hold it); a second training on the persisted
    dataset reuses its pages (with their raw rows) and gives the model again, and so does a
    constant-leaf one."""
    X, y, w = _data(n=1000, seed=7)
    Xv, yv, _ = _data(n=400, seed=17)
    params = {**LIN, "max_depth": 3}
    hist = {}
    ref = dgbdt.train(params, d0 := dgbdt.Dataset(X, label=y, weight=w), ROUNDS,
                      evals=[(d0, "train"), (dgbdt.Dataset(Xv, label=yv), "valid")],
                      evals_result=hist, verbose_eval=False)
    d = _dataset(client2, X, y, w, 3)
    dv = _dataset(client2, Xv, yv, None, 2)
    out = dgd.train(client2, params, d, ROUNDS, evals=[(d, "train"), (dv, "valid")],
                    mode=mode, verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()
    assert out["history"] == hist
    assert hist["train"]["rmse"][-1] < hist["train"]["rmse"][0]
    again = dgd.train(client2, params, d, ROUNDS, mode=mode, verbose_eval=False)["booster"]
    assert again.save_raw() == ref.save_raw()
    # a constant-leaf training on the same pages (kept with their raw rows) is unchanged
    const = {**params, "linear_tree": False}
    assert dgd.train(client2, const, d, ROUNDS, mode=mode, verbose_eval=False)[
        "booster"].save_raw() == dgbdt.train(const, d0, ROUNDS, verbose_eval=False).save_raw()


def test_continued_training_and_dask_predict(client2):
    """A linear model continued on Dask (the workers start from its margins on their raw
    rows) is the longer in-process training; dgbdt.dask.predict of it is Booster.predict."""
    X, y, _ = _data(n=900, seed=9)
    d = _dataset(client2, X, y, None, 3)
    first = dgd.train(client2, LIN, d, 2, verbose_eval=False)["booster"]
    both = dgd.train(client2, LIN, d, 2, xgb_model=first, verbose_eval=False)["booster"]
    ref = dgbdt.train(LIN, dgbdt.Dataset(X, label=y), 4, verbose_eval=False)
    assert both.save_raw() == ref.save_raw()
    pred = client2.compute(dgd.predict(client2, both, da.from_array(
        X, chunks=(300, X.shape[1])))).result()
    np.testing.assert_array_equal(np.asarray(pred), ref.predict(X))
    np.testing.assert_array_equal(client2.compute(dgd.predict(client2, both, d)).result(),
                                  ref.predict(X))
    # the prediction is the linear leaves': a constant-leaf reading differs
    assert not np.allclose(ref.predict(X), dgbdt.load_model(
        _without_linear(json.loads(ref.save_raw()))).predict(X))


def _without_linear(doc):
    doc["version"] = 2
    for t in doc["trees"]:
        t.pop("linear_leaves")
    return doc


def test_estimators(client2):
    """DaskGBDTRegressor / DaskGBDTClassifier with linear_tree: the in-process estimators'
    models and predictions."""
    from dgbdt import GBDTClassifier, GBDTRegressor
    from dgbdt.dask import DaskGBDTClassifier, DaskGBDTRegressor
    X, y, _ = _data(n=800, seed=11)
    yb = (y > np.median(y)).astype(int)
    kw = {"n_estimators": 3, "max_depth": 3, "linear_tree": True, "max_linear_features": 3,
          "max_bin": 32}
    Xd = da.from_array(X, chunks=(300, X.shape[1]))
    for dask_cls, cls, target in ((DaskGBDTRegressor, GBDTRegressor, y),
                                  (DaskGBDTClassifier, GBDTClassifier, yb)):
        est = dask_cls(**kw)
        est.client = client2
        est.fit(Xd, da.from_array(target, chunks=300))
        ref = cls(**kw).fit(X, target)
        assert est.get_booster().save_raw() == ref.get_booster().save_raw()
        assert est.get_booster().trees[0].linear
        np.testing.assert_array_equal(client2.compute(est.predict(Xd)).result(),
                                      ref.predict(X))


def test_what_is_not_built_says_so(client1):
    """Categorical features beside linear leaves (GPU workers: tests/gpu/test_gpu_dask_linear.py)."""
    X, y, _ = _data(n=300, seed=12)
    import pandas as pd
    import dask.dataframe as dd
    frame = pd.DataFrame({"a": pd.Categorical(np.arange(300) % 3), "b": X[:, 0]})
    dc = dgd.DaskDataset(client1, dd.from_pandas(frame, npartitions=2),
                         dd.from_pandas(pd.Series(y), npartitions=2), enable_categorical=True)
    with pytest.raises(ValueError, match="categorical features is not built"):
        dgd.train(client1, LIN, dc, 1)
