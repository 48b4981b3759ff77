"""CUDA kernels against the CPU kernels (the oracle) at many shapes."""
import numpy as np
import pytest

import cupy as cp

from dgbdt.kernels.pages import pack, unpack
from dgbdt.data.quantize import cuts_from_summaries, quantize
from dgbdt.data.sketch import summarize, summarize_weighted, weight_scale
from dgbdt.data.sketch_device import summarize_device, summarize_weighted_device
from dgbdt.kernels import gpu_sum, launch
from dgbdt.backends.cpu import CPU
from dgbdt.backends.cuda import CudaBackend
from dgbdt.engine.shard import Shard
from dgbdt.tree.split import SplitBatch
from dgbdt.tree.split import SplitParams

GPU = CudaBackend.for_ordinal(0)


@pytest.mark.parametrize("module", ["tree", "split", "data", "predict", "objective", "sketch"])
def test_modules_compile(module):
    for name in {"tree": ["build_histograms", "build_histograms_global", "partition_scatter", "tile_offsets", "subtract_siblings",
                          "partition_finish", "add_leaf_values", "start_tree"],
                 "split": ["evaluate_splits", "finish_splits"], "data": ["quantize_pack"],
                 "predict": ["predict_raw"],
                 "objective": ["squared_error", "logistic", "softmax", "column_max"],
                 "sketch": ["sketch_keys", "sketch_bit_hist", "sketch_shifts", "sketch_bucket_counts",
                            "sketch_bucket_offsets", "sketch_buckets"]}[module]:
        assert launch.kernel(module, name).attributes["max_threads_per_block"] > 0


def _data(n, nf, seed=0, nan_frac=0.1, levels=None):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, nf)).astype(np.float32)
    if levels:
        X = np.floor(X * levels).astype(np.float32)
    if nan_frac:
        X[rng.random((n, nf)) < nan_frac] = np.nan
    return X


SHAPES = [(1, 1), (1, 5), (7, 1), (100, 3), (1000, 28), (5000, 65)]


@pytest.mark.parametrize("n,nf", SHAPES)
@pytest.mark.parametrize("max_keys", [16, 4096])
def test_sketch_device_equals_cpu(n, nf, max_keys):
    X = _data(n, nf, seed=n + nf)
    a = summarize(X, None, max_keys)
    b = summarize_device(cp.asarray(X), None, max_keys)
    assert a.equals(b)
    w = np.random.default_rng(1).random(n)
    w[::3] = 0
    if w.max() > 0:
        sc = weight_scale(w.max(), n)
        assert summarize_weighted(X, w, sc, max_keys).equals(
            summarize_weighted_device(cp.asarray(X), cp.asarray(w), sc, max_keys))


@pytest.mark.parametrize("n,nf", SHAPES + [(3000, 2)])
@pytest.mark.parametrize("max_bin", [2, 16, 65, 256])
def test_quantize_pack_equals_cpu(n, nf, max_bin):
    X = _data(n, nf, seed=3)
    if nf > 1:
        X[:, 1] = np.nan            # a NaN-only column
    cuts = cuts_from_summaries(summarize(X, None, 4096), max_bin)
    sym = quantize(X, cuts)
    page = GPU.quantize_pack(cp.asarray(X), cuts)
    host = type(page)(words=cp.asnumpy(page.words), n_rows=page.n_rows,
                      n_features=page.n_features, bits=page.bits)
    np.testing.assert_array_equal(unpack(host).astype(np.int64), sym.astype(np.int64))


def _shards(X, max_bin, seed=0, scale=2.0 ** 40, zero=False):
    cuts = cuts_from_summaries(summarize(X, None, 4096), max_bin)
    page = pack(quantize(X, cuts))
    n = X.shape[0]
    rng = np.random.default_rng(seed)
    y = rng.standard_normal(n)
    out = []
    for be in (CPU, GPU):
        pg = page if be is CPU else type(page)(cp.asarray(page.words), page.n_rows,
                                               page.n_features, page.bits)
        out.append(Shard(pg, cuts.n_bins(), y, None, np.zeros((n, 1)), 64, be))
    g = rng.standard_normal((n, 1))
    h = rng.random((n, 1)) + 0.1
    if zero:
        g, h = g * 0, h * 0
    for s in out:
        s.g, s.h = s.be.asarray(g), s.be.asarray(h)
        s.start_tree(0, scale, scale)
    return cuts, out


