"""dgbdt.dask: training on a Dask cluster gives the in-process model, byte for byte.

Whatever the number of workers, the number of partitions, the collection type (dask array or
DataFrame) or the path (one task on one worker, or the task graph over several), the model of
dgbdt.dask.train is the same bytes as dgbdt.train's on the same rows in the same order. Input
errors are caught with messages naming the problem (and the partition); predictions are lazy,
partition-aligned and equal to Booster.predict.
"""
import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("dask.dataframe")

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402
from distributed import Client, LocalCluster, get_task_stream  # noqa: E402

import dgbdt  # noqa: E402
import dgbdt.dask as dgd  # noqa: E402

pytestmark = pytest.mark.slow  # many Dask clusters and modes

N, F, ROUNDS = 3000, 6, 4
NAMES = [f"c{j}" for j in range(F)]
BINARY = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.3}
PARAMS = [
    BINARY,
    {"objective": "reg:squarederror", "max_depth": 4, "lambda": 2.0, "alpha": 0.1},
    {"objective": "multi:softprob", "num_class": 3, "max_depth": 4},
]


def make(n=N, seed=0, missing=0.1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, F)).astype(np.float32)
    X[:, 5] = np.round(X[:, 5] * 3)  # a low-cardinality feature
    X[rng.random(X.shape) < missing] = np.nan
    Z = np.nan_to_num(X)
    logit = Z[:, 0] * Z[:, 1] + np.sin(2 * Z[:, 2]) - Z[:, 3] + 0.3 * Z[:, 5]
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.float64)
    w = rng.uniform(0.5, 2.0, n)
    return X, y, w


def labels_for(params, y, X):
    if params["objective"].startswith("multi"):
        return np.digitize(np.nan_to_num(X[:, 0]), [-0.5, 0.5]).astype(np.float64)
    if params["objective"].startswith("reg"):
        return y + np.nan_to_num(X[:, 2])
    return y


def sizes(n, parts):
    """Row counts of ``parts`` nearly equal partitions."""
    return tuple(len(a) for a in np.array_split(np.arange(n), parts))


def as_dask_array(v, parts):
    chunks = (sizes(len(v), parts),) + tuple((s,) for s in v.shape[1:])
    return da.from_array(v, chunks=chunks)


def as_dask_frame(X, y, w, parts):
    ddf = dd.from_pandas(pd.DataFrame(X, columns=NAMES), npartitions=parts)
    series = [None if v is None else dd.from_pandas(pd.Series(v), npartitions=parts)
              for v in (y, w)]
    assert ddf.npartitions == parts
    return ddf, *series


def dask_dataset(client, X, y, w, parts, kind="array"):
    if kind == "array":
        return dgd.DaskDataset(client, as_dask_array(X, parts), as_dask_array(y, parts),
                               None if w is None else as_dask_array(w, parts))
    return dgd.DaskDataset(client, *as_dask_frame(X, y, w, parts))


def reference(params, X, y, w, rounds=ROUNDS, names=None, **kw):
    return dgbdt.train(params, dgbdt.Dataset(X, label=y, weight=w, feature_names=names), rounds,
                       verbose_eval=False, **kw)


def dask_model(client, params, d, rounds=ROUNDS, **kw):
    return dgd.train(client, params, d, rounds, verbose_eval=False, **kw)["booster"]


def computed(client, collection):
    return client.compute(collection).result()


# -- invariance ---------------------------------------------------------------------------------
@pytest.mark.parametrize("parts", [1, 3, 8])
@pytest.mark.parametrize("dask_client", [1, 2, 4], indirect=True, ids=lambda n: f"{n}w")
def test_invariant_to_workers_and_partitions(dask_client, parts):
    X, y, w = make()
    d = dask_dataset(dask_client, X, y, w, parts)
    assert d.part_rows == list(sizes(N, parts))
    n_workers = len(dask_client.scheduler_info()["workers"])
    if n_workers > 1 and parts == 8:
        # the graph path really runs over several workers
        assert len(set(d.workers_of_parts())) > 1
    assert dask_model(dask_client, BINARY, d).save_raw() == reference(BINARY, X, y, w).save_raw()


@pytest.mark.parametrize("kind", ["array", "frame"])
@pytest.mark.parametrize("params", PARAMS, ids=lambda p: p["objective"])
def test_invariant_to_objective_and_collection(client2, params, kind):
    X, y, w = make(seed=1)
    y = labels_for(params, y, X)
    d = dask_dataset(client2, X, y, w, 3, kind)
    names = NAMES if kind == "frame" else None
    assert d.feature_names == names
    assert dask_model(client2, params, d).save_raw() == \
        reference(params, X, y, w, names=names).save_raw()


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: p["objective"])
def test_graph_mode_on_one_worker_equals_task_mode(client1, params):
    X, y, w = make(seed=2)
    y = labels_for(params, y, X)
    d = dask_dataset(client1, X, y, w, 3)
    ref = reference(params, X, y, w).save_raw()
    with get_task_stream(client1) as ts:
        out = dgd.train(client1, params, d, ROUNDS, evals=[(d, "train")], verbose_eval=False,
                        mode="graph")
    assert out["booster"].save_raw() == ref
    # one unit: a round is one task (no level waits for another worker's partials)
    keys = [str(t["key"]) for t in ts.data]
    assert sum(k.startswith("dgbdt-round-") for k in keys) == ROUNDS
    assert not any(k.startswith("dgbdt-hist-") for k in keys)
    assert dask_model(client1, params, d, mode="auto").save_raw() == ref
    assert dask_model(client1, params, d, mode="task").save_raw() == ref
    # without an eval set nothing reads a round's trees before the end: 32 rounds a task
    rounds = 40
    ref = reference(params, X, y, w, rounds=rounds).save_raw()
    with get_task_stream(client1) as ts:
        assert dask_model(client1, params, d, rounds=rounds, mode="graph").save_raw() == ref
    keys = [str(t["key"]) for t in ts.data]
    assert sorted(k.split("-w0")[0] for k in keys if k.startswith("dgbdt-round")) == \
        ["dgbdt-rounds-r0-31", "dgbdt-rounds-r32-39"]


