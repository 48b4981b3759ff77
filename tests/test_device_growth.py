"""Device-resident growth (dgbdt.tree.device_grower): the fixed-shape grower a GPU runs without
host waits gives the host grower's model, byte for byte. Here it runs on the CPU backend
(DGBDT_GROWTH=device: the same array code on numpy); tests/gpu runs it on cupy."""
import numpy as np
import pytest

import dgbdt
from dgbdt.dask.collective import Communicator
from dgbdt.engine import seam as seam_module
from dgbdt.tree import device_grower
from dgbdt.tree.grower import Growth

from test_collective import make as make_ranks_data, reference, run_ranks


def make(n=4000, seed=0, missing=0.1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 7)).astype(np.float32)
    X[:, 4] = np.round(X[:, 4] * 2)          # few distinct values: ties between candidates
    X[rng.random(X.shape) < missing] = np.nan
    Z = np.nan_to_num(X)
    y = (Z[:, 0] * Z[:, 1] + np.sin(2 * Z[:, 2]) - 0.5 * Z[:, 4]
         + 0.3 * rng.standard_normal(n) > 0).astype(np.float64)
    return X, y, rng.uniform(0.5, 2.0, n)


CASES = [
    {"objective": "binary:logistic", "max_depth": 5, "eval_metric": ["logloss", "auc"]},
    {"objective": "reg:squarederror", "max_depth": 7, "gamma": 0.3, "min_child_weight": 4},
    {"objective": "reg:squarederror", "max_depth": 1, "alpha": 0.5, "lambda": 3.0},
    {"objective": "multi:softprob", "num_class": 3, "max_depth": 4, "max_delta_step": 0.6},
    {"objective": "binary:logistic", "max_depth": 10, "min_child_weight": 40},  # stops early
]


def train(monkeypatch, growth, params, X, y, w=None, rounds=6, page_rows=None, evals=True):
    monkeypatch.setenv("DGBDT_GROWTH", growth)
    if params["objective"].startswith("multi"):
        y = np.digitize(np.nan_to_num(X[:, 0]), [-0.5, 0.5]).astype(np.float64)
    elif params["objective"].startswith("reg"):
        y = y + np.nan_to_num(X[:, 3])
    d = dgbdt.Dataset(X, label=y, weight=w, page_rows=page_rows)
    dv = dgbdt.Dataset(X[:900] * 1.1, label=y[:900])
    hist = {}
    b = dgbdt.train(params, d, rounds, evals=[(dv, "valid")] if evals else None,
                    evals_result=hist, verbose_eval=False)
    return b.save_raw(), hist


@pytest.mark.parametrize("params", CASES, ids=lambda p: f"{p['objective']}-d{p['max_depth']}")
def test_device_growth_gives_the_host_model(monkeypatch, params):
    X, y, w = make()
    host = train(monkeypatch, "host", params, X, y, w)
    assert train(monkeypatch, "device", params, X, y, w) == host
    # pages of several shards (each keeps its own partials), unweighted
    assert train(monkeypatch, "device", params, X, y, page_rows=1300) == \
        train(monkeypatch, "host", params, X, y)


def test_device_growth_is_used_and_falls_back_when_levels_do_not_fit(monkeypatch):
    X, y, _ = make(n=600)
    calls = []
    real = device_grower.DeviceGrowth

    def spy(*a, **kw):
        calls.append(a[0])
        return real(*a, **kw)
    monkeypatch.setattr(device_grower, "DeviceGrowth", spy)
    params = {"objective": "binary:logistic", "max_depth": 3}
    train(monkeypatch, "device", params, X, y, rounds=2, evals=False)
    assert calls == [0, 0]                       # one device tree per round
    train(monkeypatch, "auto", params, X, y, rounds=2, evals=False)
    assert calls == [0, 0]                       # auto: the host grower on the CPU
    # a level too wide for LEVEL_BYTES grows on the host, with the same model
    monkeypatch.setattr(device_grower, "LEVEL_BYTES", 1024)
    assert not device_grower.fits(3, 7 * 257, 1)
    assert train(monkeypatch, "device", params, X, y, rounds=2) == \
        train(monkeypatch, "host", params, X, y, rounds=2)
    assert calls == [0, 0]


