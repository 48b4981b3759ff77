"""The user's own path on CPU workers: pandas-backed dask frames read from parquet, the
estimators with an eval set and early stopping, nullable and category dtypes, and metrics that
are exact across workers and partitionings (checked against scikit-learn on the concatenated
predictions).
"""
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")
dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
skm = pytest.importorskip("sklearn.metrics")

import dgbdt  # noqa: E402
from dgbdt import dask as dgd  # noqa: E402

pytestmark = pytest.mark.slow  # the user's path end to end on clusters

N = 3000


def frame(n=N, seed=0) -> pd.DataFrame:
    """A frame as ETL leaves it: float, nullable Int32 (with NA), boolean and Float32 columns,
    and a label."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5)).astype(np.float32)
    logit = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) - X[:, 3]
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    df = pd.DataFrame(X[:, :3], columns=["a", "b", "c"])
    counts = pd.array(np.round(X[:, 3] * 3).astype(np.int32), dtype="Int32")
    counts[rng.random(n) < 0.05] = pd.NA
    df["counts"] = counts
    df["flag"] = pd.array(X[:, 4] > 0, dtype="boolean")
    df["f32"] = pd.array(X[:, 4], dtype="Float32")
    df["label"] = y
    df["w"] = rng.uniform(0.5, 2.0, n)
    return df


@pytest.fixture(scope="module")
def parquet_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("pq")
    df = frame()
    for i, part in enumerate(np.array_split(np.arange(N), 6)):
        df.iloc[part].to_parquet(path / f"part{i}.parquet")
    return str(path)


FEATURES = ["a", "b", "c", "counts", "flag", "f32"]


def test_parquet_classifier_with_eval_set_and_early_stopping(client2, parquet_dir):
    """read_parquet -> random_split -> DaskGBDTClassifier(eval_set, early stopping): the model
    is the in-process classifier's on the same rows, and predict_proba computes."""
    ddf = dd.read_parquet(parquet_dir)
    train, valid = ddf.random_split([0.8, 0.2], random_state=0)
    est = dgd.DaskGBDTClassifier(n_estimators=60, max_depth=4, learning_rate=0.3,
                                 eval_metric=["logloss", "auc"], early_stopping_rounds=5)
    est.client = client2
    est.fit(train[FEATURES], train["label"], eval_set=[(valid[FEATURES], valid["label"])])
    assert est.best_iteration is not None
    assert list(est.classes_) == [0, 1]
    history = est.evals_result()["validation_0"]
    assert len(history["auc"]) == est.get_booster().num_boosted_rounds()

    tr, va = client2.compute([train, valid], sync=True)
    ref = dgbdt.GBDTClassifier(n_estimators=60, max_depth=4, learning_rate=0.3,
                               eval_metric=["logloss", "auc"], early_stopping_rounds=5)
    ref.fit(tr[FEATURES], tr["label"], eval_set=[(va[FEATURES], va["label"])])
    assert ref.get_booster().save_raw() == est.get_booster().save_raw()
    assert ref.evals_result()["validation_0"] == history

    proba = client2.compute(est.predict_proba(valid[FEATURES])).result()
    np.testing.assert_array_equal(proba, ref.predict_proba(va[FEATURES]))
    # the recorded auc of the best round is scikit-learn's on those predictions
    best = est.best_iteration
    assert history["auc"][best] == pytest.approx(
        skm.roc_auc_score(va["label"], proba[:, 1]), rel=1e-12)
    assert 0.5 < est.score(valid[FEATURES], valid["label"]) <= 1.0


