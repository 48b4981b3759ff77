"""dgbdt.kernels.gpu_sort (prefix sums and an argsort that never compile at run time) against
numpy, and the GPU auc that uses them against the host's."""
import numpy as np
import pytest

import cupy as cp

from dgbdt.kernels.gpu_sort import argsort_f64, exclusive_sums

SIZES = [0, 1, 2, 4095, 4096, 4097, 65536, 65537, 100_003, 1_500_000]


@pytest.mark.parametrize("n", SIZES)
def test_exclusive_sums_equal_numpys(n):
    rng = np.random.default_rng(n)
    a = rng.integers(-2 ** 62, 2 ** 62, size=n, dtype=np.int64)    # sums wrap, as numpy's
    want = np.concatenate([[0], np.cumsum(a)]).astype(np.int64)
    got = exclusive_sums(cp.asarray(a))
    assert got.dtype == np.int64 and got.shape == (n + 1,)
    assert cp.asnumpy(got).tobytes() == want.tobytes()
    small = rng.integers(0, 2, size=n, dtype=np.int64)              # auc's negatives
    assert cp.asnumpy(exclusive_sums(cp.asarray(small))).tolist() == \
        [0] + np.cumsum(small).tolist()


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", ["normal", "ties", "probabilities"])
def test_argsort_f64_is_numpys_stable_order(n, kind):
    rng = np.random.default_rng(n + 1)
    if kind == "normal":
        s = rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300, size=n)
        s[rng.random(n) < 0.01] = np.inf
        s[rng.random(n) < 0.01] = -np.inf
        s[rng.random(n) < 0.01] = np.nan
    elif kind == "ties":
        s = rng.integers(-5, 5, size=n).astype(np.float64)
    else:               # sigmoid outputs of float32 margins: most low bits zero
        s = (1 / (1 + np.exp(-rng.standard_normal(n).astype(np.float32)))).astype(np.float64)
    got = cp.asnumpy(argsort_f64(cp.asarray(s)))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.argsort(s, kind="stable"))


@pytest.mark.parametrize("graphs", ["1", "0"])
def test_argsort_f64_replayed_as_a_graph_is_numpys_order(monkeypatch, graphs):
    """From the second sort of a size on a stream the launches replay as a CUDA graph
    (gpu_sort._SortPlan): every sort still gives numpy's stable order, each its own output
    array (a later sort does not overwrite an earlier order); DGBDT_CUDA_GRAPHS=0: eager."""
    from dgbdt.kernels import gpu_sort
    monkeypatch.setenv("DGBDT_CUDA_GRAPHS", graphs)
    monkeypatch.setattr(gpu_sort, "_plans", {})
    rng = np.random.default_rng(11)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        got, want = [], []
        for i in range(4):
            # ties, other each time; + 0.0: no -0.0 (sorted before 0.0, unlike numpy)
            s = np.round(rng.standard_normal(70_001), 1 + i) + 0.0
            got.append(argsort_f64(cp.asarray(s)))
            want.append(np.argsort(s, kind="stable"))
        stream.synchronize()
    for g, w in zip(got, want):
        np.testing.assert_array_equal(cp.asnumpy(g), w)
    plans = [v for v in gpu_sort._plans.values() if isinstance(v, gpu_sort._SortPlan)]
    assert len(plans) == (1 if graphs == "1" else 0)


def test_argsort_f64_orders_negative_zero_first_and_refuses_other_input():
    s = np.array([0.0, -0.0, -1.0, 0.0, -0.0])
    got = cp.asnumpy(argsort_f64(cp.asarray(s)))
    assert got.tolist() == [2, 1, 4, 0, 3]      # -0.0 before 0.0; equal bits keep their order
    with pytest.raises(TypeError, match="float64"):
        argsort_f64(cp.zeros(4, dtype=cp.float32))
    with pytest.raises(TypeError, match="C-contiguous"):
        argsort_f64(cp.zeros(8)[::2])


@pytest.mark.parametrize("n", [2, 3000, 250_000])
def test_gpu_auc_equals_the_hosts(n):
    """The unit-weight auc (dgbdt.metrics.sorted_scores: gpu_sort's argsort and sums on the
    device) gives the host's value, with ties and over several parts."""
    from dgbdt.metrics.registry import get_metric
    rng = np.random.default_rng(n)
    y = (rng.random(n) < 0.3).astype(np.float32)
    y[:2] = [1, 0]
    p = np.round(rng.random(n), 3)          # ties
    auc = get_metric("auc")
    half = n // 2
    host = auc.merge(auc.summary(y[:half], p[:half]), auc.summary(y[half:], p[half:]))
    dev = auc.merge(auc.summary(cp.asarray(y[:half]), cp.asarray(p[:half])),
                    auc.summary(cp.asarray(y[half:]), cp.asarray(p[half:])))
    assert auc.value(dev) == auc.value(host)
    assert auc.value(auc.summary(cp.asarray(y), cp.asarray(p))) == auc.value(host)


def test_sorted_scores_rows_and_sums_on_the_gpu_equal_the_hosts():
    """A collective auc's rows (stack3 / unstack3) and the sum of parts (copies), on the GPU,
    hold the host's values and give its auc."""
    from dgbdt.metrics.sorted_scores import SortedScores
    rng = np.random.default_rng(7)
    parts = []
    for n in (5, 4000, 12_345, 1):
        s = np.round(rng.random(n), 2)
        pos = (rng.random(n) < 0.4).astype(np.int64)
        parts.append((s, pos, 1 - pos))
    host = dev = None
    for s, pos, neg in parts:
        h = SortedScores.of(s, pos, neg)
        d = SortedScores.of(cp.asarray(s), cp.asarray(pos), cp.asarray(neg))
        host, dev = (h, d) if host is None else (host + h, dev + d)
    assert dev.bounds == host.bounds       # 4 parts side by side
    assert dev.stats() == host.stats()
    rows = dev.rows()
    assert rows.dtype == np.int64 and rows.shape == (host.n_rows, 3)
    got, want = cp.asnumpy(rows), host.rows()      # equal scores in either order
    assert np.all(np.diff(got[:, 0].view(np.float64)) >= 0)
    np.testing.assert_array_equal(got[np.lexsort(got.T[::-1])], want[np.lexsort(want.T[::-1])])
    back = SortedScores.from_rows(rows, [host.n_rows])
    again = SortedScores.from_rows(got, [host.n_rows])
    for a, b in ((back.score, again.score), (back.pos, again.pos), (back.neg, again.neg)):
        assert cp.asnumpy(a).tobytes() == b.tobytes()
    assert back.stats() == again.stats()