@pytest.mark.parametrize("extra", [{"monotone_constraints": [1, 0, -1, 0, 0, 0, 0]},
                                   {"interaction_constraints": [[0, 1], [2, 3, 4]]},
                                   {"grow_policy": "lossguide", "max_leaves": 9}],
                         ids=["monotone", "interaction", "lossguide"])
def test_trees_the_device_grower_lacks_grow_on_the_host(monkeypatch, extra):
    """Constraints and lossguide are the host grower's (the fixed-shape grower would ignore
    them): with DGBDT_GROWTH=device they still grow there, the host setting's model."""
    X, y, _ = make(n=1500)
    calls = []
    real = device_grower.DeviceGrowth

    def spy(*a, **kw):
        calls.append(a[0])
        return real(*a, **kw)
    monkeypatch.setattr(device_grower, "DeviceGrowth", spy)
    params = {"objective": "binary:logistic", "max_depth": 4, **extra}
    assert train(monkeypatch, "device", params, X, y, rounds=3) == \
        train(monkeypatch, "host", params, X, y, rounds=3)
    assert calls == []
    plain = {"objective": "binary:logistic", "max_depth": 4}
    train(monkeypatch, "device", plain, X, y, rounds=1, evals=False)
    assert calls == [0]                         # the spy sees device trees when they may grow


def test_growth_setting_rejects_unknown_values(monkeypatch):
    monkeypatch.setenv("DGBDT_GROWTH", "gpu")
    with pytest.raises(ValueError, match="DGBDT_GROWTH must be one of auto, host, device"):
        seam_module.growth_setting()
    monkeypatch.setenv("DGBDT_GROWTH", "")
    assert seam_module.growth_setting() == "auto"


def test_a_tree_with_no_split_is_a_root_leaf(monkeypatch):
    """Constant labels: no node splits at any level; every fixed-shape level runs empty."""
    X, _, _ = make(n=500)
    y = np.ones(500)
    params = {"objective": "reg:squarederror", "max_depth": 4}
    raw, _ = train(monkeypatch, "device", params, X, y - np.nan_to_num(X[:, 3]), rounds=2,
                   evals=False)
    assert raw == train(monkeypatch, "host", params, X, y - np.nan_to_num(X[:, 3]), rounds=2,
                        evals=False)[0]
    import json
    b = dgbdt.Booster.from_dict(json.loads(raw))
    assert [t.n_nodes for t in b.trees] == [1, 1]


@pytest.mark.parametrize("params", [
    {"objective": "binary:logistic", "max_depth": 4, "eval_metric": ["logloss", "auc"]},
    {"objective": "multi:softprob", "num_class": 3, "max_depth": 3},
])
def test_device_growth_on_collective_ranks(monkeypatch, params):
    """Each rank grows the tree from the all-reduced histograms on its own device arrays
    (the collective seam's level keeps the parents' merged histograms per slot)."""
    X, y, w = make_ranks_data()
    if params["objective"].startswith("multi"):
        y = np.digitize(np.nan_to_num(X[:, 0]), [-0.5, 0.5]).astype(np.float64)
    ref, ref_hist = reference(params, X, y, w, 4)
    monkeypatch.setenv("DGBDT_GROWTH", "device")
    results, errors = run_ranks(params, X, y, w, [[(0, 700), (700, 1000)], [(1000, 2400)]], 4,
                                as_shards=True)
    assert errors == [None, None]
    for booster, _ in results:
        assert booster.save_raw() == ref.save_raw()