def test_fit_sees_the_rows_the_users_compute_gives(client2, tmp_path):
    """The optimizer may regroup partitions (here: a narrow projection of 16 small parquet
    files fuses them) and random_split draws per partition, so the unoptimized graph holds
    other rows than ``compute()`` gives. The training sees the computed rows: its eval
    history is scikit-learn's score of the model's predictions on them."""
    df = frame(16 * 400, seed=5)
    for i in range(16):
        df.iloc[i * 400:(i + 1) * 400].to_parquet(tmp_path / f"part{i:02d}.parquet")
    sub = dd.read_parquet(str(tmp_path))[["a", "b", "label"]]
    train, valid = sub.random_split([0.7, 0.3], random_state=1)
    # the situation the test is about (if dask stops fusing here, the test checks nothing new)
    assert valid.optimize().npartitions < valid.npartitions
    unoptimized = sum(len(p.compute()) for p in valid.to_delayed(optimize_graph=False))
    va = valid.compute()
    assert unoptimized != len(va)
    dtr = dgd.DaskDataset(client2, train[["a", "b"]], train["label"])
    dva = dgd.DaskDataset(client2, valid[["a", "b"]], valid["label"])
    assert dva.num_row == len(va) and dtr.num_row == len(train.compute())
    out = dgd.train(client2, {"objective": "binary:logistic", "max_depth": 3,
                              "eval_metric": "auc"}, dtr, 4, evals=[(dva, "valid")],
                    verbose_eval=False)
    for k in range(4):
        pred = out["booster"].predict(va[["a", "b"]], iteration_range=(0, k + 1))
        assert out["history"]["valid"]["auc"][k] == pytest.approx(
            skm.roc_auc_score(va["label"], pred), rel=1e-12)


_READS: list = []


def _read(i):
    """A partition of frame() as a reader gives it, counting the reads (the test clusters
    run their workers in this process)."""
    _READS.append(i)
    return frame(N, seed=0).iloc[i * 500:(i + 1) * 500]


def test_training_and_eval_frames_read_their_source_once(client2):
    """The estimator's training and validation frames, random_split from one source, are
    computed together (DaskDataset.together, graphs not fused), with the classifier's classes
    (dgbdt.dask.class_labels): each source partition is read once, for the features, labels
    and classes of both (the classes computed first: twice; fused and one by one: four
    times, features and labels of each frame apart). The model is the in-process
    classifier's on the computed frames."""
    ddf = dd.from_map(_read, range(6), meta=frame(N).iloc[:0])
    train, valid = ddf.random_split([0.8, 0.2], random_state=0)
    est = dgd.DaskGBDTClassifier(n_estimators=8, max_depth=3, eval_metric="auc",
                                 early_stopping_rounds=3)
    est.client = client2
    _READS.clear()
    est.fit(train[FEATURES], train["label"], eval_set=[(valid[FEATURES], valid["label"])])
    assert sorted(_READS) == list(range(6)), _READS
    tr, va = client2.compute([train, valid], sync=True)
    ref = dgbdt.GBDTClassifier(n_estimators=8, max_depth=3, eval_metric="auc",
                               early_stopping_rounds=3)
    ref.fit(tr[FEATURES], tr["label"], eval_set=[(va[FEATURES], va["label"])])
    assert ref.get_booster().save_raw() == est.get_booster().save_raw()
    assert ref.evals_result() == est.evals_result()


def test_together_makes_the_datasets_made_one_by_one(client2, parquet_dir):
    """DaskDataset.together: the same rows, counts and weights as separate constructions;
    a bad collection among them raises as its own construction does, and nothing is left
    running."""
    ddf = dd.read_parquet(parquet_dir)
    train, valid = ddf.random_split([0.7, 0.3], random_state=3)
    args = [dict(data=train[FEATURES], label=train["label"], weight=train["w"]),
            dict(data=valid[FEATURES], label=valid["label"])]
    both = dgd.DaskDataset.together(client2, args)
    alone = [dgd.DaskDataset(client2, **a) for a in args]
    for a, b in zip(both, alone):
        assert (a.part_rows, a.num_row, a.max_weight, a.feature_names) == \
            (b.part_rows, b.num_row, b.max_weight, b.feature_names)
        pa, pb = (client2.gather(d.persisted_parts()) for d in (a, b))
        for x, y in zip(pa, pb):
            np.testing.assert_array_equal(x.X, y.X)
            np.testing.assert_array_equal(x.label, y.label)
    bad = dict(data=valid[FEATURES], label=valid["label"] * np.nan)
    with pytest.raises(ValueError, match="label"):
        dgd.DaskDataset.together(client2, [args[0], bad])


