"""Sampled rounds over streamed pages (dgbdt.engine.sampled_rounds): the pages are read once a round (the
fold, the gradients and the sample's candidates together; a second pass only where the sample
left the candidates) instead of once a level, and the model and history are in-memory
training's with the same sampling, byte for byte, for uniform and gradient-based sampling,
any depth and classes."""
import numpy as np
import pytest

import dgbdt
from dgbdt.data import page_store


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12_000, 10)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    y = (Z[:, 0] + Z[:, 1] ** 2 - Z[:, 2] * Z[:, 3] > 0.8).astype(np.float64)
    y3 = np.digitize(Z[:, 0] + Z[:, 4], [-0.5, 0.5]).astype(np.float64)
    return X, y, y3


@pytest.fixture
def streamed(monkeypatch):
    """The GPU's streaming schedule on the CPU, pages of ~16 KiB (several pages)."""
    monkeypatch.setattr(page_store, "MIN_PAGE_BYTES", 1 << 14)
    monkeypatch.setattr(page_store, "STREAM_ON_CPU", True)


def _train(X, y, params, rounds, **extra):
    res = {}
    d = dgbdt.Dataset(X, label=y)
    b = dgbdt.train({**params, **extra}, d, rounds, evals=[(d, "train")], evals_result=res,
                    verbose_eval=False)
    return b, res


@pytest.mark.parametrize("params", [
    {"objective": "binary:logistic", "max_depth": 6, "subsample": 0.3},
    {"objective": "binary:logistic", "max_depth": 4, "subsample": 0.2,
     "sampling_method": "gradient_based", "colsample_bynode": 0.7, "seed": 4},
    {"objective": "multi:softprob", "num_class": 3, "max_depth": 3, "subsample": 0.5,
     "sampling_method": "gradient_based"},
])
def test_compact_rounds_give_the_in_memory_model(data, streamed, params):
    X, y, y3 = data
    label = y3 if params["objective"].startswith("multi") else y
    params = {**params, "max_bin": 64}
    ref, ref_res = _train(X, label, params, 5)
    b, res = _train(X, label, params, 5, device_memory_budget=1)
    assert b.save_raw() == ref.save_raw()
    assert res == ref_res
    m = b.memory
    assert m["pages_host"] == m["pages"] >= 3
    # a pass a round (a second one where the sample left the candidates) and the fold
    # before each evaluation of the training rows: not one a level
    assert m["stream_passes"] <= 2 * 5 + m["compact_second_passes"]
    per_level, _ = _train(X, label, {**params, "subsample": 1.0}, 5, device_memory_budget=1)
    assert per_level.memory["stream_passes"] > m["stream_passes"]


@pytest.mark.parametrize("growth", ["host", "device"])
def test_compact_rounds_without_evaluation_fold_once_a_round(data, streamed, monkeypatch,
                                                             growth):
    """The fold walks each tree over the rows' symbols (fold_tree), from the host grower's
    split batches or the fixed-shape grower's (with their sentinel rows)."""
    monkeypatch.setenv("DGBDT_GROWTH", growth)
    X, y, _ = data
    params = {"objective": "reg:squarederror", "max_depth": 8, "subsample": 0.25,
              "max_bin": 32}
    ref = dgbdt.train(params, dgbdt.Dataset(X, label=y), 6, verbose_eval=False)
    b = dgbdt.train({**params, "device_memory_budget": 1}, dgbdt.Dataset(X, label=y), 6,
                    verbose_eval=False)
    assert b.save_raw() == ref.save_raw()
    # one pass a round: uniform sampling's candidates are its sample, exactly
    assert b.memory["stream_passes"] == 6 and b.memory["compact_second_passes"] == 0
    assert b.timings["histograms"] > 0 and b.timings["compact"] > 0   # the compact shards'


def test_categorical_trees_are_folded_by_replaying_their_partitions(data, streamed):
    X, y, _ = data
    X = X.copy()
    X[:, 3] = np.where(np.isnan(X[:, 3]), np.nan, np.floor(np.abs(X[:, 3]) * 7) % 11)
    y = y + (X[:, 3] % 3 == 1)
    params = {"objective": "reg:squarederror", "max_depth": 4, "subsample": 0.5,
              "max_bin": 32, "max_cat_to_onehot": 1}
    types = ["q"] * 3 + ["c"] + ["q"] * 6
    ref = dgbdt.train(params, dgbdt.Dataset(X, label=y, feature_types=types), 5,
                      verbose_eval=False)
    assert any(t.categories for t in ref.trees)          # categorical splits were made
    b = dgbdt.train({**params, "device_memory_budget": 1},
                    dgbdt.Dataset(X, label=y, feature_types=types), 5, verbose_eval=False)
    assert b.save_raw() == ref.save_raw()
    assert b.memory["stream_passes"] == 5


@pytest.mark.parametrize("sampling_method", ["uniform", "gradient_based"])
def test_collective_ranks_grow_from_their_compact_pages(data, streamed, client2,
                                                        sampling_method):
    """Each rank gathers its own sampled rows; the compact levels all-reduce as before."""
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    X, y, _ = data
    X, y = X[:8_000], y[:8_000]
    params = {"objective": "binary:logistic", "max_depth": 5, "subsample": 0.3, "max_bin": 64,
              "sampling_method": sampling_method, "seed": 2}
    ref = dgbdt.train(params, dgbdt.Dataset(X, label=y), 5, verbose_eval=False)
    d = dgd.DaskDataset(client2, da.from_array(X, chunks=(2000, 10)),
                        da.from_array(y, chunks=2000))
    out = dgd.train(client2, {**params, "device_memory_budget": 1}, d, 5, mode="collective",
                    verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()
    m = out["booster"].memory
    assert m["pages_streamed"] >= 1
    assert m["stream_passes"] == 5 + m["compact_second_passes"]


def test_gradient_rounds_take_the_sample_from_the_fold_pass(data, streamed, monkeypatch):
    """Gradient-based sampling: after the first round (no threshold to guess from: two
    passes) a round's candidates, guessed from the last round's threshold, hold its sample
    and it reads the pages once; with a guess far too narrow every round pays the second
    pass, and the model is the same bytes either way."""
    from dgbdt.engine import sampled_rounds as compact
    X, y, _ = data
    params = {"objective": "binary:logistic", "max_depth": 5, "subsample": 0.2, "max_bin": 64,
              "sampling_method": "gradient_based", "seed": 3}
    ref = dgbdt.train(params, dgbdt.Dataset(X, label=y), 8, verbose_eval=False)
    b = dgbdt.train({**params, "device_memory_budget": 1}, dgbdt.Dataset(X, label=y), 8,
                    verbose_eval=False)
    m = b.memory
    assert b.save_raw() == ref.save_raw()
    assert m["stream_passes"] == 8 + m["compact_second_passes"]
    assert 1 <= m["compact_second_passes"] <= 2
    monkeypatch.setattr(compact, "REACH", 0.05)
    narrow = dgbdt.train({**params, "device_memory_budget": 1}, dgbdt.Dataset(X, label=y), 8,
                         verbose_eval=False)
    assert narrow.save_raw() == ref.save_raw()
    assert narrow.memory["compact_second_passes"] == 8