def test_host_growth_type_is_unchanged_for_cpu_auto(monkeypatch):
    from dgbdt.backends.cpu import CPU
    from dgbdt.engine.shard import Shard
    from dgbdt.tree.spec import GrowthSpec
    from dgbdt.tree.split import SplitParams
    X, y, _ = make(n=300)
    d = dgbdt.Dataset(X, label=y)
    cuts = d.cuts(16)
    page = d.pages(cuts, 16)[0]
    s = Shard(page, cuts.n_bins(), y, None, np.zeros((300, 1)), 2 ** 4, CPU)
    seam = seam_module.LocalSeam([s], cuts.hist_ptrs())
    spec = GrowthSpec(cuts, cuts.hist_ptrs(), 3, SplitParams(0.3, 1.0, 0.0, 0.0, 1.0, 0.0))
    monkeypatch.setenv("DGBDT_GROWTH", "auto")
    assert isinstance(seam.start_tree(spec, 0, 1.0, 1.0), Growth)
    monkeypatch.setenv("DGBDT_GROWTH", "device")
    assert isinstance(seam.start_tree(spec, 0, 1.0, 1.0), device_grower.DeviceGrowth)


@pytest.fixture
def deferred(monkeypatch):
    """The GPU loop on the CPU: the device grower on numpy, round r scored after round r + 1's
    trees are enqueued (LocalSeam.defers_scores is True for CUDA shards only); records the
    PendingTrees the seam handed out; ``enable()`` turns it on (the references before)."""
    made = _Made()
    real = device_grower.DeviceGrowth.pending_tree

    def spy(self, settle=None):
        made.append(real(self, settle))
        return made[-1]
    monkeypatch.setattr(device_grower.DeviceGrowth, "pending_tree", spy)

    def enable():
        monkeypatch.setattr(seam_module.LocalSeam, "defers_scores", property(lambda self: True))
    made.enable = enable
    return made


class _Made(list):
    pass


@pytest.mark.parametrize("lag", [1, 2])
def test_deferred_scores_give_the_same_model_history_and_stop(monkeypatch, deferred, lag):
    """Scoring a round after the next round's trees (lag 2: after the next two rounds', as
    NCCL ranks do), and dropping those when the round before stops the training, changes
    nothing the user sees: the model's bytes, the eval history, the best iteration; every
    PendingTree is resolved before the model returns."""
    X, y, _ = make(n=3000, seed=3)
    rng = np.random.default_rng(3)
    y = np.where(rng.random(y.shape[0]) < 0.3, 1 - y, y)       # noise: the stop comes early
    d = dgbdt.Dataset(X[:2000], label=y[:2000])
    dv = dgbdt.Dataset(X[2000:], label=y[2000:])
    params = {"objective": "binary:logistic", "max_depth": 5, "eta": 0.5,
              "eval_metric": ["logloss", "auc"]}

    def fit(growth):
        monkeypatch.setenv("DGBDT_GROWTH", growth)
        hist = {}
        b = dgbdt.train(params, d, 80, evals=[(d, "train"), (dv, "valid")],
                        early_stopping_rounds=3, evals_result=hist, verbose_eval=False)
        return b, hist
    ref, ref_hist = fit("host")
    deferred.enable()
    monkeypatch.setattr(seam_module.LocalSeam, "scores_lag", lag)
    hb, hh = fit("host")          # scores deferred, trees from the host grower (not pending)
    assert hb.save_raw() == ref.save_raw() and hh == ref_hist
    assert not deferred
    b, hist = fit("device")
    assert ref.best_iteration < 60                              # it stopped early
    assert len(deferred) == b.num_boosted_rounds() + lag        # lag ran ahead, dropped
    assert all(t._tree is not None for t in deferred[:-lag])
    assert b.save_raw() == ref.save_raw()
    assert hist == ref_hist
    assert (b.best_iteration, b.best_score) == (ref.best_iteration, ref.best_score)
    assert all(type(t).__name__ == "Tree" for t in b.trees)