@pytest.mark.parametrize("dtype", ["category", "bool", "Int32", "boolean", "str"])
def test_label_dtypes(client2, dtype):
    """Class labels of every pandas kind, in-process and on Dask: the same model."""
    df = frame(800, seed=1)
    names = {"category": lambda y: y.astype("category"), "bool": lambda y: y.astype(bool),
             "Int32": lambda y: y.astype("Int32"), "boolean": lambda y: y.astype("boolean"),
             "str": lambda y: y.map({0: "no", 1: "yes"})}
    y = names[dtype](df["label"])
    est = dgbdt.GBDTClassifier(n_estimators=5, max_depth=3).fit(df[FEATURES], y)
    assert len(est.classes_) == 2
    pred = est.predict(df[FEATURES])
    assert set(np.unique(pred)) <= set(np.asarray(est.classes_).tolist())
    assert est.score(df[FEATURES], y) > 0.6
    dest = dgd.DaskGBDTClassifier(n_estimators=5, max_depth=3)
    dest.client = client2
    ddf = dd.from_pandas(df.assign(y=y), npartitions=3, sort=False)
    dest.fit(ddf[FEATURES], ddf["y"])
    assert dest.get_booster().save_raw() == est.get_booster().save_raw()
    np.testing.assert_array_equal(np.asarray(dest.classes_), np.asarray(est.classes_))
    got = client2.compute(dest.predict(ddf[FEATURES])).result()
    np.testing.assert_array_equal(np.asarray(got), np.asarray(pred))


def test_missing_labels_say_where(client2):
    df = frame(300, seed=2)
    y = df["label"].astype("Int32")
    y[17] = pd.NA
    with pytest.raises(ValueError, match=r"y has missing values \(first at row 17\)"):
        dgbdt.GBDTClassifier(n_estimators=2).fit(df[FEATURES], y)
    with pytest.raises(ValueError, match=r"label contains NaN or infinite values \(first at row "
                                         r"17\)"):
        dgbdt.GBDTRegressor(n_estimators=2).fit(df[FEATURES], y.astype("Float32"))
    dest = dgd.DaskGBDTClassifier(n_estimators=2)
    dest.client = client2
    ddf = dd.from_pandas(df.assign(y=y), npartitions=3, sort=False)
    with pytest.raises(ValueError, match="y has missing values"):
        dest.fit(ddf[FEATURES], ddf["y"])


def test_nullable_regression_labels(client2):
    df = frame(600, seed=3)
    y = (df["a"] * 2).astype("Float32")
    est = dgbdt.GBDTRegressor(n_estimators=5, max_depth=3).fit(df[FEATURES], y)
    dest = dgd.DaskGBDTRegressor(n_estimators=5, max_depth=3)
    dest.client = client2
    ddf = dd.from_pandas(df.assign(y=y), npartitions=2, sort=False)
    dest.fit(ddf[FEATURES], ddf["y"])
    assert dest.get_booster().save_raw() == est.get_booster().save_raw()
    assert est.score(df[FEATURES], y) > 0.5
    # nullable weights and margins too
    w, m = df["w"].astype("Float32"), (df["b"] * 0.1).astype("Float64")
    est = dgbdt.GBDTRegressor(n_estimators=5, max_depth=3).fit(df[FEATURES], y, sample_weight=w,
                                                                base_margin=m)
    ddf = dd.from_pandas(df.assign(y=y, w32=w, m64=m), npartitions=2, sort=False)
    dest.fit(ddf[FEATURES], ddf["y"], sample_weight=ddf["w32"], base_margin=ddf["m64"])
    assert dest.get_booster().save_raw() == est.get_booster().save_raw()


