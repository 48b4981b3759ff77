"""Position-debiased LambdaMART (``lambdarank_unbiased=True``, dgbdt.objectives.rank_bias): XGBoost's trees,
metric history and position-bias estimates on identical bins; the kernel's thread-count
invariance; Dask collective and task modes give the in-process model's bytes; the refusals."""
import json

import numpy as np
import pytest

import dgbdt
from test_compare_xgboost import assert_same_trees
from test_rank import dask_rank_dataset, fit_both, query_chunks, rank_data

xgb = pytest.importorskip("xgboost")

UNBIASED = {"max_depth": 3, "eta": 0.3, "lambdarank_unbiased": True}


@pytest.mark.parametrize("objective,extra", [
    ("rank:ndcg", {}),
    ("rank:ndcg", {"lambdarank_num_pair_per_sample": 6, "lambdarank_bias_norm": 2.0,
                   "ndcg_exp_gain": False}),
    ("rank:pairwise", {"lambdarank_bias_norm": 0.5}),
    ("rank:map", {}),
])
def test_same_trees_and_bias_as_xgboost(objective, extra):
    """Same trees and metrics as XGBoost, and the estimates t+ / t- after the last round equal
    XGBoost's (its save_config, float32) to float32 precision."""
    X, y, qid = rank_data(n_queries=40, seed=30, binary=objective == "rank:map")
    params = {"objective": objective, **UNBIASED, **extra}
    booster, bst, res_d, res_x = fit_both(params, X, y, qid, 4)
    assert_same_trees(booster, bst)
    name = list(res_x["t"])[0]
    assert list(res_d["t"]) == list(res_x["t"])
    np.testing.assert_allclose(res_d["t"][name], res_x["t"][name], rtol=1e-12)
    theirs = json.loads(bst.save_config())["learner"]["objective"]
    for key in ("ti+", "tj-"):
        want = np.array(theirs[key], dtype=np.float64)
        assert booster.position_bias[key].shape == want.shape
        assert np.ptp(want) > 0.05                 # the estimates moved away from 1
        np.testing.assert_allclose(booster.position_bias[key], want, rtol=2e-6)
    # the debiasing changes the model (else this test would not see it missing)
    biased = dgbdt.train({**params, "lambdarank_unbiased": False},
                         dgbdt.Dataset(X, label=y, qid=qid), 4)
    assert biased.save_raw() != booster.save_raw()


def test_query_weights_same_trees_as_xgboost():
    X, y, qid = rank_data(n_queries=30, seed=31)
    w = np.random.default_rng(31).uniform(0.2, 3.0, size=30).astype(np.float32)
    booster, bst, res_d, res_x = fit_both({"objective": "rank:ndcg", **UNBIASED}, X, y, qid, 3,
                                          weight=w)
    assert_same_trees(booster, bst)
    np.testing.assert_allclose(res_d["t"]["ndcg@32"], res_x["t"]["ndcg@32"], rtol=1e-12)


def test_mean_pairs_track_the_longest_query_and_are_deterministic():
    """With mean pairs min(longest query, 32) positions are tracked (XGBoost's; its draws
    differ, so no tree parity); pages that cut queries change nothing."""
    X, y, qid = rank_data(n_queries=30, seed=32)
    ids, sizes = np.unique(qid, return_counts=True)
    keep = np.isin(qid, ids[sizes < 25])                        # queries of < 25 rows
    X, y, qid = X[keep], y[keep], qid[keep]
    longest = int(np.unique(qid, return_counts=True)[1].max())
    assert longest < 32
    params = {"objective": "rank:ndcg", **UNBIASED, "lambdarank_pair_method": "mean",
              "lambdarank_num_pair_per_sample": 2}
    a = dgbdt.train(params, dgbdt.Dataset(X, label=y, qid=qid), 3)
    b = dgbdt.train(params, dgbdt.Dataset(X, label=y, qid=qid, page_rows=53), 3)
    assert a.save_raw() == b.save_raw()
    assert a.position_bias["ti+"].shape == (longest,)
    bst = xgb.train({**params, "tree_method": "hist"}, xgb.DMatrix(X, label=y, qid=qid), 1)
    assert len(json.loads(bst.save_config())["learner"]["objective"]["ti+"]) == longest


def test_errors(tmp_path):
    X, y, qid = rank_data(n_queries=10, seed=34)
    d = dgbdt.Dataset(X, label=y, qid=qid)
    params = {"objective": "rank:ndcg", **UNBIASED}
    dgbdt.train(params, d, 2)
    with pytest.raises(ValueError, match="with checkpoint_dir is not supported yet"):
        dgbdt.train(params, d, 2, checkpoint_dir=str(tmp_path / "ck"))
    with pytest.raises(ValueError, match="trains on the CPU for now.*device='cpu'"):
        dgbdt.train({**params, "device": "cuda"}, d, 2)
    with pytest.raises(ValueError, match="lambdarank_bias_norm"):
        dgbdt.train({**params, "lambdarank_bias_norm": -1.0}, d, 1)
    # a biased model continues as before
    biased = dgbdt.train({"objective": "rank:ndcg"}, d, 2)
    dgbdt.train({"objective": "rank:ndcg"}, d, 1, xgb_model=biased)


