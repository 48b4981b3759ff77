"""The GPU's linear split search (dgbdt/kernels/cuda/linear_split.cu), run on the CPU: compiled
as host C++ (tests/test_linear_kernel_host.py's emulation: a block's threads as host threads
meeting at a barrier; here also warp shuffles, through the block's barrier, and a 64-bit
atomicMax) and compared with the numba search (kernels.cpu_linear.evaluate_linear_splits,
plus feature_totals for the right side) on random fixed-point histograms: the gains bit for
bit, the features, bins, directions and both sides' sums exactly. The histograms have missing
values (both scan directions), empty bins (the CPU's skip), empty sides, zeroed features
(column sampling), a feature wider than the block (chunks carried over), a feature without
candidates, an exact copy of a feature (ties: the first candidate wins), nodes with and
without p~, several min_child_weight; and training through the GPU's Python glue with these
kernels gives the CPU's model byte for byte, depth-wise and loss-guided."""

import numpy as np
from cuda_host import build, source
import pytest

from dgbdt.kernels import cpu_linear
import test_linear_kernel_host as host
from test_linear_kernel_host import LAUNCH, PRELUDE, _args, _emulated_backend, training_rows

lib = host.lib          # the linear.cu host build (a module fixture) for the training test

pytestmark = [pytest.mark.skipif(__import__("shutil").which("g++") is None,
                                 reason="g++ not installed"),
              pytest.mark.slow]  # host builds of the CUDA sources, whole trainings through them

SPLIT_PRELUDE = """
#define __shared__ static
static unsigned long long g_xchg[1024];
// A warp's shuffle: every thread of the block calls it together (the kernel's shuffles are
// block-uniform), so a slot per thread and the block's barrier give each lane its source's
// value.
template <class T> inline T shfl_from(T v, unsigned src, bool take) {
    static_assert(sizeof(T) == 8);
    std::memcpy(&g_xchg[threadIdx.x], &v, 8);
    __syncthreads();
    T r = v;
    if (take) std::memcpy(&r, &g_xchg[src], 8);
    __syncthreads();
    return r;
}
template <class T> inline T __shfl_up_sync(unsigned, T v, int o) {
    return shfl_from(v, threadIdx.x - o, (int)(threadIdx.x & 31) >= o); }
template <class T> inline T __shfl_xor_sync(unsigned, T v, int o) {
    return shfl_from(v, threadIdx.x ^ (unsigned)o, true); }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
    std::atomic_ref<unsigned long long> a(*p);
    unsigned long long old = a.load();
    while (old < v && !a.compare_exchange_weak(old, v)) {}
    return old;
}
"""

SPLIT_DRIVER = LAUNCH + """
extern "C" void run_split_scan(int gx, int bx, const i64* hist, int S, const i64* hp, int F,
        const i64* nt, const unsigned char* addable, const unsigned char* has_p,
        const double* consts, double lam0, double lam1, double mcw, int nb_max, int m,
        u64* best) {
    launch(gx, 1, bx, [=] {
        linear_split_scan(hist, S, hp, F, nt, addable, has_p, consts, lam0, lam1, mcw,
                          nb_max, m, best); });
}

extern "C" void run_split_finish(int gx, int bx, const i64* hist, int S, const i64* hp,
        int nb_max, int m, const u64* best, i64* out) {
    launch(gx, 1, bx, [=] { linear_split_finish(hist, S, hp, nb_max, m, best, out); });
}

extern "C" void run_node_totals(int gx, int bx, const i64* hist, int S, int s0, int s1, int m,
        i64* out) {
    launch(gx, 1, bx, [=] { linear_node_totals(hist, S, s0, s1, m, out); });
}
"""


@pytest.fixture(scope="module")
def split_lib(tmp_path_factory):
    return build(PRELUDE + SPLIT_PRELUDE + source("linear_split") + SPLIT_DRIVER,
                 tmp_path_factory.mktemp("linear_split_host"), "linear_split", threads=True)


#: non-missing bins of each feature: few, more than a 64- or 96-thread block (chunks), none
#: (no candidate), a copy of feature 1 (ties), with bins no row falls in (the CPU's skip)
NB = [3, 150, 0, 150, 12]