@pytest.mark.parametrize("params", [BINARY, PARAMS[2]], ids=lambda p: p["objective"])
def test_invariant_with_base_margin_and_max_bin(client2, params):
    X, y, w = make(seed=12)
    y = labels_for(params, y, X)
    k = params.get("num_class", 1)
    margin = np.random.default_rng(3).standard_normal((N, k) if k > 1 else N)
    params = dict(params, max_bin=32)
    d = dgd.DaskDataset(client2, as_dask_array(X, 3), as_dask_array(y, 3), as_dask_array(w, 3),
                        base_margin=as_dask_array(margin, 3))
    ref = dgbdt.train(params, dgbdt.Dataset(X, label=y, weight=w, base_margin=margin), ROUNDS,
                      verbose_eval=False)
    assert dask_model(client2, params, d).save_raw() == ref.save_raw()
    assert dask_model(client2, dict(params, max_bin=256), d).save_raw() != ref.save_raw()
    d = dgd.DaskDataset(client2, as_dask_array(X, 3), as_dask_array(y, 3), max_bin=32)
    with pytest.raises(ValueError, match="built with max_bin=32 but the training parameters "
                                         "say max_bin=64"):
        dgd.train(client2, dict(params, max_bin=64), d, 1)


def test_unweighted_no_missing(client2):
    X, y, _ = make(seed=3, missing=0.0)
    d = dask_dataset(client2, X, y, None, 4)
    assert dask_model(client2, BINARY, d).save_raw() == reference(BINARY, X, y, None).save_raw()


def test_task_mode_needs_one_worker(client4):
    X, y, w = make()
    d = dask_dataset(client4, X, y, w, 8)
    assert len(set(d.workers_of_parts())) > 1
    with pytest.raises(ValueError, match="mode='task' needs every partition on one worker"):
        dgd.train(client4, BINARY, d, 1, mode="task")
    with pytest.raises(ValueError, match="mode must be"):
        dgd.train(client4, BINARY, d, 1, mode="fast")