def test_continued_training_equals_uninterrupted():
    """The model keeps the estimates (and their round count) in its file: 4 + 4 continued
    rounds (from the Booster or its saved bytes) give the 8-round model's bytes."""
    X, y, qid = rank_data(n_queries=20, seed=34)
    d = dgbdt.Dataset(X, label=y, qid=qid)
    params = {"objective": "rank:ndcg", **UNBIASED}
    full, half = dgbdt.train(params, d, 8), dgbdt.train(params, d, 4)
    assert json.loads(half.save_raw())["learner"]["position_bias"]["rounds"] == 4
    for start in (half, dgbdt.load_model(half.save_raw())):
        assert dgbdt.train(params, d, 4, xgb_model=start).save_raw() == full.save_raw()
    # without the estimates (a slice keeps none): XGBoost's restart from 1, with a warning
    with pytest.warns(UserWarning, match="restart from 1.*differ from an uninterrupted"):
        other = dgbdt.train(params, d, 4, xgb_model=half[0:4])
    assert other.save_raw() != full.save_raw()
    # a biased model's file has no such field (its bytes as before)
    assert "position_bias" not in dgbdt.train({"objective": "rank:ndcg"}, d, 1).save_raw()


def test_compat_ranker_continues(tmp_path):
    import dgbdt.compat.xgboost as cxgb
    X, y, qid = rank_data(n_queries=20, seed=38)
    kw = dict(n_estimators=4, lambdarank_unbiased=True, max_depth=3)
    ltr = cxgb.XGBRanker(**kw).fit(X, y, qid=qid)
    cont = cxgb.XGBRanker(**kw).fit(X, y, qid=qid, xgb_model=ltr)
    full = cxgb.XGBRanker(**dict(kw, n_estimators=8)).fit(X, y, qid=qid)
    assert cont.get_booster().save_raw("dgbdt") == full.get_booster().save_raw("dgbdt")


@pytest.mark.parametrize("bad,match", [
    ({"ti+": [1.0], "tj-": [1.0]}, "must be an object with ti"),
    ({"ti+": [], "tj-": [], "rounds": 1}, "ti\\+ must be a non-empty list"),
    ({"ti+": [1.0, 0.5], "tj-": [1.0], "rounds": 1}, "tj- .as many as ti\\+"),
    ({"ti+": [1.0, -0.5], "tj-": [1.0, 1.0], "rounds": 1}, "must be >= 0"),
    ({"ti+": [1.0], "tj-": [1.0], "rounds": 9}, "rounds must be an integer in .1, 2."),
])
def test_model_file_checks_the_estimates(bad, match):
    from dgbdt.tree.model import ModelFormatError
    X, y, qid = rank_data(n_queries=10, seed=39)
    doc = json.loads(dgbdt.train({"objective": "rank:ndcg", **UNBIASED},
                                 dgbdt.Dataset(X, label=y, qid=qid), 2).save_raw())
    doc["learner"]["position_bias"] = bad
    with pytest.raises(ModelFormatError, match=match):
        dgbdt.load_model(json.dumps(doc))


def test_state_guard():
    """The estimates count their rounds: gradients asked for a later round than they have
    seen (a training that would not start at round 0 with them) are refused."""
    from dgbdt.objectives.rank_bias import PositionBias
    state = PositionBias(4, 0.5)
    state.check_round(0)
    with pytest.raises(ValueError, match="round 3 needs the position-bias estimates"):
        state.check_round(3)


# -- Dask --------------------------------------------------------------------------------------
DASK_PARAMS = {"objective": "rank:ndcg", **UNBIASED, "lambdarank_num_pair_per_sample": 8,
               "eval_metric": ["ndcg@5", "ndcg-"]}


def _in_process(X, y, qid, params, rounds=3):
    d = dgbdt.Dataset(X, label=y, qid=qid)
    res = {}
    b = dgbdt.train(params, d, rounds, evals=[(d, "t")], evals_result=res, verbose_eval=False)
    return b, res


def test_dask_collective_equals_in_process(client4):
    """The per-position sums are exact and all-reduced over the ranks: the in-process bytes
    for 4 workers and two partitionings (mean pairs: the longest query is all-reduced too)."""
    from dgbdt.dask import train
    X, y, qid = rank_data(n_queries=30, seed=35)
    for params in (DASK_PARAMS, {**DASK_PARAMS, "lambdarank_pair_method": "mean"}):
        ref, res = _in_process(X, y, qid, params)
        for parts in (6, 4):
            d = dask_rank_dataset(client4, X, y, qid, query_chunks(qid, parts))
            out = train(client4, params, d, 3, evals=[(d, "t")], mode="collective",
                        verbose_eval=False)
            assert out["booster"].save_raw() == ref.save_raw(), (params, parts)
            assert out["history"] == res


@pytest.mark.parametrize("mode,parts", [("task", 3), ("collective", 2)])
def test_dask_one_worker_equals_in_process(client1, mode, parts):
    from dgbdt.dask import train
    X, y, qid = rank_data(n_queries=20, seed=36)
    ref, res = _in_process(X, y, qid, DASK_PARAMS)
    d = dask_rank_dataset(client1, X, y, qid, query_chunks(qid, parts))
    out = train(client1, DASK_PARAMS, d, 3, evals=[(d, "t")], mode=mode, verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()
    assert out["history"] == res


def test_dask_two_workers_and_graph_mode_refused(client2):
    from dgbdt.dask import train
    X, y, qid = rank_data(n_queries=20, seed=37)
    ref, res = _in_process(X, y, qid, DASK_PARAMS)
    d = dask_rank_dataset(client2, X, y, qid, query_chunks(qid, 3))
    out = train(client2, DASK_PARAMS, d, 3, evals=[(d, "t")], mode="collective",
                verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()
    assert out["history"] == res
    with pytest.raises(ValueError, match="trains in mode='collective'.*not in graph mode"):
        train(client2, DASK_PARAMS, d, 1, mode="graph")