@pytest.mark.parametrize("n,nf", SHAPES)
@pytest.mark.parametrize("max_bin", [16, 65, 256])
@pytest.mark.parametrize("smem", [None, 4096, 1024])
def test_histograms_and_partition_equal_cpu(n, nf, max_bin, smem, monkeypatch):
    """Root histogram, one split level, histograms of both children; shared-memory groups
    (smem=4096 forces several feature groups, 1024 the global-atomics kernel)."""
    if smem:
        monkeypatch.setenv("DGBDT_HIST_SMEM", str(smem))
    X = _data(n, nf, seed=n * 7 + nf)
    cuts, (c, g) = _shards(X, max_bin)
    hp = cuts.hist_ptrs()
    root = np.array([0])
    np.testing.assert_array_equal(c.histograms(root, hp), cp.asnumpy(g.histograms(root, hp)))
    f = nf - 1
    split = SplitBatch(node=np.array([0]), feature=np.array([f]),
                       split_bin=np.array([int(cuts.n_bins()[f]) // 2]),
                       default_left=np.array([True]), left=np.array([1]), right=np.array([2]))
    for s in (c, g):
        s.apply_splits(split)
    for k in ("begin", "end"):
        np.testing.assert_array_equal(getattr(c, k)[:3], cp.asnumpy(getattr(g, k)[:3]))
    kids = np.array([1, 2])
    np.testing.assert_array_equal(c.histograms(kids, hp), cp.asnumpy(g.histograms(kids, hp)))
    for node in (1, 2):    # same row sets (order within a segment may differ)
        a = np.sort(c.rows[c.begin[node]:c.end[node]])
        b = np.sort(cp.asnumpy(g.rows[int(g.begin[node]):int(g.end[node])]))
        np.testing.assert_array_equal(a, b)
    vals = np.array([0.25, -1.5])
    for s in (c, g):
        s.add_leaves(0, kids, vals)
    np.testing.assert_array_equal(c.margin, cp.asnumpy(g.margin))


def test_histogram_ten_million_rows():
    n, nf = 10_000_000, 4
    X = np.random.default_rng(0).integers(0, 200, (n, nf)).astype(np.float32)
    cuts, (c, g) = _shards(X, 256)
    hp = cuts.hist_ptrs()
    np.testing.assert_array_equal(c.histograms(np.array([0]), hp),
                                  cp.asnumpy(g.histograms(np.array([0]), hp)))


@pytest.mark.parametrize("scale,zero", [(2.0 ** 59, False), (2.0 ** 50, False),
                                        (2.0 ** 20, False), (1.0, True)])
def test_histogram_pieces_at_every_magnitude(scale, zero):
    """build_histograms cuts each int64 summand into three pieces whose 32-bit sums are flushed
    before they can overflow (cuda/tree.cu): at 2**59 (|q| near 2**61, a flush every 2048-row
    tile), 2**50, 2**20 and all-zero gradients the sums equal the CPU kernel's exactly, at the
    root (one node of 50k rows: many flushes inside a node) and after a split."""
    X = _data(50_000, 6, seed=11)
    cuts, (c, g) = _shards(X, 256, seed=5, scale=scale, zero=zero)
    qmax = int(cp.asnumpy(g._qmax)[0])
    assert qmax == int(np.abs(c.grad).max())
    hp = cuts.hist_ptrs()
    np.testing.assert_array_equal(c.histograms(np.array([0]), hp),
                                  cp.asnumpy(g.histograms(np.array([0]), hp)))
    split = SplitBatch(node=np.array([0]), feature=np.array([2]), split_bin=np.array([100]),
                       default_left=np.array([False]), left=np.array([1]), right=np.array([2]))
    for s in (c, g):
        s.apply_splits(split)
    kids = np.array([1, 2])
    np.testing.assert_array_equal(c.histograms(kids, hp), cp.asnumpy(g.histograms(kids, hp)))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("params", [
    dict(lam=1.0, alpha=0.0, gamma=0.0, min_child_weight=1.0, max_delta_step=0.0),
    dict(lam=0.0, alpha=0.5, gamma=0.0, min_child_weight=0.0, max_delta_step=0.0),
    dict(lam=2.0, alpha=0.1, gamma=0.0, min_child_weight=5.0, max_delta_step=0.7)])
def test_evaluate_splits_equal_cpu(seed, params):
    rng = np.random.default_rng(seed)
    nb = [1, 2, 65, 256, 3, 300][seed]
    nf, m = 5, 9
    hp = np.arange(nf + 1, dtype=np.int64) * (nb + 1)
    hist = np.zeros((m, hp[-1], 2), np.int64)
    hist[..., 0] = rng.integers(-2 ** 30, 2 ** 30, hist.shape[:2])
    hist[..., 1] = rng.integers(0, 2 ** 30, hist.shape[:2])
    hist[:, hp[1:] - 1, :] *= rng.integers(0, 2, (m, nf, 1))   # some features without missing
    hist[2] = 0                                               # an empty node
    hist[3, :, :] = hist[3, :1, :]                            # ties everywhere
    # every feature's slots sum to the node total (as in real histograms): the missing slots of
    # features 1.. take the difference to feature 0's sum
    tot = hist[:, hp[0]:hp[1]].sum(axis=1)
    for f in range(1, nf):
        hist[:, hp[f + 1] - 1] = 0
        hist[:, hp[f + 1] - 1] = tot - hist[:, hp[f]:hp[f + 1]].sum(axis=1)
    p = SplitParams(eta=0.3, lam=params["lam"], alpha=params["alpha"], gamma=params["gamma"],
                    min_child_weight=params["min_child_weight"],
                    max_delta_step=params["max_delta_step"])
    a = CPU.evaluate_splits(hist, tot, hp, 2.0 ** -20, 2.0 ** -20, p)
    b = GPU.evaluate_splits(cp.asarray(hist), tot, hp, 2.0 ** -20, 2.0 ** -20, p)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_sketch_device_in_feature_chunks(monkeypatch):
    """Large inputs are summarized a group of features at a time: same summaries."""
    import dgbdt.data.sketch_device as sd
    X = _data(3000, 9, seed=11)
    monkeypatch.setattr(sd, "CHUNK_VALUES", 3000 * 2)
    assert summarize(X, None, 64).equals(summarize_device(cp.asarray(X), None, 64))


@pytest.mark.parametrize("kind", ["labels", "mixed", "tiny", "signed_big"])
def test_exact_sum_device_equals_host(kind):
    """ExactSum.of on a GPU (one kernel, cuda/data.cu: exact_sum_bins) is the host's sum, unit
    for unit: 0/1 labels (two exponents, no atomics per element), values over many exponents
    with zeros and negatives, subnormals, and huge values of both signs."""
    from dgbdt.kernels.fixedpoint import ExactSum
    rng = np.random.default_rng(7)
    n = 3_000_001
    x = {"labels": (rng.random(n) < 0.3).astype(np.float64),
         "mixed": rng.standard_normal(n) * np.exp2(rng.integers(-60, 60, n)),
         "tiny": rng.standard_normal(n) * 5e-324 * rng.integers(0, 1000, n),
         "signed_big": rng.standard_normal(n) * 1e300}[kind]
    x[::17] = 0.0
    assert ExactSum.of(cp.asarray(x)) == ExactSum.of(x)
    assert ExactSum.of(cp.asarray(x[:5])) == ExactSum.of(x[:5])
    assert ExactSum.of(cp.zeros(0)) == ExactSum.of(np.zeros(0))
    bad = cp.asarray(x)
    bad[12345] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        ExactSum.of(bad)


@pytest.mark.parametrize("shape", [(1, 9_000_000), (28, 300_001), (3, 1), (70_000, 3), (0, 5)])
def test_count_rows_equals_numpy(shape):
    m = np.random.default_rng(1).random(shape) < 0.1
    np.testing.assert_array_equal(cp.asnumpy(gpu_sum.count_rows(cp.asarray(m))), m.sum(axis=1))


def test_metric_kernels_equal_cupys_array_code():
    """The metric kernels that replaced CuPy array code (compiled by NVRTC at a first fit) give
    the array code's bits: sigmoid, unit-weight labels, rows gathered in score order."""
    from dgbdt.kernels import gpu_metric
    rng = np.random.default_rng(3)
    m = cp.asarray(np.concatenate([rng.standard_normal(5000) * 30, [0.0, -0.0, 800.0, -800.0,
                                                                   np.nan, np.inf, -np.inf]]))
    e = cp.exp(-cp.abs(m))
    want = cp.where(m >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))
    for v in (m, cp.stack([m, m * 2], axis=1)[:, 1] / 2):       # contiguous and strided
        got = gpu_metric.sigmoid(v)
        np.testing.assert_array_equal(cp.asnumpy(got).view(np.int64),
                                      cp.asnumpy(want).view(np.int64))
    y = cp.asarray(np.array([0.0, 1.0, 0.4, 0.6, 2.0, -1.0, 1.0, 0.0]))
    pos, neg = gpu_metric.unit_labels(y)
    ref = cp.where(y == 1, 1, cp.where(y == 0, 0, cp.rint(y))).astype(cp.int64)
    np.testing.assert_array_equal(cp.asnumpy(pos), cp.asnumpy(ref))
    np.testing.assert_array_equal(cp.asnumpy(neg), 1 - cp.asnumpy(ref))
    order = cp.argsort(m[:5000])
    a, b, c = gpu_metric.gather3(order, m[:5000], pos[cp.arange(5000) % 8],
                                 -cp.arange(5000, dtype=cp.int64))
    np.testing.assert_array_equal(cp.asnumpy(a), cp.asnumpy(m[:5000][order]))
    np.testing.assert_array_equal(cp.asnumpy(b), cp.asnumpy(pos[order % 8]))
    np.testing.assert_array_equal(cp.asnumpy(c), -cp.asnumpy(order))


def _hist_kernel(sym, grad, qmax, tile, blocks):
    """build_histograms run directly: one node holding every row of `sym` (uint8 [n, F], 256
    slots a feature) in one feature group of `blocks` blocks, so that with one block it walks
    every tile of the node (flushes inside a node); returns it and the exact per-bin sums."""
    n, F = sym.shape
    nb = 256
    page = pack(sym.astype(np.uint32), 8)
    hp = np.arange(F + 1, dtype=np.int64) * nb
    groups = np.array([0, F], dtype=np.int32)
    smem = 24 * int(hp[-1]) + 4 * (F + 1)
    b, e, nodes = (cp.asarray(np.array([v], dtype=np.int64)) for v in (0, n, 0))
    tp = cp.empty(2, dtype=cp.int64)
    launch.kernel("tree", "tile_offsets")((1,), (256,), (b, e, nodes, np.int32(1),
                                                         np.int32(tile), tp))
    out = cp.zeros((1, int(hp[-1]), 2), dtype=cp.int64)
    k = launch.kernel("tree", "build_histograms")
    k((blocks, 1, 1), (1024,),
      (cp.asarray(page.words), np.int32(8), np.uint32(255), np.int32(F), cp.asarray(hp),
       cp.arange(n, dtype=cp.int32), cp.asarray(grad.ravel()), b, e, nodes, tp, np.int32(1),
       np.int32(tile), cp.asarray(groups), np.int32(hp[-1]),
       cp.asarray(np.array([qmax], dtype=np.uint64)), out), shared_mem=smem)
    want = np.zeros((int(hp[-1]), 2), dtype=np.int64)
    for f in range(F):
        for c in range(2):
            want[hp[f]:hp[f + 1], c] = _exact_bins(sym[:, f], grad[:, c], nb)
    return cp.asnumpy(out[0]), want


def _exact_bins(s, q, nb):
    """Per-bin int64 sums of q (exact: every partial sum is below 2**63)."""
    order = np.argsort(s, kind="stable")
    bounds = np.searchsorted(s[order], np.arange(nb + 1))
    cs = np.concatenate([[0], np.cumsum(q[order])])
    return cs[bounds[1:]] - cs[bounds[:-1]]


@pytest.mark.parametrize("M", [20, 30, 38, 45])
@pytest.mark.parametrize("pattern", ["max", "min", "alternating", "random"])
def test_histogram_worst_case_words(M, pattern):
    """build_histograms' 32-bit shared words at their bounds (cuda/tree.cu: three pieces,
    flushed every R rows): 120k rows walked by one block, most in one slot, every summand the
    largest (|q| = 2**M - 1, one sign or alternating signs) or random, for M from 20 to 45
    (n 2**M < 2**62, as the fixed-point scale keeps it). The sums equal exact per-bin sums."""
    rng = np.random.default_rng(M)
    n, F = 120_000, 2
    sym = np.zeros((n, F), dtype=np.uint8)
    sym[:, 1] = rng.integers(0, 255, n)           # feature 1 spread, feature 0 in one slot
    sym[rng.random(n) < 0.01, 0] = 7
    top = 2 ** M - 1
    q = {"max": np.full(n, top), "min": np.full(n, -top),
         "alternating": np.where(np.arange(n) % 2, top, -top),
         "random": rng.integers(-top, top + 1, n)}[pattern].astype(np.int64)
    grad = np.stack([q, np.abs(q[::-1])], axis=1)
    got, want = _hist_kernel(sym, grad, int(np.abs(grad).max()), 2048, blocks=1)
    np.testing.assert_array_equal(got, want)