@pytest.mark.parametrize("objective,metrics", [
    ("binary:logistic", ["auc", "aucpr", "logloss", "error"]),
    ("multi:softprob", ["auc", "aucpr", "mlogloss", "merror"]),
])
def test_metrics_exact_across_workers_and_partitionings(_clusters, objective, metrics):
    """History values are the same bits for 1, 2 and 4 workers, any partitioning and every
    mode, and equal scikit-learn's metrics of the concatenated predictions."""
    rng = np.random.default_rng(4)
    n = 2400
    X = rng.standard_normal((n, 6)).astype(np.float32)
    score = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(scale=0.7, size=n)
    y = (score > 0).astype(float) if objective.startswith("binary") else \
        np.digitize(score, [-0.6, 0.6]).astype(float)
    w = rng.uniform(0.2, 3.0, n)
    Xv, yv, wv = X[:800], y[:800], w[:800]
    params = {"objective": objective, "max_depth": 3, "eta": 0.3, "eval_metric": metrics}
    if objective.startswith("multi"):
        params["num_class"] = 3
    rounds = 4
    ref_res: dict = {}
    ref = dgbdt.train(params, dgbdt.Dataset(X, label=y, weight=w), rounds,
                      evals=[(dgbdt.Dataset(Xv, label=yv, weight=wv), "v")],
                      evals_result=ref_res, verbose_eval=False)
    for r in (0, rounds - 1):
        p = ref.predict(Xv, iteration_range=(0, r + 1))
        sk = {"auc": skm.roc_auc_score(yv, p, sample_weight=wv, multi_class="ovr",
                                       average="weighted"),
              "aucpr": ref_res["v"]["aucpr"][r],     # its oracle is XGBoost (test_metric.py)
              "logloss": skm.log_loss(yv, p, sample_weight=wv) if p.ndim == 1 else None,
              "error": np.average((p > 0.5) != yv, weights=wv) if p.ndim == 1 else None,
              "mlogloss": skm.log_loss(yv, p, sample_weight=wv) if p.ndim == 2 else None,
              "merror": np.average(p.argmax(axis=1) != yv, weights=wv) if p.ndim == 2
              else None}
        for m in metrics:
            assert ref_res["v"][m][r] == pytest.approx(sk[m], rel=1e-12, abs=1e-15), (m, r)
    for workers, chunks, mode in [(1, 400, "task"), (2, 300, "graph"), (2, 170, "collective"),
                                  (4, 600, "collective"), (4, 230, "graph")]:
        client = _clusters(workers)
        d = dgd.DaskDataset(client, da.from_array(X, chunks=(chunks, 6)),
                            da.from_array(y, chunks=chunks), da.from_array(w, chunks=chunks))
        dv = dgd.DaskDataset(client, da.from_array(Xv, chunks=(chunks // 2, 6)),
                             da.from_array(yv, chunks=chunks // 2),
                             da.from_array(wv, chunks=chunks // 2))
        out = dgd.train(client, params, d, rounds, evals=[(dv, "v")], mode=mode,
                        verbose_eval=False)
        assert out["history"] == ref_res, (workers, chunks, mode)
        assert out["booster"].save_raw() == ref.save_raw()


def test_worker_task_environment_is_restored(monkeypatch):
    """training_task sets numba's threads and glibc's heap thresholds for a task and restores
    them (the heap only where the process has a fixed MALLOC_TRIM_THRESHOLD_, as under a Dask
    nanny)."""
    import numba

    from dgbdt.dask import worker

    calls = []
    monkeypatch.setattr(worker, "_mallopt", lambda: (lambda opt, value: calls.append((opt, value))))
    before = numba.get_num_threads()
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with worker.training_task(1):
        assert numba.get_num_threads() == 1
    assert calls == [] and numba.get_num_threads() == before
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    with pytest.raises(RuntimeError, match="boom"):
        with worker.training_task(1):
            assert calls == [(worker._M_MMAP_THRESHOLD, worker._KEEP),
                             (worker._M_TRIM_THRESHOLD, worker._KEEP)]
            raise RuntimeError("boom")
    assert calls[2:] == [(worker._M_MMAP_THRESHOLD, 128 * 1024),
                         (worker._M_TRIM_THRESHOLD, 65536)]
    assert numba.get_num_threads() == before


def test_workers_do_not_import_scikit_learn():
    """The estimators' work on the workers (classes, label encoding, training, predict_proba,
    predict) unpickles no function of a module that imports scikit-learn: on fresh workers
    that import was 1.8 s of the first fit. Worker processes, so their imports are their own."""
    from distributed import Client, LocalCluster
    df = frame(2000, seed=3)
    ddf = dd.from_pandas(df, npartitions=4)
    train, valid = ddf.random_split([0.8, 0.2], random_state=0)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        est = dgd.DaskGBDTClassifier(n_estimators=5, max_depth=3, eval_metric="auc")
        est.client = client
        est.fit(train[FEATURES], train["label"], eval_set=[(valid[FEATURES], valid["label"])])
        client.compute(est.predict_proba(valid[FEATURES]), sync=True)
        client.compute(est.predict(valid[FEATURES]), sync=True)
        loaded = client.run(eval, "sorted(m for m in __import__('sys').modules "
                                  "if m == 'sklearn' or m.startswith('dgbdt'))")
    (mods,) = loaded.values()
    assert "dgbdt.model.booster" in mods          # the workers did dgbdt's work
    assert "sklearn" not in mods, [m for m in mods if "sklearn" in m]