@pytest.mark.parametrize("queued", [False, True])
def test_deferred_scores_on_collective_ranks(monkeypatch, deferred, queued):
    """Every rank defers alike, so their collectives stay in the same order; an eval set
    spread over the ranks and early stopping. ``queued``: a communicator whose scores'
    collectives are only queued (NCCL's), read two rounds behind (CollectiveSeam.scores_lag)."""
    X, y, w = make_ranks_data()
    rng = np.random.default_rng(4)
    y = np.where(rng.random(y.shape[0]) < 0.3, 1 - y, y)
    Xv, yv = X[:700] * 0.9, y[:700]
    params = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.6,
              "eval_metric": ["logloss", "auc"]}
    ref, ref_hist = reference(params, X, y, w, 40, Xv, yv, early_stopping_rounds=2)
    assert ref.num_boosted_rounds() < 40
    deferred.enable()
    monkeypatch.setattr(Communicator, "queues_results", queued)
    monkeypatch.setenv("DGBDT_GROWTH", "device")
    results, errors = run_ranks(params, X, y, w, [[(0, 700), (700, 1000)], [(1000, 2400)]], 40,
                                [[(0, 300)], [(300, 700)]], Xv, yv, early_stopping_rounds=2,
                                as_shards=True)
    assert errors == [None, None]
    # each rank's trees: the model's, and the rounds it ran ahead of its stop (then dropped)
    assert len(deferred) == 2 * (ref.num_boosted_rounds() + (2 if queued else 1))
    for booster, hist in results:
        assert booster.save_raw() == ref.save_raw()
        assert hist == ref_hist


@pytest.mark.parametrize("n", [37, 300])
def test_device_growth_on_few_rows(monkeypatch, n):
    """Few rows and a deep tree: the device grower addresses node ids up to its sentinel,
    2^(max_depth + 1) - 1, however few nodes the rows allow (a shard sized by the rows alone,
    2 n, made it write out of bounds: an illegal address on the GPU)."""
    X, y, w = make(n, seed=3)
    params = {"objective": "binary:logistic", "max_depth": 8, "min_child_weight": 0}
    assert train(monkeypatch, "device", params, X, y, w) == \
        train(monkeypatch, "host", params, X, y, w)


def test_round_scales_are_scale_for_of_the_device_maxima():
    """A replayed tree's scales (device_grower.RoundScales) come from the round's maxima
    array, float64 bits in [2, K]: scale_for of class k's, read when the tree is; a
    non-finite maximum raises scale_for's error then. host_scales passes floats through."""
    from dgbdt.kernels.fixedpoint import scale_for
    mx = np.array([[0.75, 3.0], [0.25, 0.0]]).view(np.uint64)
    for k in range(2):
        scales = device_grower.RoundScales(mx, k, 12345)
        assert scales.host() == (scale_for(mx.view(np.float64)[0, k], 12345),
                                 scale_for(mx.view(np.float64)[1, k], 12345))
        assert device_grower.host_scales(scales, None) == scales.host()
    assert device_grower.host_scales(2.0 ** 40, 2.0 ** 41) == (2.0 ** 40, 2.0 ** 41)
    bad = np.array([[np.inf], [1.0]]).view(np.uint64)
    with pytest.raises(ValueError, match="cannot sum non-finite values"):
        device_grower.RoundScales(bad, 0, 10).host()


def test_cpu_backend_takes_no_device_maxima():
    """Only device backends post gradient maxima into a caller's array (LocalSeam.device_maxima
    asks none of the CPU backend): a call that passes one is a bug, said as such."""
    from dgbdt.backends.cpu import CPU
    from dgbdt.objectives.registry import get_objective
    m = np.zeros((4, 1))
    with pytest.raises(RuntimeError, match="takes no device array"):
        CPU.gradients(get_objective("binary:logistic", {}), m, np.ones(4), None, m.copy(),
                      m.copy(), False, np.zeros((2, 1), np.uint64))
