"""Learning to rank (issue #16 item 2): rank:ndcg / rank:pairwise / rank:map against XGBoost on
identical bins (topk pairs: XGBoost's gradients), the ranking metrics on the same predictions,
the query-id checks, the mean method's determinism, and the estimators."""
import numpy as np
import pytest

import dgbdt
from dgbdt.metrics.registry import get_metric
from test_compare_xgboost import assert_same_trees

xgb = pytest.importorskip("xgboost")


def rank_data(n_queries=60, seed=0, binary=False, f=5, levels=10):
    """Queries of 1 to 49 rows (query 3 all irrelevant), graded relevance 0-4 (or 0/1),
    features with fewer distinct values than max_bin."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 50, size=n_queries)
    qid = np.repeat(np.arange(n_queries) * 3 + 7, sizes)      # sorted, not 0..Q-1
    n = qid.shape[0]
    X = rng.integers(0, levels, size=(n, f)).astype(np.float32)
    signal = X[:, 0] - 0.5 * X[:, 1] + rng.normal(size=n)
    y = np.clip(np.round(signal / 3 + 1), 0, 4).astype(np.float32)
    y[qid == qid[np.cumsum(sizes)[2]]] = 0                   # an all-irrelevant query
    if binary:
        y = (y > 1).astype(np.float32)
    return X, y, qid


def fit_both(params, X, y, qid, rounds, weight=None):
    res_d, res_x = {}, {}
    d = dgbdt.Dataset(X, label=y, qid=qid, weight=weight)
    booster = dgbdt.train(params, d, rounds, evals=[(d, "t")], evals_result=res_d,
                          verbose_eval=False)
    dx = xgb.DMatrix(X, label=y, qid=qid, weight=weight)
    bst = xgb.train({**params, "tree_method": "hist"}, dx, rounds, evals=[(dx, "t")],
                    evals_result=res_x, verbose_eval=False)
    return booster, bst, res_d, res_x


@pytest.mark.parametrize("objective,extra", [
    ("rank:ndcg", {}),
    ("rank:ndcg", {"lambdarank_num_pair_per_sample": 4, "ndcg_exp_gain": False}),
    ("rank:pairwise", {}),
    ("rank:pairwise", {"lambdarank_normalization": False,
                       "lambdarank_score_normalization": False}),
    ("rank:map", {}),
])
@pytest.mark.slow  # XGBoost trains every case
def test_same_trees_as_xgboost(objective, extra):
    X, y, qid = rank_data(binary=objective == "rank:map")
    params = {"objective": objective, "max_depth": 4, "eta": 0.3, **extra}
    booster, bst, res_d, res_x = fit_both(params, X, y, qid, 5)
    assert float(booster.base_margin[0]) == 0.0     # XGBoost's: float noise, |.| < 1e-8
    assert_same_trees(booster, bst)
    np.testing.assert_allclose(booster.predict(X), bst.predict(xgb.DMatrix(X)), atol=1e-5)
    assert list(res_d["t"]) == list(res_x["t"])      # the same default metric name
    name = list(res_x["t"])[0]
    np.testing.assert_allclose(res_d["t"][name], res_x["t"][name], rtol=1e-12)


@pytest.mark.parametrize("objective", ["rank:ndcg", "rank:pairwise", "rank:map"])
def test_query_weights_same_trees_as_xgboost(objective):
    """One weight per query (XGBoost's): each query's gradients times its weight and
    n_queries / sum of the weights; the metrics weigh queries alike."""
    X, y, qid = rank_data(n_queries=40, seed=15, binary=objective == "rank:map")
    w = np.random.default_rng(15).uniform(0.2, 3.0, size=40).astype(np.float32)
    params = {"objective": objective, "max_depth": 3, "eta": 0.3}
    booster, bst, res_d, res_x = fit_both(params, X, y, qid, 4, weight=w)
    assert_same_trees(booster, bst)
    name = list(res_x["t"])[0]
    np.testing.assert_allclose(res_d["t"][name], res_x["t"][name], rtol=1e-12)


def xgb_eval(metrics, y, pred, qid, weight=None):
    """XGBoost's metric values on the predictions ``pred`` (base margins of a 0-tree model)."""
    d = xgb.DMatrix(np.zeros((len(y), 1), np.float32), label=y, qid=qid, base_margin=pred,
                    weight=weight)
    bst = xgb.train({"objective": "rank:pairwise", "eval_metric": metrics}, d, 0)
    out = {}
    for item in bst.eval(d).split("\t")[1:]:
        key, value = item.rsplit(":", 1)
        out[key.split("-", 1)[1]] = float(value)
    return out


@pytest.mark.parametrize("binary", [False, True])
def test_metrics_equal_xgboost(binary):
    rng = np.random.default_rng(1)
    _, y, qid = rank_data(n_queries=50, seed=1, binary=binary)
    pred = rng.integers(0, 6, size=len(y)).astype(np.float32)      # many ties
    names = ["ndcg", "ndcg@3", "ndcg-", "ndcg@5-", "ndcg@40"]     # queries up to 49 rows
    if binary:
        names += ["map", "map@4", "map-", "map@2-", "map@45", "pre", "pre@3", "pre@40"]
    theirs = xgb_eval(names, y, pred, qid)
    for name in names:
        m = get_metric(name)
        assert m.value(m.query_summary(y, pred, qid)) == pytest.approx(theirs[name],
                                                                       rel=1e-14), name
    qw = rng.uniform(0.1, 2.0, size=50).astype(np.float32)        # one weight per query
    theirs = xgb_eval(names, y, pred, qid, qw)
    w = dgbdt.Dataset(np.zeros((len(y), 1)), label=y, qid=qid, weight=qw).weight
    for name in names:
        m = get_metric(name)
        assert m.value(m.query_summary(y, pred, qid, w)) == pytest.approx(theirs[name],
                                                                          rel=1e-14), name


def test_all_irrelevant_query_scores():
    y = np.zeros(4, np.float32)
    p = np.arange(4, dtype=np.float32)
    q = np.zeros(4, np.int64)
    for name, want in [("ndcg", 1.0), ("ndcg-", 0.0), ("map@2", 1.0), ("map-", 0.0),
                       ("pre@2", 0.0)]:
        m = get_metric(name)
        assert m.value(m.query_summary(y, p, q)) == want, name


def test_metric_partition_exact():
    """Per-query values summed exactly: any split of whole queries merges to the same bits."""
    _, y, qid = rank_data(n_queries=40, seed=2)
    pred = np.random.default_rng(2).normal(size=len(y)).astype(np.float32)
    m = get_metric("ndcg@10")
    whole = m.value(m.query_summary(y, pred, qid))
    cut = int(np.flatnonzero(np.diff(qid))[17]) + 1
    parts = m.merge(m.query_summary(y[cut:], pred[cut:], qid[cut:]),
                    m.query_summary(y[:cut], pred[:cut], qid[:cut]))
    assert m.value(parts) == whole


def test_group_equals_qid_and_pages():
    """group= (sizes) trains as qid=; pages that cut queries change nothing (the gradients
    are computed over the seam's rows at once)."""
    X, y, qid = rank_data(n_queries=30, seed=3)
    _, sizes = np.unique(qid, return_counts=True)
    params = {"objective": "rank:ndcg", "max_depth": 3}
    a = dgbdt.train(params, dgbdt.Dataset(X, label=y, qid=qid), 3)
    b = dgbdt.train(params, dgbdt.Dataset(X, label=y, group=sizes, page_rows=97), 3)
    assert a.save_raw() == b.save_raw()


def test_mean_pairs_deterministic_and_seeded():
    X, y, qid = rank_data(n_queries=30, seed=4)
    params = {"objective": "rank:ndcg", "lambdarank_pair_method": "mean",
              "lambdarank_num_pair_per_sample": 2, "max_depth": 3}
    d = dgbdt.Dataset(X, label=y, qid=qid)
    a = dgbdt.train(params, d, 3)
    b = dgbdt.train(params, dgbdt.Dataset(X, label=y, qid=qid, page_rows=101), 3)
    c = dgbdt.train({**params, "seed": 5}, d, 3)
    assert a.save_raw() == b.save_raw()
    assert a.save_raw() != c.save_raw()


@pytest.mark.parametrize("objective", ["rank:ndcg", "rank:map"])
def test_mean_default_metric_as_xgboost(objective):
    """With mean pairs the default metric is named without @k: rank:ndcg's is over whole
    queries (XGBoost configures it from the objective), rank:map's truncated at 32; the same
    values as XGBoost's on the same predictions (queries of up to 49 rows)."""
    X, y, qid = rank_data(n_queries=40, seed=6, binary=objective == "rank:map")
    params = {"objective": objective, "lambdarank_pair_method": "mean", "max_depth": 3}
    d = dgbdt.Dataset(X, label=y, qid=qid)
    res = {}
    booster = dgbdt.train(params, d, 2, evals=[(d, "t")], evals_result=res, verbose_eval=False)
    pred = booster.predict(X)
    dx = xgb.DMatrix(X, label=y, qid=qid, base_margin=pred)
    bst = xgb.train({**params, "tree_method": "hist"}, dx, 0)
    key, value = bst.eval(dx, "t").split("\t")[1].rsplit(":", 1)
    name = key.split("-", 1)[1]
    assert [name] == list(res["t"])
    m = dgbdt.objectives.registry.get_objective(objective, params).default_metric
    m = get_metric(m)
    assert m.value(m.query_summary(y, pred, qid)) == pytest.approx(float(value), rel=1e-14)
    wrong = get_metric(name)            # the explicit name: truncated at 32
    if objective == "rank:ndcg":
        assert wrong.value(wrong.query_summary(y, pred, qid)) != pytest.approx(float(value))


def test_mean_pair_draws_differ_by_round_and_query():
    from dgbdt.kernels.cpu_rank import pair_draw
    draws = {(e, q): [int(pair_draw(np.uint64(0), np.uint64(e), np.uint64(q), np.int64(c), 1000))
                      for c in range(8)] for e in range(3) for q in range(3)}
    assert len({tuple(v) for v in draws.values()}) == 9
    assert all(0 <= x < 1000 for v in draws.values() for x in v)


def test_errors():
    X, y, qid = rank_data(n_queries=10, seed=5)
    with pytest.raises(ValueError, match="must be sorted.*sort the rows by qid"):
        dgbdt.Dataset(X, label=y, qid=qid[::-1])
    with pytest.raises(ValueError, match="needs query ids: pass qid="):
        dgbdt.train({"objective": "rank:ndcg"}, dgbdt.Dataset(X, label=y), 1)
    with pytest.raises(ValueError, match="group sizes sum to"):
        dgbdt.Dataset(X, label=y, group=[3, 4])
    with pytest.raises(ValueError, match="binary"):
        dgbdt.train({"objective": "rank:map"}, dgbdt.Dataset(X, label=y, qid=qid), 1)
    with pytest.raises(ValueError, match="one weight per query .10 queries., not 3 values"):
        dgbdt.Dataset(X, label=y, qid=qid, weight=np.ones(3))
    with pytest.raises(ValueError, match="lambdarank_pair_method"):
        dgbdt.train({"objective": "rank:ndcg", "lambdarank_pair_method": "all"},
                    dgbdt.Dataset(X, label=y, qid=qid), 1)


# -- Dask --------------------------------------------------------------------------------------
def query_chunks(qid, parts):
    """Row chunks of about ``parts`` partitions cut at query boundaries."""
    starts = np.flatnonzero(np.diff(qid)) + 1
    cuts = [int(starts[np.searchsorted(starts, c)]) for c in
            np.linspace(0, len(qid), parts + 1)[1:-1]]
    edges = [0, *sorted(set(cuts)), len(qid)]
    return tuple(b - a for a, b in zip(edges, edges[1:]))


def dask_rank_dataset(client, X, y, qid, chunks):
    da = pytest.importorskip("dask.array")
    from dgbdt.dask import DaskDataset
    return DaskDataset(client, da.from_array(X, chunks=(chunks, X.shape[1])),
                       da.from_array(y, chunks=(chunks,)), qid=da.from_array(qid, chunks=(chunks,)))


RANK_DASK = {"objective": "rank:ndcg", "max_depth": 3, "eta": 0.3,
             "lambdarank_pair_method": "mean", "lambdarank_num_pair_per_sample": 2,
             "eval_metric": ["ndcg@5", "map-"]}


def _reference(X, y, qid, rounds=3, params=RANK_DASK):
    d = dgbdt.Dataset(X, label=y, qid=qid)
    res = {}
    b = dgbdt.train(params, d, rounds, evals=[(d, "t")], evals_result=res, verbose_eval=False)
    return b, res


@pytest.mark.parametrize("mode,parts", [("task", 1), ("task", 3), ("graph", 1), ("graph", 4),
                                        ("collective", 3)])
def test_dask_one_worker_modes_equal_in_process(client1, mode, parts):
    from dgbdt.dask import train
    X, y, qid = rank_data(n_queries=30, seed=7)
    y = (y > 1).astype(np.float32)              # map- needs binary labels
    ref, res = _reference(X, y, qid)
    d = dask_rank_dataset(client1, X, y, qid, query_chunks(qid, parts))
    out = train(client1, RANK_DASK, d, 3, evals=[(d, "t")], mode=mode, verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()
    assert out["history"] == res


@pytest.mark.parametrize("mode", ["graph", "collective"])
def test_dask_workers_and_partitions_equal_in_process(client4, mode):
    from dgbdt.dask import train
    X, y, qid = rank_data(n_queries=30, seed=8)
    y = (y > 1).astype(np.float32)
    ref, res = _reference(X, y, qid)
    d = dask_rank_dataset(client4, X, y, qid, query_chunks(qid, 6))
    ev = dask_rank_dataset(client4, X, y, qid, query_chunks(qid, 5))
    out = train(client4, RANK_DASK, d, 3, evals=[(ev, "t")], mode=mode, verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()
    assert out["history"] == res


@pytest.mark.parametrize("mode", ["graph", "collective"])
def test_dask_query_weights_equal_in_process(client4, mode):
    """The weight normalization n_queries / sum of weights is the whole set's on every worker
    (graph: computed by the client; collective: reduced over the ranks)."""
    from dgbdt.dask import DaskDataset, train
    da = pytest.importorskip("dask.array")
    X, y, qid = rank_data(n_queries=30, seed=17)
    qw = np.random.default_rng(17).uniform(0.2, 3.0, size=30)
    d = dgbdt.Dataset(X, label=y, qid=qid, weight=qw)
    params = {"objective": "rank:ndcg", "max_depth": 3, "eval_metric": ["ndcg@5", "ndcg-"]}
    res = {}
    ref = dgbdt.train(params, d, 3, evals=[(d, "t")], evals_result=res, verbose_eval=False)
    c = query_chunks(qid, 6)
    dd = DaskDataset(client4, da.from_array(X, chunks=(c, X.shape[1])),
                     da.from_array(y, chunks=(c,)), da.from_array(d.weight, chunks=(c,)),
                     qid=da.from_array(qid, chunks=(c,)))
    out = train(client4, params, dd, 3, evals=[(dd, "t")], mode=mode, verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()
    assert out["history"] == res


def test_dask_errors(client2):
    from dgbdt.dask import DaskDataset, train
    da = pytest.importorskip("dask.array")
    X, y, qid = rank_data(n_queries=10, seed=9)
    cut = int(np.flatnonzero(np.diff(qid))[3]) + 3          # inside a query
    chunks = (cut, len(qid) - cut)
    with pytest.raises(ValueError, match=r"query id \d+ has rows in partitions 0, 1.*sort "
                                         "and repartition by qid"):
        dask_rank_dataset(client2, X, y, qid, chunks)
    with pytest.raises(ValueError, match=r"qid must be sorted .*row \d+ of the dataset "
                                         r"\(row \d+ of partition 1\)"):
        q = qid.copy()
        q[cut + 1:] = q[cut + 1:][::-1]
        dask_rank_dataset(client2, X, y, q, chunks)
    plain = DaskDataset(client2, da.from_array(X, chunks=(chunks, 5)),
                        da.from_array(y, chunks=(chunks,)))
    with pytest.raises(ValueError, match="needs query ids: pass qid= to DaskDataset"):
        train(client2, {"objective": "rank:pairwise"}, plain, 1)
    with pytest.raises(ValueError, match="eval set 'v': the ranking metric 'ndcg@3' needs query "
                                         "ids on Dask"):
        train(client2, {"objective": "reg:squarederror", "eval_metric": "ndcg@3"}, plain, 1,
              evals=[(plain, "v")])


# -- estimators --------------------------------------------------------------------------------
def test_ranker_as_xgbranker():
    X, y, qid = rank_data(n_queries=40, seed=10)
    Xv, yv, qv = rank_data(n_queries=15, seed=11)
    kw = dict(n_estimators=4, max_depth=3, learning_rate=0.3)
    ours = dgbdt.GBDTRanker(**kw).fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])
    theirs = xgb.XGBRanker(**kw, tree_method="hist").fit(X, y, qid=qid, eval_set=[(Xv, yv)],
                                                         eval_qid=[qv], verbose=False)
    assert_same_trees(ours.get_booster(), theirs.get_booster())
    np.testing.assert_allclose(ours.predict(Xv), theirs.predict(Xv), atol=1e-5)
    np.testing.assert_allclose(ours.evals_result()["validation_0"]["ndcg@32"],
                               theirs.evals_result()["validation_0"]["ndcg@32"], rtol=1e-12)
    _, sizes = np.unique(qid, return_counts=True)
    by_group = dgbdt.GBDTRanker(**kw).fit(X, y, group=sizes)
    assert by_group.get_booster().save_raw() == ours.get_booster().save_raw()
    with pytest.raises(ValueError, match="needs the query of every row"):
        dgbdt.GBDTRanker().fit(X, y)
    with pytest.raises(ValueError, match="eval_set pair 0 needs its queries"):
        dgbdt.GBDTRanker().fit(X, y, qid=qid, eval_set=[(Xv, yv)])


def test_dask_ranker_equals_in_process(client2):
    from dgbdt.dask import DaskGBDTRanker
    da = pytest.importorskip("dask.array")
    X, y, qid = rank_data(n_queries=30, seed=12)
    chunks = query_chunks(qid, 4)
    Xd, yd = da.from_array(X, chunks=(chunks, X.shape[1])), da.from_array(y, chunks=(chunks,))
    qd = da.from_array(qid, chunks=(chunks,))
    kw = dict(n_estimators=3, max_depth=3, objective="rank:pairwise")
    ours = DaskGBDTRanker(**kw)
    ours.client = client2
    ours.fit(Xd, yd, qid=qd, eval_set=[(Xd, yd)], eval_qid=[qd])
    ref = dgbdt.GBDTRanker(**kw).fit(X, y, qid=qid, eval_set=[(X, y)], eval_qid=[qid])
    assert ours.get_booster().save_raw() == ref.get_booster().save_raw()
    assert ours.evals_result() == ref.evals_result()
    np.testing.assert_array_equal(client2.compute(ours.predict(Xd)).result(), ref.predict(X))


def test_compat_names():
    import dgbdt.compat.xgboost as cx
    X, y, qid = rank_data(n_queries=12, seed=13)
    params = {"objective": "rank:pairwise", "max_depth": 2}
    ours = cx.train(params, cx.DMatrix(X, label=y, qid=qid), 2)
    assert ours.save_raw("dgbdt") == dgbdt.train(params, dgbdt.Dataset(X, label=y, qid=qid),
                                                 2).save_raw()
    assert issubclass(cx.XGBRanker, dgbdt.GBDTRanker)
    assert issubclass(cx.dask.DaskXGBRanker, dgbdt.dask.DaskGBDTRanker)


def test_xgboost_format_round_trip(tmp_path):
    X, y, qid = rank_data(n_queries=12, seed=14)
    booster = dgbdt.train({"objective": "rank:ndcg", "max_depth": 3},
                          dgbdt.Dataset(X, label=y, qid=qid), 3)
    path = str(tmp_path / "rank.json")
    booster.save_model(path, format="xgboost")
    bst = xgb.Booster(model_file=path)
    np.testing.assert_allclose(bst.predict(xgb.DMatrix(X)), booster.predict(X), atol=1e-6)
    back = dgbdt.load_model(path)
    assert back.objective.name == "rank:ndcg"
    np.testing.assert_array_equal(back.predict(X), booster.predict(X))


def test_cv_folds_of_whole_queries():
    X, y, qid = rank_data(n_queries=20, seed=16)
    res = dgbdt.cv({"objective": "rank:ndcg", "max_depth": 2}, dgbdt.Dataset(X, label=y, qid=qid),
                   2, nfold=3, as_pandas=False)
    assert sorted(res) == ["test-ndcg@32-mean", "test-ndcg@32-std", "train-ndcg@32-mean",
                           "train-ndcg@32-std"]
    assert all(0 < v <= 1 for v in res["test-ndcg@32-mean"])


def test_save_binary_keeps_queries(tmp_path):
    X, y, qid = rank_data(n_queries=8, seed=18)
    w = np.arange(1, 9, dtype=np.float64)
    d = dgbdt.Dataset(X, label=y, qid=qid, weight=w)
    d.save_binary(str(tmp_path / "r.dgbdt"))
    back = dgbdt.Dataset.load_binary(str(tmp_path / "r.dgbdt"))
    np.testing.assert_array_equal(back.qid, qid)
    np.testing.assert_array_equal(back.weight, d.weight)


@pytest.mark.parametrize("unbiased", [False, True])
@pytest.mark.parametrize("method", [0, 1])
def test_gradients_same_for_any_thread_count(method, unbiased):
    """Chunks of whole queries per thread: the same gradients (and, debiased, the same
    per-row cost terms of the position-bias update) for 1, 2 or 3 threads."""
    from dgbdt.data.queries import group_pointers
    from dgbdt.kernels.cpu_rank import lambda_gradients_threaded
    rng = np.random.default_rng(19)
    qid = np.repeat(np.arange(3000), rng.integers(1, 50, size=3000))
    gptr, ids = group_pointers(qid)
    n = qid.shape[0]
    assert n > 65536
    pred = rng.normal(size=n).astype(np.float32)
    label = rng.integers(0, 5, size=n).astype(np.float32)
    qw = np.ones(3000, np.float32)
    ti, tj = rng.uniform(0.3, 1.2, size=8), rng.uniform(0.3, 1.2, size=8)
    outs = []
    for threads in (1, 2, 3):
        g, h = np.empty(n, np.float32), np.empty(n, np.float32)
        li, lj = np.full(n, np.nan), np.full(n, np.nan)
        lambda_gradients_threaded(0, method, 8, True, True, True, np.uint64(1), np.uint64(2),
                                  gptr, ids.view(np.uint64), pred, label, g, h, qw, 1.0,
                                  threads, **({"bias": (ti, tj, li, lj)} if unbiased else {}))
        outs.append((g, h, li, lj) if unbiased else (g, h))
    if unbiased:
        assert (outs[0][2] > 0).any() and np.isfinite(outs[0][2]).all()
    for out in outs[1:]:
        for x, y in zip(out, outs[0]):
            np.testing.assert_array_equal(x, y)


def test_early_stopping_maximizes_ndcg_as_xgboost():
    X, y, qid = rank_data(n_queries=40, seed=20)
    Xv, yv, qv = rank_data(n_queries=20, seed=21)
    params = {"objective": "rank:ndcg", "max_depth": 4, "eta": 0.5, "eval_metric": "ndcg@5"}
    ours = dgbdt.train(params, dgbdt.Dataset(X, label=y, qid=qid), 30,
                       evals=[(dgbdt.Dataset(Xv, label=yv, qid=qv), "v")],
                       early_stopping_rounds=3, verbose_eval=False)
    theirs = xgb.train({**params, "tree_method": "hist"}, xgb.DMatrix(X, label=y, qid=qid), 30,
                       evals=[(xgb.DMatrix(Xv, label=yv, qid=qv), "v")],
                       early_stopping_rounds=3, verbose_eval=False)
    assert ours.best_iteration == theirs.best_iteration < 29
    assert ours.best_score == pytest.approx(theirs.best_score, rel=1e-12)


@pytest.mark.slow  # runs examples/rank.py
def test_example_runs():
    """examples/rank.py: DaskGBDTRanker on 2 workers = the in-process ranker (exit 0)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, str(root / "examples" / "rank.py"), "--queries", "160",
                           "--rounds", "3"], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "same bytes: True" in proc.stdout