def test_real_processes(capsys, monkeypatch):
    """Two worker processes: everything sent to the workers pickles, and the model is the same.
    Their statistical profiler is on (the suite turns it off elsewhere: conftest), as on a
    user's cluster, to check that a training task pauses and restores it."""
    import dask
    X, y, w = make(seed=4)
    params = PARAMS[2]
    y = labels_for(params, y, X)
    monkeypatch.setenv("DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED", "True")
    with dask.config.set({"distributed.worker.profile.enabled": True}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(2)
        d = dask_dataset(client, X, y, w, 4, "frame")
        assert len(set(d.workers_of_parts())) == 2
        dvalid = dask_dataset(client, X[:900], y[:900], None, 2, "frame")
        capsys.readouterr()
        out = dgd.train(client, params, d, 3, evals=[(d, "train"), (dvalid, "valid")],
                        verbose_eval=True)
        # auto is the collective here: rank 0 sends its lines to the client, which prints them
        lines = capsys.readouterr().out.strip().splitlines()
        assert [line.split("\t")[0] for line in lines] == ["[0]", "[1]", "[2]"]
        ref_hist = {}
        ref = dgbdt.train(params, dgbdt.Dataset(X, label=y, weight=w, feature_names=NAMES), 3,
                          evals=[(dgbdt.Dataset(X, label=y, weight=w, feature_names=NAMES),
                                  "train"),
                                 (dgbdt.Dataset(X[:900], label=y[:900], feature_names=NAMES),
                                  "valid")],
                          evals_result=ref_hist, verbose_eval=False)
        assert out["booster"].save_raw() == ref.save_raw()
        np.testing.assert_allclose(out["history"]["train"]["mlogloss"],
                                   ref_hist["train"]["mlogloss"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(out["history"]["valid"]["mlogloss"],
                                   ref_hist["valid"]["mlogloss"], rtol=0, atol=1e-12)
        # the one-task path too: one partition, trained inside one worker process
        d1 = dask_dataset(client, X, y, w, 1, "frame")
        profiling = (lambda dask_worker: dask_worker.periodic_callbacks["profile"].is_running())
        assert all(client.run(profiling).values())
        assert dask_model(client, params, d1, rounds=3).save_raw() == ref.save_raw()
        # the task paused its worker's profiler while it trained, and it is running again
        client.run(lambda: None)      # a round trip through the workers' loops
        assert all(client.run(profiling).values())
        ddf, _, _ = as_dask_frame(X, None, None, 4)
        pred = dgd.predict(client, out["booster"], ddf)
        assert isinstance(pred, dd.DataFrame)
        np.testing.assert_array_equal(computed(client, pred).to_numpy(),
                                      ref.predict(pd.DataFrame(X, columns=NAMES)))
        pred = dgd.predict(client, out["booster"], d)
        np.testing.assert_array_equal(computed(client, pred), ref.predict(X))


# -- input errors --------------------------------------------------------------------------------
def test_misaligned_label_chunks(client1):
    X, y, _ = make()
    with pytest.raises(ValueError, match=r"label row chunks .* do not match the data's"):
        dgd.DaskDataset(client1, as_dask_array(X, 3), as_dask_array(y, 2))
    with pytest.raises(ValueError, match=r"weight row chunks"):
        dgd.DaskDataset(client1, as_dask_array(X, 3), as_dask_array(y, 3),
                        da.from_array(y, chunks=1000 + 1))
    with pytest.raises(ValueError, match="label has 10 entries but data has 3000 rows"):
        dgd.DaskDataset(client1, as_dask_array(X, 3), y[:10])


def test_numpy_label_and_column_chunks(client2):
    X, y, w = make()
    Xd = da.from_array(X, chunks=(1000, 4))  # column chunks are merged per row block
    assert Xd.numblocks == (3, 2)
    d = dgd.DaskDataset(client2, Xd, y, w)
    assert d.part_rows == [1000] * 3
    assert dask_model(client2, BINARY, d).save_raw() == reference(BINARY, X, y, w).save_raw()


def test_frame_label_partitions(client1):
    X, y, _ = make()
    ddf, _, _ = as_dask_frame(X, None, None, 3)
    with pytest.raises(ValueError, match="label has 2 partitions but data has 3"):
        dgd.DaskDataset(client1, ddf, dd.from_pandas(pd.Series(y), npartitions=2))
    # same number of partitions, different lengths: found on the workers, named by partition
    label = dd.from_pandas(pd.Series(y), chunksize=1100)
    assert label.npartitions == 3
    with pytest.raises(ValueError, match="partition 0: label has 1100 entries but data has 1000"):
        dgd.DaskDataset(client1, ddf, label)
    with pytest.raises(TypeError, match="label must be a dask Series"):
        dgd.DaskDataset(client1, ddf, y)


def test_unknown_chunk_sizes(client1):
    X, y, _ = make()
    Xd = as_dask_array(X, 3)
    with pytest.raises(ValueError, match="unknown chunk sizes.*compute_chunk_sizes"):
        dgd.DaskDataset(client1, Xd[Xd[:, 0] > 0], as_dask_array(y, 3))


def test_bad_partition_values_name_the_partition(client1):
    X, y, w = make()
    y = y.copy()
    y[2500] = np.nan
    with pytest.raises(ValueError, match=r"label contains NaN .*row 2500 of the dataset "
                                         r"\(row 500 of partition 2\)"):
        dgd.DaskDataset(client1, as_dask_array(X, 3), as_dask_array(y, 3))
    w = -w
    with pytest.raises(ValueError, match=r"weight must be >= 0; row 0 of the dataset \(row 0 of "
                                         r"partition 0\)"):
        dgd.DaskDataset(client1, as_dask_array(X, 3), as_dask_array(np.nan_to_num(y), 3),
                        as_dask_array(w, 3))


def test_non_numeric_frame_column(client1):
    X, y, _ = make(n=100)
    df = pd.DataFrame(X, columns=NAMES)
    df["city"] = ["a", "b"] * 50
    with pytest.raises(TypeError, match=r"non-numeric columns: 'city'"):
        dgd.DaskDataset(client1, dd.from_pandas(df, npartitions=2),
                        dd.from_pandas(pd.Series(y), npartitions=2))
    with pytest.raises(TypeError, match="data must hold numbers"):
        dgd.DaskDataset(client1, da.from_array(np.array([["a", "b"]] * 10), chunks=5))


def test_zero_weights(client1):
    X, y, w = make(n=300)
    with pytest.raises(ValueError, match="all sample weights are zero"):
        dgd.DaskDataset(client1, as_dask_array(X, 2), as_dask_array(y, 2),
                        as_dask_array(np.zeros(300), 2))


def test_all_empty_data(client1):
    X, y, _ = make(n=0)
    with pytest.raises(ValueError, match="data is empty: every partition has zero rows"):
        dgd.DaskDataset(client1, da.from_array(X, chunks=(1, F)), da.from_array(y, chunks=1))
    ddf, label, _ = as_dask_frame(X, y, None, 1)
    with pytest.raises(ValueError, match="data is empty"):
        dgd.DaskDataset(client1, ddf, label)


@pytest.mark.parametrize("dask_client", [1, 2], indirect=True, ids=lambda n: f"{n}w")
def test_empty_partitions_among_non_empty(dask_client):
    X, y, w = make()
    rows = (0, 1000, 0, 1200, 0, 800)
    block = (lambda v: da.from_array(v, chunks=(rows,) + tuple((s,) for s in v.shape[1:])))
    d = dgd.DaskDataset(dask_client, block(X), block(y), block(w))
    assert d.part_rows == list(rows)
    ref = reference(BINARY, X, y, w).save_raw()
    assert dask_model(dask_client, BINARY, d).save_raw() == ref
    assert dask_model(dask_client, BINARY, d, mode="graph").save_raw() == ref
    # a filtered DataFrame: the first partitions lose every row
    ddf, label, weight = as_dask_frame(X, y, w, 4)
    keep = (lambda c: c[c.index.to_series() >= 1600])
    d = dgd.DaskDataset(dask_client, keep(ddf), keep(label), keep(weight))
    assert d.part_rows == [0, 0, 650, 750]
    assert dask_model(dask_client, BINARY, d).save_raw() == \
        reference(BINARY, X[1600:], y[1600:], w[1600:], names=NAMES).save_raw()


def test_not_dask_data(client1):
    X, y, _ = make(n=100)
    with pytest.raises(TypeError, match="data must be a dask DataFrame or dask array; got "
                                        "ndarray"):
        dgd.DaskDataset(client1, X, y)
    with pytest.raises(TypeError, match="data must be a dask DataFrame or dask array; got "
                                        "DataFrame"):
        dgd.DaskDataset(client1, pd.DataFrame(X), y)
    with pytest.raises(TypeError, match="dtrain must be a dgbdt.dask.DaskDataset"):
        dgd.train(client1, BINARY, dgbdt.Dataset(X, label=y), 1)


def test_train_errors(client1):
    X, y, _ = make(n=300)
    d = dask_dataset(client1, X, y, None, 2)
    unlabeled = dgd.DaskDataset(client1, as_dask_array(X, 2))
    with pytest.raises(ValueError, match="dtrain has no label"):
        dgd.train(client1, BINARY, unlabeled, 1)
    with pytest.raises(ValueError, match="eval set 'u' has no label"):
        dgd.train(client1, BINARY, d, 1, evals=[(unlabeled, "u")])
    with pytest.raises(ValueError, match="early_stopping_rounds needs at least one"):
        dgd.train(client1, BINARY, d, 1, early_stopping_rounds=2)
    with pytest.raises(TypeError, match=r"evals must be a list of \(DaskDataset, name\)"):
        dgd.train(client1, BINARY, d, 1, evals=[(dgbdt.Dataset(X, label=y), "x")])
    narrow = dgd.DaskDataset(client1, as_dask_array(X[:, :5], 2), as_dask_array(y, 2))
    with pytest.raises(ValueError, match="eval set 'n' has 5 features; dtrain has 6"):
        dgd.train(client1, BINARY, d, 1, evals=[(narrow, "n")])


def test_client_none_uses_default_client(client1):
    X, y, w = make()
    with Client(client1.scheduler.address) as default:
        d = dgd.DaskDataset(None, as_dask_array(X, 3), as_dask_array(y, 3), as_dask_array(w, 3))
        assert d.client is default
        model = dask_model(None, BINARY, d)
        pred = dgd.predict(None, model, as_dask_array(X, 3)).compute()  # default scheduler
    assert model.save_raw() == reference(BINARY, X, y, w).save_raw()
    np.testing.assert_array_equal(pred, model.predict(X))


# -- training API ------------------------------------------------------------------------------
def _split(seed=5):
    X, y, w = make(seed=seed)
    return (X[:2000], y[:2000], w[:2000]), (X[2000:], y[2000:], w[2000:])


@pytest.mark.parametrize("dask_client", [1, 2], indirect=True, ids=lambda n: f"{n}w")
def test_evals_history(dask_client):
    (X, y, w), (Xv, yv, wv) = _split()
    d = dask_dataset(dask_client, X, y, w, 3)
    dv = dask_dataset(dask_client, Xv, yv, wv, 2)
    params = dict(BINARY, eval_metric=["logloss", "error"])
    out = dgd.train(dask_client, params, d, ROUNDS, evals=[(d, "train"), (dv, "valid")],
                    verbose_eval=False)
    assert set(out) == {"booster", "history", "mode", "restarts"} and out["restarts"] == 0
    assert out["mode"] == ("task" if len(set(d.workers_of_parts())) == 1 else "collective")
    assert isinstance(out["booster"], dgbdt.Booster)
    hist = out["history"]
    assert list(hist) == ["train", "valid"]
    assert all(list(h) == ["logloss", "error"] for h in hist.values())
    assert all(len(v) == ROUNDS and all(isinstance(x, float) for x in v)
               for h in hist.values() for v in h.values())
    ref_hist = {}
    ref = reference(params, X, y, w, evals=[(dgbdt.Dataset(X, label=y, weight=w), "train"),
                                            (dgbdt.Dataset(Xv, label=yv, weight=wv), "valid")],
                    evals_result=ref_hist)
    assert out["booster"].save_raw() == ref.save_raw()
    assert hist == ref_hist           # metrics are exact reductions: the same bits
    assert hist["train"]["logloss"][-1] < hist["train"]["logloss"][0]


@pytest.mark.parametrize("dask_client", [1, 2], indirect=True, ids=lambda n: f"{n}w")
@pytest.mark.parametrize("mode", ["auto", "graph"])
def test_early_stopping(dask_client, mode):
    """Early stopping gives the in-process model in every mode; graph mode runs a round ahead
    of the metrics and drops it after the stop."""
    (X, y, w), (Xv, yv, wv) = _split(seed=6)
    params = dict(BINARY, eta=1.0, max_depth=6)
    d = dask_dataset(dask_client, X, y, w, 3)
    dv = dask_dataset(dask_client, Xv, yv, wv, 3)
    out = dgd.train(dask_client, params, d, 30, evals=[(d, "train"), (dv, "valid")],
                    early_stopping_rounds=2, verbose_eval=False, mode=mode)
    ref_hist = {}
    ref = reference(params, X, y, w, rounds=30,
                    evals=[(dgbdt.Dataset(X, label=y, weight=w), "train"),
                           (dgbdt.Dataset(Xv, label=yv, weight=wv), "valid")],
                    early_stopping_rounds=2, evals_result=ref_hist)
    bst = out["booster"]
    assert ref.num_boosted_rounds() < 30  # it did stop early
    assert bst.best_iteration == ref.best_iteration
    assert bst.best_score == ref.best_score
    assert bst.num_boosted_rounds() == ref.num_boosted_rounds() == bst.best_iteration + 3
    assert out["history"] == ref_hist
    assert bst.save_raw() == ref.save_raw()


@pytest.mark.parametrize("dask_client", [1, 2], indirect=True, ids=lambda n: f"{n}w")
def test_auc_metric(dask_client):
    """auc is not a sum over rows: partitions ship their rows to one task that scores them."""
    (X, y, w), (Xv, yv, wv) = _split(seed=7)
    params = dict(BINARY, eval_metric=["auc"])
    d = dask_dataset(dask_client, X, y, w, 3)
    dv = dask_dataset(dask_client, Xv, yv, None, 3)
    out = dgd.train(dask_client, params, d, ROUNDS, evals=[(d, "train"), (dv, "valid")],
                    verbose_eval=False)
    ref_hist = {}
    reference(params, X, y, w, evals=[(dgbdt.Dataset(X, label=y, weight=w), "train"),
                                      (dgbdt.Dataset(Xv, label=yv), "valid")],
              evals_result=ref_hist)
    for name in ("train", "valid"):
        assert len(out["history"][name]["auc"]) == ROUNDS
        np.testing.assert_allclose(out["history"][name]["auc"], ref_hist[name]["auc"],
                                   rtol=0, atol=1e-12)
    assert 0.5 < out["history"]["valid"]["auc"][-1] < 1.0


def test_more_workers_than_partitions(client4):
    X, y, w = make(seed=8)
    d = dask_dataset(client4, X, y, w, 2)
    assert len(client4.scheduler_info()["workers"]) == 4
    ref = reference(BINARY, X, y, w).save_raw()
    assert dask_model(client4, BINARY, d).save_raw() == ref
    assert dask_model(client4, BINARY, d, mode="graph").save_raw() == ref


def test_single_partition(client2):
    """One partition: the one-task path, with an eval set spread over both workers."""
    (X, y, w), (Xv, yv, wv) = _split(seed=9)
    d = dask_dataset(client2, X, y, w, 1)
    dv = dask_dataset(client2, Xv, yv, wv, 4)
    assert d.part_rows == [2000] and len(set(d.workers_of_parts())) == 1
    ref_hist = {}
    ref = reference(BINARY, X, y, w, evals=[(dgbdt.Dataset(Xv, label=yv, weight=wv), "v")],
                    evals_result=ref_hist).save_raw()
    for mode in ("auto", "graph"):
        out = dgd.train(client2, BINARY, d, ROUNDS, evals=[(dv, "v")], verbose_eval=False,
                        mode=mode)
        assert out["booster"].save_raw() == ref
        np.testing.assert_allclose(out["history"]["v"]["logloss"], ref_hist["v"]["logloss"],
                                   rtol=0, atol=1e-12)


@pytest.mark.parametrize("mode", ["task", "graph"])
def test_verbose_eval_prints(client1, capsys, mode):
    X, y, w = make(n=600)
    d = dask_dataset(client1, X, y, w, 2)
    dgd.train(client1, BINARY, d, 3, evals=[(d, "train")], verbose_eval=True, mode=mode)
    lines = capsys.readouterr().out.strip().splitlines()
    # with processes=False the worker thread prints to this process's (captured) stdout, so the
    # lines appear in both modes
    assert len(lines) == 3
    assert all(line.startswith(f"[{r}]") and "train-logloss:" in line
               for r, line in enumerate(lines))
    dgd.train(client1, BINARY, d, 3, evals=[(d, "train")], verbose_eval=False, mode=mode)
    assert capsys.readouterr().out == ""
    # an int n: every n-th round and the last
    dgd.train(client1, BINARY, d, 4, evals=[(d, "train")], verbose_eval=2, mode=mode)
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split("\t")[0] for line in lines] == ["[0]", "[2]", "[3]"]


def test_callbacks_must_be_training_callbacks(client1):
    X, y, _ = make(n=300)
    d = dask_dataset(client1, X, y, None, 1)
    with pytest.raises(TypeError, match="callbacks must be dgbdt.callback.TrainingCallback"):
        dgd.train(client1, BINARY, d, 1, callbacks=[object()])


# -- predict -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def models():
    """In-process models (binary and softprob) and their training data."""
    X, y, w = make(seed=10)
    out = {}
    for params in (BINARY, PARAMS[2]):
        yy = labels_for(params, y, X)
        out[params["objective"]] = reference(params, X, yy, w, names=NAMES)
    return X, out


def test_predict_dask_array(client2, models):
    X, bsts = models
    Xd = as_dask_array(X, 3)
    for bst in bsts.values():
        pred = dgd.predict(client2, bst, Xd)
        assert isinstance(pred, da.Array)
        assert pred.chunks[0] == sizes(N, 3)
        want = bst.predict(X)
        assert pred.shape == want.shape
        got = computed(client2, pred)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(
            computed(client2, dgd.predict(client2, bst, Xd, output_margin=True)),
            bst.predict(X, output_margin=True))
        leaves = dgd.predict(client2, bst, Xd, pred_leaf=True)
        assert leaves.dtype == np.int32 and leaves.shape == (N, len(bst.trees))
        np.testing.assert_array_equal(computed(client2, leaves), bst.predict(X, pred_leaf=True))
        np.testing.assert_array_equal(
            computed(client2, dgd.predict(client2, bst, Xd, iteration_range=(1, 3))),
            bst.predict(X, iteration_range=(1, 3)))
    # column chunks are merged
    bst = bsts["binary:logistic"]
    pred = dgd.predict(client2, bst, da.from_array(X, chunks=(1000, 4)))
    np.testing.assert_array_equal(computed(client2, pred), bst.predict(X))


def test_predict_puts_the_model_in_the_graph_once(models):
    """The model is one key of the prediction graph, read by every partition's task (as an
    argument it was pickled into each task: 66 ms a copy for 200 trees of depth 8)."""
    X, bsts = models
    bst = bsts["binary:logistic"]
    frame = dd.from_pandas(pd.DataFrame(X, columns=NAMES), npartitions=5)
    for data in (as_dask_array(X, 5), frame):
        graph = dict(dgd.predict(None, bst, data).__dask_graph__())
        held = [k for k, v in graph.items() if v is bst or getattr(v, "value", None) is bst]
        assert len(held) == 1, (type(data).__name__, len(held))


def test_predict_dask_dataset(client2, models):
    X, bsts = models
    # partitions of uneven size, one empty
    Xd = da.from_array(X, chunks=((700, 0, 2300), (F,)))
    d = dgd.DaskDataset(client2, Xd, feature_names=NAMES)
    for bst in bsts.values():
        pred = dgd.predict(client2, bst, d)
        assert isinstance(pred, da.Array)
        assert pred.chunks[0] == (700, 0, 2300)
        np.testing.assert_array_equal(computed(client2, pred), bst.predict(X))
        np.testing.assert_array_equal(
            computed(client2, dgd.predict(client2, bst, d, output_margin=True)),
            bst.predict(X, output_margin=True))
        np.testing.assert_array_equal(
            computed(client2, dgd.predict(client2, bst, d, pred_leaf=True)),
            bst.predict(X, pred_leaf=True))


def test_predict_dask_dataset_base_margin(client2, models):
    X, bsts = models
    bst = bsts["binary:logistic"]
    margin = np.random.default_rng(0).standard_normal(N)
    d = dgd.DaskDataset(client2, as_dask_array(X, 3), base_margin=as_dask_array(margin, 3))
    got = computed(client2, dgd.predict(client2, bst, d, output_margin=True))
    np.testing.assert_array_equal(got, bst.predict(dgbdt.Dataset(X, base_margin=margin),
                                                   output_margin=True))


def test_predict_dask_frame(client2, models):
    X, bsts = models
    ddf, _, _ = as_dask_frame(X, None, None, 3)
    df = pd.DataFrame(X, columns=NAMES)
    bst = bsts["binary:logistic"]
    pred = dgd.predict(client2, bst, ddf)
    assert isinstance(pred, dd.Series)
    assert pred.npartitions == 3
    got = computed(client2, pred)
    assert got.index.equals(df.index)
    np.testing.assert_array_equal(got.to_numpy(), bst.predict(df))
    np.testing.assert_array_equal(
        computed(client2, dgd.predict(client2, bst, ddf, output_margin=True)).to_numpy(),
        bst.predict(df, output_margin=True))

    multi = bsts["multi:softprob"]
    pred = dgd.predict(client2, multi, ddf)
    assert isinstance(pred, dd.DataFrame)
    assert list(pred.columns) == ["0", "1", "2"]
    np.testing.assert_array_equal(computed(client2, pred).to_numpy(), multi.predict(df))
    leaves = dgd.predict(client2, multi, ddf, pred_leaf=True)
    assert isinstance(leaves, dd.DataFrame) and len(leaves.columns) == len(multi.trees)
    np.testing.assert_array_equal(computed(client2, leaves).to_numpy(),
                                  multi.predict(df, pred_leaf=True))


def test_predict_trained_on_dask(client2):
    X, y, w = make(seed=11)
    d = dask_dataset(client2, X, y, w, 3)
    bst = dask_model(client2, BINARY, d)
    np.testing.assert_array_equal(computed(client2, dgd.predict(client2, bst, d)),
                                  bst.predict(X))


def test_predict_errors(client1, models):
    X, bsts = models
    bst = bsts["binary:logistic"]
    with pytest.raises(ValueError, match="data must be 2-D with 6 features; got shape"):
        dgd.predict(client1, bst, as_dask_array(X[:, :5], 2))
    narrow = dgd.DaskDataset(client1, as_dask_array(X[:, :5], 2))
    with pytest.raises(ValueError, match="data has 5 features but the model was trained on 6"):
        dgd.predict(client1, bst, narrow)
    ddf = dd.from_pandas(pd.DataFrame(X[:, :5], columns=NAMES[:5]), npartitions=2)
    with pytest.raises(ValueError, match="data has 5 features but the model was trained on 6"):
        dgd.predict(client1, bst, ddf)
    with pytest.raises(TypeError, match="data must be a DaskDataset, dask array or dask "
                                        "DataFrame; got ndarray"):
        dgd.predict(client1, bst, X)
    with pytest.raises(TypeError, match="booster must be a dgbdt.Booster"):
        dgd.predict(client1, "model", as_dask_array(X, 2))


def test_booster_is_the_same_class():
    assert dgd.Booster is dgbdt.Booster


def test_graph_mode_round_is_one_hop_a_level(monkeypatch):
    """The graph of one round (recorded from DaskSeam.grow_round): per level one task per
    worker, each taking every worker's task of the hop before; depth + 2 hops a round."""
    import pathlib
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
    from plot_graph_mode import record
    W, D = 3, 4
    tasks = record(W, D)
    levels = {k: v for k, v in tasks.items() if v[0] == "_level"}
    assert len(levels) == W * D
    for key, (_, deps) in levels.items():
        before = [d for d in deps if d.startswith(("dgbdt-grad", "dgbdt-hist"))]
        assert len(before) == W, key                # every worker's previous hop
    finishes = [k for k, v in tasks.items() if v[0] == "_finish"]
    assert len(finishes) == W and len(tasks) == W * (D + 2) + 1   # + the tree of worker 0


@pytest.mark.parametrize("weighted", [False, True])
def test_graph_mode_quantile_leaves_are_one_hop_an_exchange(monkeypatch, weighted):
    """A quantile loss's tree: after its levels, one hop per reduction of the leaves' descent
    (dgbdt.objectives.leaf_quantiles.requests: the counts, the weighted totals, 8 key bytes), each task taking
    every worker's task of the hop before; the finish takes the last of them. survival:cox:
    one gather hop after the round's finishes, every worker's rows to every unit."""
    import pathlib
    from dgbdt.objectives.registry import get_objective
    from dgbdt.objectives.leaf_quantiles import requests
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
    from plot_graph_mode import record
    W, D = 2, 3
    tasks = record(W, D, get_objective("reg:absoluteerror", {}), weighted)
    steps = {k: v for k, v in tasks.items() if v[0] in ("descent_start", "descent_step")}
    R = requests(weighted)
    assert R == (10 if weighted else 9) and len(steps) == W * R
    for key, (fn, deps) in steps.items():
        s = int(key.split("-S")[1].split("-")[0])
        want = f"dgbdt-hist-t0-L{D - 1}" if s == 0 else f"dgbdt-quantile-t0-S{s - 1}"
        assert deps[0] == key.split("-x")[0][-2:].replace("w", "unit-w")   # its own unit
        assert sorted(deps[1:]) == [f"{want}-w{i}-x" for i in range(W)], key
    for key, (fn, deps) in tasks.items():
        if fn == "_finish":
            assert sorted(deps[1:]) == [f"dgbdt-quantile-t0-S{R - 1}-w{i}-x" for i in range(W)]
    assert len(tasks) == W * (D + 2 + R) + 1
    cox = record(W, D, get_objective("survival:cox", {}), weighted)
    gathers = {k: v for k, v in cox.items() if v[0] == "gathered"}
    assert len(gathers) == 2 * W and len(cox) == W * (D + 4) + 1   # rounds 0 and 1's
    for key, (_, deps) in gathers.items():
        src = "dgbdt-grad-r0" if "-r0-" in key else "dgbdt-finish-t0"
        assert sorted(deps[1:]) == [f"{src}-w{i}-x" for i in range(W)], key


@pytest.mark.parametrize("params", [
    {"objective": "reg:tweedie", "tweedie_variance_power": 1.3, "max_depth": 4},
    {"objective": "reg:pseudohubererror", "huber_slope": 2.0, "max_depth": 4},
    {"objective": "binary:logistic", "scale_pos_weight": 2.5, "max_depth": 4},
    {"objective": "count:poisson", "max_depth": 4},
], ids=lambda p: p["objective"])
@pytest.mark.parametrize("mode", ["graph", "collective"])
def test_objective_parameters_on_every_worker(client2, params, mode):
    """#16: an objective's own parameters (and count:poisson's max_delta_step) reach the
    workers' gradients and the intercept: the in-process model, byte for byte."""
    X, y, w = make(seed=21)
    y = np.abs(y + np.nan_to_num(X[:, 2])) if params["objective"] != "binary:logistic" else y
    d = dask_dataset(client2, X, y, w, 4)
    params = {**params, "eval_metric": "rmse"}
    assert dask_model(client2, params, d, mode=mode).save_raw() == \
        reference(params, X, y, w).save_raw()


@pytest.mark.parametrize("params", [
    {"objective": "reg:pseudohubererror", "huber_slope": 2.5, "max_depth": 3},
    {"objective": "reg:tweedie", "tweedie_variance_power": 1.2, "max_depth": 3},
    {"objective": "binary:logistic", "eval_metric": ["error@0.3", "logloss"], "max_depth": 3},
], ids=lambda p: p["objective"])
@pytest.mark.parametrize("mode", ["graph", "collective"])
def test_metric_parameters_reach_every_worker(client2, params, mode):
    """mphe's huber_slope, tweedie-nloglik@r and error@t scored on the workers: the
    in-process history, value for value, and its metric names."""
    X, y, w = make(seed=22)
    y = np.abs(y + np.nan_to_num(X[:, 2])) if params["objective"] != "binary:logistic" else y
    Xv, yv, wv = X[:300], y[:300], w[:300]
    d = dask_dataset(client2, X, y, w, 4)
    dv = dask_dataset(client2, Xv, yv, wv, 2)
    ref: dict = {}
    reference(params, X, y, w, evals=[(dgbdt.Dataset(Xv, label=yv, weight=wv), "v")],
              evals_result=ref)
    out = dgd.train(client2, params, d, ROUNDS, evals=[(dv, "v")], verbose_eval=False,
                    mode=mode)
    assert out["history"] == ref
    assert list(ref["v"]) == {"reg:pseudohubererror": ["mphe"],
                              "reg:tweedie": ["tweedie-nloglik@1.2"],
                              "binary:logistic": ["error@0.3", "logloss"]}[params["objective"]]


_QUANTILE_LAYOUTS = [("collective", 2, 5), ("collective", 4, 5), ("task", 1, 5), ("graph", 2, 5),
                     ("graph", 2, 3), ("graph", 1, 4)]
_QUANTILE_LOSSES = [("reg:absoluteerror", {}), ("reg:quantileerror", {"quantile_alpha": 0.8})]


@pytest.mark.parametrize("objective,extra,weighted,mode,n,parts", [
    (obj, extra, weighted, *layout)
    for i, layout in enumerate(_QUANTILE_LAYOUTS)
    for (obj, extra), weighted in zip(_QUANTILE_LOSSES, [i % 2 == 1, i % 2 == 0])])
def test_quantile_losses_on_dask_are_the_in_process_model(_clusters, objective, extra, weighted,
                                                          mode, n, parts):
    """The intercept (the labels' quantile over the partitions) and every leaf (its rows'
    residual quantile over the ranks, or in graph mode over the units, a descent step a task
    hop) found exactly: the in-process model, byte for byte. Every layout with both losses
    and with and without weights, and each loss weighted and not (pairwise: 12 cases)."""
    client = _clusters(n)
    X, y, w = make(seed=24)
    y = y * 3 + np.nan_to_num(X[:, 1]) + np.random.default_rng(0).standard_t(3, len(y))
    w = w if weighted else None
    d = dask_dataset(client, X, y, w, parts)
    params = {"objective": objective, "max_depth": 4, "subsample": 0.8, **extra}
    out = dgd.train(client, params, d, ROUNDS, verbose_eval=False, mode=mode)
    assert out["mode"] == mode
    assert out["booster"].save_raw() == reference(params, X, y, w).save_raw()


def test_graph_mode_quantile_leaves_with_lossguide_and_continued_training(client2):
    """Graph mode's leaf descent after leaf-wise trees (a hop a split; trees that end sooner
    pass the rest through) and from a prior model's margins; survival:cox's gather hop from a
    prior model too: dgbdt.train's models, byte for byte."""
    X, y, w = make(seed=28)
    y = y * 3 + np.nan_to_num(X[:, 1]) + np.random.default_rng(2).standard_t(3, len(y))
    d = dask_dataset(client2, X, y, w, 4)
    params = {"objective": "reg:quantileerror", "quantile_alpha": 0.3,
              "grow_policy": "lossguide", "max_leaves": 6, "max_depth": 0}
    assert dask_model(client2, params, d, mode="graph").save_raw() == \
        reference(params, X, y, w).save_raw()
    t = np.abs(y) + 0.01
    ycox = np.where(np.random.default_rng(3).random(len(t)) < 0.3, -t, t)
    for p in ({"objective": "reg:absoluteerror", "max_depth": 3},
              {"objective": "survival:cox", "max_depth": 3}):
        label = ycox if p["objective"] == "survival:cox" else y
        prior = reference(p, X, label, w, rounds=2)
        want = reference(p, X, label, w, rounds=3, xgb_model=prior)
        got = dask_model(client2, p, dask_dataset(client2, X, label, w, 3), rounds=3,
                         mode="graph", xgb_model=prior)
        assert got.save_raw() == want.save_raw(), p["objective"]


@pytest.mark.parametrize("mode,n", [("collective", 2), ("collective", 4), ("task", 1),
                                    ("graph", 2)])
def test_several_quantiles_on_dask_are_the_in_process_model(_clusters, mode, n):
    """quantile_alpha=[0.2, 0.5, 0.9]: three outputs, each tree's leaves its quantile of the
    residuals over the ranks, the intercept each quantile of the labels over the partitions:
    the in-process model byte for byte, and the quantile metric's history."""
    client = _clusters(n)
    X, y, w = make(seed=25)
    y = y * 3 + np.nan_to_num(X[:, 1]) + np.random.default_rng(1).standard_t(3, len(y))
    d = dask_dataset(client, X, y, w, 5)
    dv = dask_dataset(client, X[:300], y[:300], w[:300], 2)
    params = {"objective": "reg:quantileerror", "quantile_alpha": [0.2, 0.5, 0.9],
              "max_depth": 3, "subsample": 0.8}
    ref: dict = {}
    want = reference(params, X, y, w, evals=[(dgbdt.Dataset(X[:300], label=y[:300],
                                                           weight=w[:300]), "v")],
                     evals_result=ref)
    out = dgd.train(client, params, d, ROUNDS, evals=[(dv, "v")], verbose_eval=False,
                    mode=mode)
    assert out["mode"] == mode
    assert out["booster"].n_outputs == 3
    assert out["booster"].save_raw() == want.save_raw()
    assert out["history"] == ref and list(ref["v"]) == ["quantile"]


@pytest.mark.parametrize("mode,n,kind", [("collective", 2, "array"), ("collective", 4, "frame"),
                                         ("graph", 2, "array"), ("task", 1, "frame")])
def test_aft_on_dask_is_the_in_process_model(_clusters, mode, n, kind):
    """survival:aft's label intervals travel with the partitions (DaskDataset
    label_lower_bound / label_upper_bound): the in-process model's bytes and metric history
    in every mode, from dask arrays or frames."""
    client = _clusters(n)
    X, _, w = make(seed=26)
    rng = np.random.default_rng(26)
    t = rng.exponential(np.exp(0.5 * np.nan_to_num(X[:, 0])))
    u = rng.random(len(t))
    lo = np.where(u < 0.15, 0.0, t)
    hi = np.where(u < 0.15, t, np.where(u < 0.4, np.inf, np.where(u < 0.55, t * 1.5, t)))
    params = {"objective": "survival:aft", "aft_loss_distribution": "logistic",
              "max_depth": 3, "eval_metric": ["aft-nloglik", "interval-regression-accuracy"]}
    ref: dict = {}
    dv = dgbdt.Dataset(X[:300], label_lower_bound=lo[:300], label_upper_bound=hi[:300],
                       feature_names=NAMES if kind == "frame" else None)
    want = dgbdt.train(params, dgbdt.Dataset(X, weight=w, label_lower_bound=lo,
                                             label_upper_bound=hi,
                                             feature_names=NAMES if kind == "frame" else None),
                       ROUNDS,
                       evals=[(dv, "v")], evals_result=ref, verbose_eval=False)
    if kind == "array":
        parts = [as_dask_array(v, 5) for v in (X, w, lo, hi)]
        vparts = [as_dask_array(v, 2) for v in (X[:300], lo[:300], hi[:300])]
        d = dgd.DaskDataset(client, parts[0], weight=parts[1], label_lower_bound=parts[2],
                            label_upper_bound=parts[3])
    else:
        ddf, sw, slo = as_dask_frame(X, w, lo, 5)
        shi = dd.from_pandas(pd.Series(hi), npartitions=5)
        d = dgd.DaskDataset(client, ddf, weight=sw, label_lower_bound=slo,
                            label_upper_bound=shi)
        vparts = [as_dask_array(v, 2) for v in (X[:300], lo[:300], hi[:300])]
    dvd = dgd.DaskDataset(client, vparts[0], label_lower_bound=vparts[1],
                          label_upper_bound=vparts[2])
    out = dgd.train(client, params, d, ROUNDS, evals=[(dvd, "v")], verbose_eval=False,
                    mode=mode)
    assert out["mode"] == mode
    assert out["booster"].save_raw() == want.save_raw()
    assert out["history"] == ref


@pytest.mark.parametrize("mode,n,weighted,parts", [
    ("collective", 2, True, 5), ("collective", 4, False, 5), ("task", 1, True, 5),
    ("auto", 2, False, 5), ("graph", 2, True, 5), ("graph", 2, False, 3),
    ("graph", 1, True, 4)])
def test_cox_on_dask_is_the_in_process_model(_clusters, mode, n, weighted, parts):
    """survival:cox's risk sets span every worker: the intercept from every partition's
    labels in dataset order, and each round's gradients from every rank's (or in graph mode
    every unit's, a task hop a round) (index, label, margin, weight) rows gathered: the
    in-process model's bytes and cox-nloglik history (ties in the times included; uneven
    partitions)."""
    client = _clusters(n)
    X, _, w = make(seed=27)
    rng = np.random.default_rng(27)
    t = np.round(rng.exponential(np.exp(-0.5 * np.nan_to_num(X[:, 0]))), 2) + 0.01
    y = np.where(rng.random(len(t)) < 0.3, -t, t)
    w = w if weighted else None
    params = {"objective": "survival:cox", "max_depth": 3, "subsample": 0.8}
    ref: dict = {}
    want = reference(params, X, y, w, evals=[(dgbdt.Dataset(X[:300], label=y[:300]), "v")],
                     evals_result=ref)
    d = dask_dataset(client, X, y, w, parts)
    dv = dask_dataset(client, X[:300], y[:300], None, 2)
    out = dgd.train(client, params, d, ROUNDS, evals=[(dv, "v")], verbose_eval=False,
                    mode=mode)
    assert out["mode"] == ("collective" if mode == "auto" else mode)
    assert out["booster"].save_raw() == want.save_raw()
    assert out["history"] == ref


def test_aft_on_dask_errors(client2):
    X, y, w = make(n=400, seed=23)
    Xd, yd = as_dask_array(X, 2), as_dask_array(y + 1, 2)
    with pytest.raises(ValueError, match="pass both label_lower_bound and label_upper_bound"):
        dgd.DaskDataset(client2, Xd, label_lower_bound=yd)
    with pytest.raises(ValueError, match="pass label or the label bounds"):
        dgd.DaskDataset(client2, Xd, yd, label_lower_bound=yd, label_upper_bound=yd)
    with pytest.raises(ValueError, match="dtrain needs label_lower_bound and label_upper_bound"):
        dgd.train(client2, {"objective": "survival:aft"}, dgd.DaskDataset(client2, Xd, yd), 1,
                  verbose_eval=False)
    bad = dgd.DaskDataset(client2, Xd, label_lower_bound=yd, label_upper_bound=yd - 0.5)
    with pytest.raises(ValueError, match="label_upper_bound < label_lower_bound"):
        dgd.train(client2, {"objective": "survival:aft"}, bad, 1, verbose_eval=False)


def test_graph_mode_fetches_again_a_result_lost_in_a_timeout_race(client2, monkeypatch):
    """On Python 3.11 a fetch under a timeout that completes as the timeout fires can end in
    distributed's sync() as UnboundLocalError (seen once in CI on a loaded machine): graph
    mode's watched fetch treats it as the timeout it is and fetches again."""
    import types

    from distributed import Future

    from dgbdt.dask.graph import DaskSeam
    fut = client2.submit(lambda: 42, pure=False)
    assert fut.result() == 42
    calls, original = [], Future.result

    def racing(self, timeout=None):
        calls.append(timeout)
        if len(calls) == 1:
            raise UnboundLocalError("cannot access local variable 'result'")
        return original(self, timeout=timeout)
    monkeypatch.setattr(Future, "result", racing)
    seam = types.SimpleNamespace(_submitted=lambda items: items, wait=lambda items: None)
    assert DaskSeam.result(seam, [fut]) == [42]
    assert DaskSeam.result(seam, fut) == 42
    assert len(calls) == 3


def test_a_summary_a_worker_is_the_summary_of_all_rows(client2):
    """DaskDataset's one summary a holding worker (what a GPU dataset's sketch submits:
    dgbdt.dask.parts.parts_summary of each worker's parts, here host parts, merged there)
    covers every row once: merged, they are the in-process summary, weighted."""
    from dgbdt.data.sketch import merge_many, summarize_weighted, weight_scale
    X, y, w = make(seed=21)
    d = dgd.DaskDataset(client2, as_dask_array(X, 7), as_dask_array(y, 7),
                        weight=as_dask_array(w, 7))
    holders = d.holders()
    scale = weight_scale(d.max_weight, d.num_row)
    futs = d._worker_summaries(holders, scale, 64)
    assert len(futs) == len(set(holders))
    got = merge_many(client2.gather(futs), 64)
    assert got.equals(summarize_weighted(X, w, scale, 64)) and got.n_rows == N
