"""Device-resident growth of piecewise-linear trees (dgbdt.tree.linear_device): the fixed-shape
grower a GPU runs without host waits gives the host grower's (dgbdt.tree.linear_growth) model,
byte for byte. Here it runs on the CPU backend (DGBDT_GROWTH=device: the same array code on
numpy, the numba twins of cuda/linear_grow.cu); tests/gpu/test_gpu_linear.py runs it on a GPU
and tests/test_linear_grow_host.py runs the CUDA kernels' source through the GPU's glue."""
import numpy as np
import pytest

import dgbdt
from dgbdt.tree import linear_device, linear_growth


def make(n=2500, seed=0, missing=0.05):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 6)).astype(np.float32)
    X[:, 5] = np.round(X[:, 5] * 3)               # few values: ties between candidates
    X[rng.random(X.shape) < missing] = np.nan
    Z = np.nan_to_num(X)
    f = np.where(Z[:, 0] > 0, 2 * Z[:, 1] + Z[:, 2], -Z[:, 3] + 0.5 * Z[:, 4])
    return X, f + 0.1 * rng.standard_normal(n), rng.uniform(0.5, 2.0, n)


CASES = [
    {"max_depth": 4},
    {"max_depth": 5, "max_linear_features": 2, "gamma": 0.05, "min_child_weight": 3},
    {"max_depth": 6, "max_linear_features": 1, "linear_lambda": 0.0},
    {"max_depth": 1},
    {"max_depth": 3, "objective": "binary:logistic"},
    {"max_depth": 3, "objective": "multi:softprob", "num_class": 3},
    {"max_depth": 4, "subsample": 0.7, "colsample_bytree": 0.8, "colsample_bynode": 0.7},
    {"max_depth": 8, "min_child_weight": 60},          # levels run out of splits early
]


def train(monkeypatch, growth, params, X, y, w=None, page_rows=None, rounds=4):
    monkeypatch.setenv("DGBDT_GROWTH", growth)
    obj = params.get("objective", "")
    if obj == "binary:logistic":
        y = (y > 0).astype(np.float64)
    elif obj.startswith("multi"):
        y = np.digitize(y, [-0.5, 0.5]).astype(np.float64)
    p = {"linear_tree": True, "eta": 0.3, "max_bin": 32, "seed": 3, **params}
    return dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w, page_rows=page_rows), rounds,
                       verbose_eval=False).save_raw()


@pytest.mark.parametrize("params", CASES, ids=lambda p: "-".join(f"{k}{v}" for k, v in
                                                                 p.items()))
def test_device_growth_gives_the_host_model(monkeypatch, params):
    X, y, w = make()
    assert train(monkeypatch, "device", params, X, y, w) == \
        train(monkeypatch, "host", params, X, y, w)


def test_device_growth_over_pages_and_continued_training(monkeypatch):
    """Several shards (each keeps its own partials) and a prior model's margins."""
    X, y, _ = make(seed=1)
    p = {"linear_tree": True, "max_depth": 4, "eta": 0.3, "max_bin": 32}
    out = []
    for growth in ("host", "device"):
        monkeypatch.setenv("DGBDT_GROWTH", growth)
        first = dgbdt.train(p, dgbdt.Dataset(X, label=y, page_rows=900), 2, verbose_eval=False)
        more = dgbdt.train(p, dgbdt.Dataset(X, label=y, page_rows=700), 2, xgb_model=first,
                           verbose_eval=False)
        out.append(more.save_raw())
    assert out[0] == out[1]


def _spy(monkeypatch):
    used = []
    real = linear_device.DeviceLinearGrowth.__init__

    def init(self, *a, **kw):
        used.append(1)
        real(self, *a, **kw)
    monkeypatch.setattr(linear_device.DeviceLinearGrowth, "__init__", init)
    return used


def test_device_growth_is_used_and_the_others_grow_on_the_host(monkeypatch):
    """DGBDT_GROWTH=device grows depth-wise linear trees on the fixed-shape grower; loss-guided
    trees and interaction constraints keep the host grower (the same model either way); the
    CPU's default ("auto") grows on the host."""
    X, y, _ = make(n=800)
    used = _spy(monkeypatch)
    train(monkeypatch, "device", {"max_depth": 3}, X, y, rounds=2)
    assert len(used) == 2
    used.clear()
    for extra in ({"grow_policy": "lossguide", "max_leaves": 6, "max_depth": 0},
                  {"max_depth": 3, "interaction_constraints": [[0, 1], [2, 3, 4, 5]]}):
        host = train(monkeypatch, "host", extra, X, y, rounds=2)
        assert train(monkeypatch, "device", extra, X, y, rounds=2) == host
    train(monkeypatch, "auto", {"max_depth": 3}, X, y, rounds=2)
    assert not used


def test_levels_that_do_not_fit_grow_on_the_host(monkeypatch):
    """Levels of 9 sums a slot beyond LEVEL_BYTES: the host grower, the same bytes."""
    assert linear_device.fits(6, 3072, 1) and not linear_device.fits(17, 10, 1)
    X, y, _ = make(n=800)
    used = _spy(monkeypatch)
    monkeypatch.setattr("dgbdt.tree.device_grower.LEVEL_BYTES", 1000)
    host = train(monkeypatch, "host", {"max_depth": 3}, X, y, rounds=2)
    assert train(monkeypatch, "device", {"max_depth": 3}, X, y, rounds=2) == host
    assert not used


def test_slope_bound_sums_in_order():
    """s_p sums |v| in order on the host as in the kernels (numpy's pairwise sum groups
    eight or more terms differently)."""
    from dgbdt.kernels.cpu_linear_fit import abs_sum, pow2_at_least
    rng = np.random.default_rng(0)
    for n in (0, 1, 5, 9, 32):
        v = rng.normal(size=n) * 10.0 ** rng.integers(-8, 8, n)
        assert linear_growth.slope_bound(v) == pow2_at_least(abs_sum(v, n))
    assert pow2_at_least(4.0) == 4.0 and pow2_at_least(4.5) == 8.0
    assert pow2_at_least(0.0) == 1.0 and pow2_at_least(float("inf")) == 1.0
