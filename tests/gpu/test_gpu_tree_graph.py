"""Trees replayed as CUDA graphs (dgbdt/tree/tree_graph.py) give the eagerly grown model, byte
for byte, and are really replayed."""
import time

import numpy as np
import pytest

import cupy as cp

import dgbdt
from dgbdt.callback import LearningRateScheduler
from dgbdt.tree import tree_graph


def _data(n=20_000, nf=8, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, nf)).astype(np.float32)
    X[rng.random((n, nf)) < 0.05] = np.nan
    s = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) * np.nan_to_num(X[:, 2])
    y = np.digitize(s, np.quantile(s, np.linspace(0, 1, classes + 1)[1:-1])).astype(np.float32)
    return cp.asarray(X), cp.asarray(y)


CASES = {
    "binary": ({"objective": "binary:logistic", "max_depth": 6}, 2, {}),
    "regression deep": ({"objective": "reg:squarederror", "max_depth": 9}, 2, {}),
    "multiclass": ({"objective": "multi:softprob", "num_class": 3, "max_depth": 5}, 3, {}),
    "subsample": ({"objective": "binary:logistic", "max_depth": 4, "subsample": 0.7,
                   "seed": 3}, 2, {}),
    "eta schedule": ({"objective": "binary:logistic", "max_depth": 4}, 2,
                     {"callbacks": [LearningRateScheduler(lambda r: 0.3 / (1 + r))]}),
    "colsample (no graphs)": ({"objective": "binary:logistic", "max_depth": 4,
                               "colsample_bytree": 0.5, "seed": 1}, 2, {}),
}


@pytest.mark.parametrize("scales", ["device", "host"])
@pytest.mark.parametrize("name", list(CASES))
def test_graph_trees_equal_eager_trees(name, scales, monkeypatch):
    """With the replays' scales computed on the device from the round's gradient maxima
    (TreeGraphs.grow_scaled) or read by the host first (DGBDT_DEVICE_SCALES=0): the eager
    model's bytes and history; sampled rounds read the maxima on the host either way."""
    from dgbdt.backends.cuda import CudaBackend
    params, classes, extra = CASES[name]
    X, y = _data(classes=classes)
    Xv, yv = _data(n=3000, seed=1, classes=classes)
    replays, on_device = [], []
    real, real_scales = tree_graph.TreeGraphs._replay, CudaBackend.tree_scales

    def counting(self, *a, **k):
        replays.append(1)
        return real(self, *a, **k)

    def counting_scales(self, *a, **k):
        on_device.append(1)
        return real_scales(self, *a, **k)

    monkeypatch.setattr(tree_graph.TreeGraphs, "_replay", counting)
    monkeypatch.setattr(CudaBackend, "tree_scales", counting_scales)
    monkeypatch.setenv("DGBDT_DEVICE_SCALES", "1" if scales == "device" else "0")

    def fit():
        res = {}
        b = dgbdt.train({**params, "device": "cuda"}, dgbdt.Dataset(X, label=y), 12,
                        evals=[(dgbdt.Dataset(Xv, label=yv), "v")], evals_result=res,
                        verbose_eval=False, early_stopping_rounds=50, **extra)
        return b.save_raw(), res

    monkeypatch.setenv("DGBDT_CUDA_GRAPHS", "0")
    eager, hist_e = fit()
    assert not replays and not on_device
    monkeypatch.setenv("DGBDT_CUDA_GRAPHS", "1")
    graphed, hist_g = fit()
    assert graphed == eager
    assert hist_g == hist_e
    trees = (12 - 2) * (classes if classes > 2 else 1)
    if "no graphs" in name:
        assert not replays and not on_device
    elif scales == "device" and name != "subsample":
        # the first tree of a class is eager, the second captured, the rest replayed
        assert (len(on_device), len(replays)) == (trees, 0)
    else:
        assert (len(on_device), len(replays)) == (0, trees)


def test_tree_scales_kernel_is_scale_for():
    """cuda/tree.cu tree_scales: the tree's constants of class k from the device maxima are
    tree_consts(scale_for(max |g|), scale_for(max h)) bit for bit, over zero, subnormal,
    tiny, ordinary and huge maxima and row counts (one float64 product, then frexp); a
    non-finite maximum gives NaN scales (the host raises when it reads the tree)."""
    from dgbdt.backends.cuda import CudaBackend, tree_consts
    from dgbdt.kernels.fixedpoint import scale_for
    be = CudaBackend.for_ordinal(0)
    rng = np.random.default_rng(5)
    values = [0.0, 5e-324, 1e-300, 1e-20, 0.25, 0.5, 1.0, 1.0 + 2 ** -52, 3.0, 1e10, 1e300,
              1.7e308] + list(rng.random(30) * 10.0 ** rng.integers(-30, 30, 30))
    for n in (1, 2, 3, 1000, 2 ** 31 - 1, 35_555_556, 10 ** 12):
        K = len(values)
        mx = np.array([values, values[::-1]], dtype=np.float64)
        dev = cp.asarray(mx.view(np.uint64))
        for k in range(K):
            out = cp.zeros(5, dtype=cp.float64)
            be.tree_scales(dev, k, n, 0.3, out)
            try:
                want = tree_consts(scale_for(mx[0, k], n), scale_for(mx[1, k], n), 0.3)
            except OverflowError:       # 2 ** (62 - e) beyond float64: the host refuses too
                continue
            np.testing.assert_array_equal(out.get().view(np.uint64), want.view(np.uint64))
    bad = cp.asarray(np.array([[np.inf], [0.5]]).view(np.uint64))
    out = cp.zeros(5, dtype=cp.float64)
    be.tree_scales(bad, 0, 100, 0.1, out)
    assert np.isnan(out.get()[[0, 2]]).all() and out.get()[1] == scale_for(0.5, 100)