def _histograms(seed, m):
    """Random fixed-point linear histograms [m, S, 9] of m nodes' rows (as
    cpu_linear.linear_histograms sums them: each summand rounded once), their totals, and the
    scan's other inputs. Node 0 has no rows, node 1 one row; feature 3 is feature 1's copy;
    feature 4's rows use only bins 0, 5 and 11; each node's missing values are on or off."""
    rng = np.random.default_rng(seed)
    ptrs = np.concatenate([[0], np.cumsum(np.array(NB) + 1)]).astype(np.int64)
    S, F = int(ptrs[-1]), len(NB)
    sg, sh = 2.0 ** 40, 2.0 ** 41
    hist = np.zeros((m, S, 9), np.int64)
    has_p = rng.random(m) < 0.6
    for j in range(m):
        n = [0, 1][j] if j < 2 else int(rng.integers(20, 400))
        g, h = rng.normal(size=n), rng.uniform(0.0, 1.0, n)
        h[rng.random(n) < 0.1] = 0.0                          # sampled-out rows
        pt = rng.uniform(-1, 1, n) if has_p[j] else np.zeros(n)
        miss_rate = [0.0, 0.15][j % 2]
        x1 = rng.uniform(-1, 1, n)
        b1 = np.minimum((x1 + 1) / 2 * NB[1], NB[1] - 1).astype(np.int64)
        miss1 = rng.random(n) < miss_rate
        g += 1.5 * ((x1 < -0.3) | miss1)    # feature 1: missing best with low bins (backward)
        for f in range(F):
            if f in (1, 3):
                x, b, miss = x1.copy(), b1.copy(), miss1
            elif NB[f] == 0:
                x, b, miss = np.zeros(n), np.zeros(n, np.int64), np.ones(n, bool)
            else:
                x = rng.uniform(-1, 1, n)
                b = rng.integers(0, NB[f], n) if f != 4 else rng.choice([0, 5, 11], n)
                miss = rng.random(n) < miss_rate
            x = np.where(miss, 0.0, x)
            b = np.where(miss, NB[f], b)
            gs, hs = g * sg, h * sh
            hps = hs * pt
            terms = [np.rint(g * sg), np.rint(h * sh), np.rint(gs * pt), np.rint(hps),
                     np.rint(hps * pt), np.rint(gs * x), np.rint(hs * x), np.rint(hps * x),
                     np.rint(hs * x * x)]
            for c, t in enumerate(terms):
                np.add.at(hist[j, :, c], ptrs[f] + b, t.astype(np.int64))
    node_totals = hist[:, ptrs[0]:ptrs[1]].sum(axis=1)
    masked = hist.copy()
    if m > 2:
        masked[2, ptrs[2]:ptrs[3]] = 0                        # a node's column sample
        masked[m - 1, ptrs[4]:ptrs[5]] = 0
    addable = rng.random((m, F)) < 0.7
    addable[:, 3] = addable[:, 1]
    return masked, ptrs, node_totals, addable, has_p, 1.0 / sg, 1.0 / sh


def _gpu_search(split_lib, hist, ptrs, node_totals, addable, has_p, inv_sg, inv_sh, lam0,
                lam1, mcw, gx, bx):
    """linear_split_scan then linear_split_finish, decoded as gpu_linear does."""
    m, S = hist.shape[:2]
    F = len(ptrs) - 1
    nb_max = max(1, int((np.diff(ptrs) - 1).max()))
    best = np.zeros(m, np.uint64)
    out = np.zeros((m, 22), np.int64)
    add8, p8 = addable.astype(np.uint8), has_p.astype(np.uint8)
    consts = np.array([0.0, 0.0, inv_sg, inv_sh, 0.0])     # gpu.tree_consts' layout
    split_lib.run_split_scan(*_args(gx, bx, hist, S, ptrs, F, node_totals, add8, p8, consts,
                                    lam0, lam1, mcw, nb_max, m, best))
    split_lib.run_split_finish(*_args(2, 32, hist, S, ptrs, nb_max, m, best, out))
    return (out[:, 0].astype(np.uint32).view(np.float32), out[:, 1].astype(np.int32),
            out[:, 2].astype(np.int32), out[:, 3].astype(bool), out[:, 4:13], out[:, 13:22])


@pytest.mark.parametrize("m,gx,bx", [(1, 1, 64), (2, 2, 96), (7, 3, 64)])
@pytest.mark.parametrize("mcw,lam0,lam1", [(0.0, 1.0, 0.5), (3.0, 0.0, 1e-3),
                                           (1e9, 1.0, 1.0)])
def test_split_search_equals_the_numba_kernel(split_lib, m, gx, bx, mcw, lam0, lam1):
    hist, ptrs, totals, addable, has_p, inv_sg, inv_sh = _histograms(10 + m, m)
    ref = cpu_linear.evaluate_linear_splits(hist, ptrs, totals, addable, has_p, inv_sg,
                                            inv_sh, lam0, lam1, mcw)
    right = cpu_linear.feature_totals(hist, ptrs, np.maximum(ref[1], 0).astype(np.int64)) \
        - ref[4]
    got = _gpu_search(split_lib, hist, ptrs, totals, addable, has_p, inv_sg, inv_sh, lam0,
                      lam1, mcw, gx, bx)
    np.testing.assert_array_equal(got[0].view(np.uint32), ref[0].view(np.uint32))
    for a, b in zip(got[1:5], ref[1:5]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got[5], right)
    if mcw >= 1e9:                                   # no side heavy enough: no split anywhere
        assert (ref[1] == -1).all() and (ref[0] == 0).all()
    elif m == 7:                                     # the cases the data was built for
        assert (ref[1] >= 0).sum() >= 4 and ref[1][0] == -1
        assert ref[3].any() and not ref[3].all()     # both directions won somewhere