@pytest.mark.parametrize("graphs", ["1", "0"])
def test_deferred_scores_on_the_gpu(graphs, monkeypatch):
    """On a GPU round r is scored after round r + 1's tree is enqueued (the trees come back as
    PendingTrees): the same model, history and stop as scoring every round before the next
    (what a callback asks for), with and without CUDA graphs; the training set's own scores
    too (taken from its margins, which the next tree moves)."""
    from dgbdt.callback import TrainingCallback
    from dgbdt.tree import device_grower
    made = []
    real = device_grower.DeviceGrowth.pending_tree

    def spy(self, settle=None):
        made.append(real(self, settle))
        return made[-1]
    monkeypatch.setattr(device_grower.DeviceGrowth, "pending_tree", spy)
    monkeypatch.setenv("DGBDT_CUDA_GRAPHS", graphs)
    X, y = _data()
    flip = cp.asarray(np.random.default_rng(2).random(y.shape[0]) < 0.3)
    y = cp.where(flip, 1 - y, y)
    Xv, yv = _data(n=4000, seed=1)

    d = dgbdt.Dataset(X, label=y)

    def fit(callbacks):
        res = {}
        b = dgbdt.train({"objective": "binary:logistic", "max_depth": 6, "eta": 0.5,
                         "device": "cuda", "eval_metric": ["logloss", "auc"]}, d, 200,
                        evals=[(d, "t"), (dgbdt.Dataset(Xv, label=yv), "v")], evals_result=res,
                        verbose_eval=False, early_stopping_rounds=3, callbacks=callbacks)
        return b, res
    every, hist_e = fit([TrainingCallback()])
    assert not made
    deferred, hist_d = fit(None)
    assert every.num_boosted_rounds() < 150
    assert len(made) == deferred.num_boosted_rounds() + 1      # one ran ahead, dropped
    assert deferred.save_raw() == every.save_raw()
    assert hist_d == hist_e
    assert deferred.best_iteration == every.best_iteration


_SPIN = r'''
__device__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
extern "C" __global__ void spin(unsigned long long ns, int* out) {
    unsigned long long start = now_ns();
    while (now_ns() - start < ns) { }
    out[0] = 1;
}
'''


@pytest.mark.parametrize("allocator", ["cupy", "rmm_default"])
def test_deferred_scores_wait_beside_the_next_tree(request, allocator):
    """dgbdt.backends.device.beside: work entered later runs on a side stream behind what was queued
    when it was made, so its host waits (a metric's scalar) do not drain what the current
    stream got since (the next tree, here a kernel that spins for 1 s), and it still sees
    the values written before it was made."""
    from dgbdt.backends.device import beside, device_scope, get_backend
    if allocator == "rmm_default":
        request.getfixturevalue("rmm_default")
    be = get_backend("cuda")
    with device_scope(be):        # as in a training (with cuDF imported, RMM's default
        _beside_check(be, beside)  # allocator would cudaFree, which waits for the device)


def _beside_check(be, beside):
    a = cp.zeros(1000, dtype=cp.float64)
    float(a.sum())                                  # compiled before the clock starts
    a += 1.0                                        # queued before: beside must see it
    scope = beside(be)
    flag = cp.zeros(1, dtype=cp.int32)
    spin = cp.RawKernel(_SPIN, "spin")
    spin.compile()
    t = time.perf_counter()
    spin((1,), (1,), (np.uint64(1_000_000_000), flag))          # queued after: the next tree
    with scope as stream:
        assert cp.cuda.get_current_stream() == stream
        total = float(a.sum())                                  # a host wait on the side
    waited = time.perf_counter() - t
    cp.cuda.get_current_stream().synchronize()
    spun = time.perf_counter() - t
    assert total == 1000.0 and int(flag[0]) == 1
    assert spun > 0.9, f"the spin took {spun:.3f} s"
    assert waited < 0.5, f"the side wait took {waited:.3f} s: it waited for the spin"


def test_own_stream_leaves_the_default_stream_free_and_in_order():
    """dgbdt.backends.device.own_stream (a collective rank's): a kernel that spins on it (an
    NCCL kernel waiting for a lost peer) does not hold up another thread's copy on the default
    stream (Dask sending a partition from its event loop); it sees what the default stream
    wrote before it was entered, and the default stream's work after it is left sees its
    results."""
    import threading
    from dgbdt.backends.device import device_scope, get_backend, own_stream
    be = get_backend("cuda")
    spin = cp.RawKernel(_SPIN, "spin")
    spin.compile()
    other = cp.arange(1000, dtype=cp.float64)
    flag = cp.zeros(1, dtype=cp.int32)
    with device_scope(be):
        spin((1,), (1,), (np.uint64(300_000_000), flag))      # default stream, before
        with own_stream(be) as stream:
            assert cp.cuda.get_current_stream() == stream
            seen = flag * 7                                   # must wait for the spin
            spin((1,), (1,), (np.uint64(1_500_000_000), flag))  # the stuck collective
            copied, took = [], []

            def send():                                       # another thread's transfer
                t = time.perf_counter()
                copied.append(cp.asnumpy(other))
                took.append(time.perf_counter() - t)
            th = threading.Thread(target=send)
            th.start()
            th.join(10)
            after = flag + 1                                  # queued behind the long spin
        later = after * 2                                     # default stream, after
        assert int(later[0]) == 4                             # ... saw the spin's write
    assert int(seen[0]) == 7
    assert copied and copied[0][-1] == 999.0
    assert took[0] < 0.7, f"the default stream's copy waited {took[0]:.2f} s for own_stream"