@pytest.mark.parametrize("m,gx,bx", [(1, 1, 32), (7, 3, 64), (5, 8, 96)])
def test_node_totals_are_the_slot_sums(split_lib, m, gx, bx):
    """linear_node_totals: each node's nine sums over feature 0's slots (more slots than a
    block's threads, negative sums), as the array code's axis sum."""
    hist, ptrs, *_ = _histograms(20 + m, m)
    rng = np.random.default_rng(m)
    hist = np.ascontiguousarray(hist + rng.integers(-2 ** 40, 2 ** 40, hist.shape))
    for s0, s1 in ((int(ptrs[0]), int(ptrs[1])), (0, hist.shape[1])):
        out = np.full((m, 9), 7, np.int64)
        split_lib.run_node_totals(*_args(gx, bx, hist, hist.shape[1], s0, s1, m, out))
        np.testing.assert_array_equal(out, hist[:, s0:s1].sum(axis=1))


def test_ties_keep_the_first_candidate(split_lib):
    """Exact ties resolve as the CPU resolves them (the first candidate in its scan order):
    feature 3 is feature 1's copy (same sums in every bin, same addable), so with only those
    two left every candidate of 3 ties one of 1 and the winners must be on feature 1; and a
    feature whose 12 bins are a palindrome (bin k's sums are bin 11 - k's, the missing slot
    empty) has candidates b and 10 - b with swapped sides, the same gain bit for bit
    (a + b == b + a), so the winner's bin must be the smaller one."""
    hist, ptrs, totals, addable, has_p, inv_sg, inv_sh = _histograms(21, 7)
    only = hist.copy()
    for f in (0, 2, 4):
        only[:, ptrs[f]:ptrs[f + 1]] = 0
    ref = cpu_linear.evaluate_linear_splits(only, ptrs, totals, addable, has_p, inv_sg,
                                            inv_sh, 1.0, 0.5, 0.0)
    got = _gpu_search(split_lib, only, ptrs, totals, addable, has_p, inv_sg, inv_sh, 1.0, 0.5,
                      0.0, 3, 64)
    assert set(ref[1][ref[1] >= 0].tolist()) == {1} and (ref[1] >= 0).sum() >= 4
    for a, b in zip(got[:5], ref):
        np.testing.assert_array_equal(a, b)
    pal = np.zeros_like(hist)
    p4 = ptrs[4]
    pal[:, p4:p4 + 6] = hist[:, p4:p4 + 6]
    pal[:, p4 + 6:p4 + 12] = hist[:, p4:p4 + 6][:, ::-1]
    tot = pal[:, p4:ptrs[5]].sum(axis=1)
    # min_child_weight 0.5: candidate 11 (every bin left, the empty missing slot right) out
    ref = cpu_linear.evaluate_linear_splits(pal, ptrs, tot, addable, has_p, inv_sg, inv_sh,
                                            1.0, 0.5, 0.5)
    got = _gpu_search(split_lib, pal, ptrs, tot, addable, has_p, inv_sg, inv_sh, 1.0, 0.5,
                      0.5, 2, 32)
    for a, b in zip(got[:5], ref):
        np.testing.assert_array_equal(a, b)
    won = ref[1] == 4
    assert won.sum() >= 2 and (ref[2][won] <= 5).all() and not ref[3].any()
    assert (ref[2][won] == 0).any()       # candidate 0 ties 6 (bins 1..4, 7..10 are empty)


@pytest.mark.parametrize("growth", [
    {"max_depth": 3}, {"grow_policy": "lossguide", "max_leaves": 6, "max_depth": 0},
    {"max_depth": 3, "colsample_bynode": 0.6, "interaction_constraints": [[0, 1], [1, 2, 3]]}],
    ids=["depthwise", "lossguide", "constrained"])
def test_training_with_the_emulated_split_search_is_the_cpu_model(lib, split_lib, monkeypatch,
                                                                  growth):
    """dgbdt.train with the emulated GPU backend doing the histograms, the split search
    (linear_growth's backend_of routed to it), the leaf sums and the margins: the CPU model's
    file, byte for byte, and every kernel launched."""
    import importlib
    import dgbdt
    from dgbdt.tree import linear_growth
    train_mod = importlib.import_module("dgbdt.train")
    X, y, w = training_rows(6)
    p = {"linear_tree": True, "eta": 0.4, "max_bin": 16, "base_score": 0.5,
         "max_linear_features": 2, "seed": 1, "min_child_weight": 2.0, **growth}
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 3, verbose_eval=False)
    backend, launched = _emulated_backend(lib, split_lib)
    monkeypatch.setattr(train_mod, "get_backend", lambda device: backend)
    monkeypatch.setattr(linear_growth, "backend_of", lambda a: backend)
    emu = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w, page_rows=700), 3,
                      verbose_eval=False)
    assert {"linear_split_scan", "linear_split_finish", "linear_leaf_sums"} <= set(launched)
    assert emu.save_raw() == cpu.save_raw()
