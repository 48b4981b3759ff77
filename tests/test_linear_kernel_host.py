"""The CUDA source of the linear-leaf kernels (dgbdt/kernels/cuda/linear.cu), run on the CPU:
compiled as host C++ with the few CUDA builtins it uses emulated, and compared with the numba
kernels (dgbdt.kernels.cpu_linear) for equality: the int64 histograms and leaf sums exactly,
the margins bit for bit. A block's threads run as host threads (std::thread), __syncthreads
is a std::barrier of the block, shared memory one host array per block (blocks run one after
another), atomics are host atomics: the CUDA execution model, so the privatized kernel's
flushes and barriers are exercised too. Both sides are compiled without multiply-add
contraction (the GPU backend passes --fmad=false), so this checks the kernels' arithmetic as
well as their indexing (tiles, segments, feature groups, the p_only pass, the leaf sums'
entry order); tests/gpu/test_gpu_linear.py checks the GPU itself."""
import ctypes
import shutil

import numpy as np
from cuda_host import build, launch_args, source
import pytest

from dgbdt.kernels.pages import pack
from dgbdt.kernels import cpu_linear

CUDA = __import__("pathlib").Path(__file__).parents[1] / "dgbdt" / "kernels" / "cuda"
pytestmark = [pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed"),
              pytest.mark.slow]  # host builds of the CUDA sources, whole trainings through them

PRELUDE = """
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>
using std::rint;
struct D3 { unsigned x, y, z; };
static thread_local D3 threadIdx;
static D3 blockIdx, blockDim, gridDim;
static std::barrier<>* g_barrier;
static unsigned long long g_shared[1 << 15];
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
inline void __syncthreads() { g_barrier->arrive_and_wait(); }
template <class T> inline T __ldg(const T* p) { return *p; }
struct int4 { int x, y, z, w; };
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    return std::atomic_ref<unsigned long long>(*p).fetch_add(v); }
inline unsigned atomicAdd(unsigned* p, unsigned v) {
    return std::atomic_ref<unsigned>(*p).fetch_add(v); }
"""

LAUNCH = """
// Blocks one after another; a block's threads at once, meeting at its barrier.
template <class Fn> static void launch(int gx, int gz, int bx, Fn fn) {
    gridDim = {(unsigned)gx, 1, (unsigned)gz};
    blockDim = {(unsigned)bx, 1, 1};
    for (int z = 0; z < gz; ++z) for (int b = 0; b < gx; ++b) {
        blockIdx = {(unsigned)b, 0, (unsigned)z};
        std::barrier<> bar(bx);
        g_barrier = &bar;
        std::vector<std::thread> ts;
        for (int t = 0; t < bx; ++t)
            ts.emplace_back([=] { threadIdx = {(unsigned)t, 0, 0}; fn(); });
        for (auto& t : ts) t.join();
    }
}
"""

DRIVER = LAUNCH + """
extern "C" void run_hist(int gx, int bx, const u32* words, int bits, u32 mask, int nf,
        const i64* hp, const int* rows, const double* rec, const i64* recq, const float* raw,
        const double* center, const double* inv, const unsigned char* xmask, const i64* sb,
        const i64* se, const i64* nodes, int ns, const i64* tp, int m, int tile, int p_from,
        u64* out) {
    launch(gx, 1, bx, [=] {
        linear_histograms(words, bits, mask, nf, hp, rows, rec, recq, raw, center, inv, xmask,
                          sb, se, nodes, ns, tp, m, tile, p_from, out); });
}

extern "C" void run_ptilde(int gx, int bx, const int* rows, const i64* sb, const i64* se,
        const i64* nodes, const i64* tp, int m, int tile, const float* raw, int F,
        const double* center, const double* inv, const unsigned char* xmask, const i64* rf,
        const double* rc, const double* isp, int D, const double* g, const double* h, int K,
        int k, const i64* grad, const double* consts, int p_from, double* rec, i64* recq) {
    launch(gx, 1, bx, [=] {
        linear_ptilde(rows, sb, se, nodes, tp, m, tile, raw, F, center, inv, xmask, rf, rc,
                      isp, D, g, h, K, k, grad, consts, p_from, rec, recq); });
}

extern "C" void run_hist_shared(int gx, int gz, int bx, const u32* words, int bits, u32 mask,
        int nf, const i64* hp, const int* rows, const double* rec, const i64* recq,
        const float* raw, const double* center, const double* inv, const unsigned char* xmask,
        const i64* sb, const i64* se, const i64* nodes, int ns, const i64* tp, int m, int tile,
        int p_from, const int* groups, u64* out) {
    launch(gx, gz, bx, [=] {
        linear_histograms_shared(words, bits, mask, nf, hp, rows, rec, recq, raw, center, inv,
                                 xmask, sb, se, nodes, ns, tp, m, tile, p_from, groups, out); });
}

extern "C" void run_siblings(int gx, int bx, const i64* parent, const i64* ps, int m,
        i64 n_slots, i64* out) {
    launch(gx, 1, bx, [=] { linear_siblings(parent, ps, m, n_slots, out); });
}

extern "C" void run_leaf_sums(int gx, int bx, const int* rows, const i64* sb, const i64* se,
        const i64* leaves, const float* raw, int F, const double* g, const double* h, int K,
        int k, const double* center, const double* inv, const i64* feats, int D,
        const double* consts, const i64* tp, int m, int tile, u64* out) {
    launch(gx, 1, bx, [=] {
        linear_leaf_sums(rows, sb, se, leaves, raw, F, g, h, K, k, center, inv, feats, D,
                         consts, tp, m, tile, out); });
}

extern "C" void run_predict(int gx, int bx, const float* X, i64 n, int F, const int4* nodes,
        const i64* ptrs, const i64* cls, int n_trees, int K, const i64* begin, const i64* size,
        const double* coef, const i64* feat, const double* center, const double* inv,
        double* out) {
    launch(gx, 1, bx, [=] {
        predict_linear(X, n, F, nodes, ptrs, cls, n_trees, K, begin, size, coef, feat, center,
                       inv, out); });
}

extern "C" void run_add(int gx, int bx, double* margin, int K, int k, const int* rows,
        const i64* sb, const i64* se, const i64* leaves, const float* raw, int F,
        const i64* begin, const i64* size, const double* coef, const i64* feat,
        const double* center, const double* inv, const i64* tp, int m, int tile) {
    launch(gx, 1, bx, [=] {
        add_linear_leaves(margin, K, k, rows, sb, se, leaves, raw, F, begin, size, coef, feat,
                          center, inv, tp, m, tile); });
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    src = source("linear", {"extern __shared__ u64 sh64[];": "u64* sh64 = (u64*)g_shared;"})
    return build(PRELUDE + src + DRIVER, tmp_path_factory.mktemp("linear_host"), "linear",
                 threads=True)


def _consts(s):
    """The tree's constants as the kernels read them (gpu.tree_consts' layout)."""
    return np.array([s["sg"], s["sh"], 1.0 / s["sg"], 1.0 / s["sh"], 0.0])


def _args(*values):
    """ctypes arguments: arrays as pointers (kept alive by the caller), ints, doubles."""
    out = []
    for v in values:
        if isinstance(v, ctypes.c_longlong):
            out.append(v)
        elif isinstance(v, np.ndarray):
            assert v.flags.c_contiguous
            out.append(ctypes.c_void_p(v.ctypes.data))
        elif isinstance(v, float):
            out.append(ctypes.c_double(v))
        else:
            out.append(ctypes.c_int(int(v)))
    return out


def _tile_ptr(begin, end, nodes, tile):
    """cuda/tree.cu tile_offsets: the nodes' first tiles (exclusive prefix sum)."""
    counts = (end[nodes] - begin[nodes] + tile - 1) // tile
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def _shard(seed, n=700, F=4, nb=6, K=2):
    """Rows of a page (some missing: symbol nb), raw values (NaN where missing, one feature
    not a regressor), gradients of K classes and their fixed-point values for class 1, and a
    row order with three node segments (nodes 3, 4, 6 of 8)."""
    rng = np.random.default_rng(seed)
    bins = rng.integers(0, nb + 1, (n, F)).astype(np.uint16)
    raw = rng.uniform(-1, 1, (n, F)).astype(np.float32)
    raw[bins == nb] = np.nan
    g, h = rng.normal(size=(n, K)), rng.uniform(0.1, 1, (n, K))
    # scales near the int64 limit: a summand's last bits are integer bits, so a kernel that
    # rounded any float64 step differently (another operation order, a contraction) differs
    sg, sh = 2.0 ** 50, 2.0 ** 51
    grad = np.stack([np.rint(g[:, 1] * sg), np.rint(h[:, 1] * sh)], axis=1).astype(np.int64)
    begin, end = np.zeros(8, np.int64), np.zeros(8, np.int64)
    begin[[3, 4, 6]], end[[3, 4, 6]] = [0, 180, 181], [180, 181, n]   # one of a single row
    return dict(page=pack(bins), bins=bins, raw=raw, g=g, h=h, sg=sg, sh=sh, grad=grad,
                rows=rng.permutation(n).astype(np.int32), begin=begin, end=end,
                ptrs=np.arange(F + 1, dtype=np.int64) * (nb + 1),
                center=np.array([0.1, -0.2, 0.0, 0.3]), inv=np.array([0.5, 1.0, 0.25, 2.0]),
                xmask=np.array([True, True, False, True]), n=n, F=F, K=K)


@pytest.mark.parametrize("tile,gx,bx,groups", [
    (128, 3, 64, None), (7, 5, 32, None),                    # the global kernel
    (128, 2, 64, [0, 4]), (7, 3, 32, [0, 1, 1, 3, 3, 4])])   # shared: one group, three
@pytest.mark.parametrize("p_from", [4, 0, 2], ids=["full", "p-only", "full-then-p-only"])
def test_histograms_equal_the_numba_kernel(lib, tile, gx, bx, groups, p_from):
    """The records (linear_ptilde) and either histogram kernel over four nodes, the first
    p_from with all nine sums, the rest with only their p~ entries (a level's smaller, then
    larger children): the numba kernel's int64 sums of each part exactly."""
    s = _shard(1)
    nodes = np.array([6, 5, 3, 4], np.int64)     # node 5 without rows: no tiles
    feat = np.array([[1, 3, -1], [0, -1, -1], [2, -1, -1], [3, 0, 1]], np.int64)
    coef = np.array([[0.7, -0.4, 0.0], [1.3, 0.0, 0.0], [0.2, 0.0, 0.0], [-0.3, 1.2, 0.05]])
    inv_sp = np.array([0.5, 0.5, 1.0, 0.25])
    S = int(s["ptrs"][-1])
    p = s["page"]

    def numba(part, p_only):
        return cpu_linear.linear_histograms(
            p.words, p.bits, s["F"], s["ptrs"], s["rows"], np.ascontiguousarray(s["g"][:, 1]),
            np.ascontiguousarray(s["h"][:, 1]), s["grad"], s["raw"], s["center"], s["inv"],
            s["xmask"], s["begin"][nodes[part]], s["end"][nodes[part]], feat[part], coef[part],
            inv_sp[part], s["sg"], s["sh"], S, 2, p_only)
    ref = np.concatenate([numba(slice(0, p_from), False), numba(slice(p_from, None), True)])
    out = np.zeros((len(nodes), S, 9), np.uint64)
    tp = _tile_ptr(s["begin"], s["end"], nodes, tile)
    xmask = s["xmask"].astype(np.uint8)
    # the rows' records at their positions in rows, once a row (linear_ptilde)
    rec, recq = np.full((s["n"], 3), np.nan), np.zeros((s["n"], 2), np.int64)
    lib.run_ptilde(*_args(gx, bx, s["rows"], s["begin"], s["end"], nodes, tp, len(nodes), tile,
                          s["raw"], s["F"], s["center"], s["inv"], xmask, feat, coef, inv_sp,
                          feat.shape[1], s["g"], s["h"], s["K"], 1, s["grad"], _consts(s),
                          p_from, rec, recq))
    assert not np.isnan(rec[s["begin"][3]:s["end"][6]]).any()
    for j, node in enumerate(nodes):      # g, h not for the p~-only nodes
        seg = recq[s["begin"][node]:s["end"][node]]
        assert (seg != 0).all() if j < p_from else not seg.any()
    args = (p.words, p.bits, p.mask, s["F"], s["ptrs"], s["rows"], rec, recq, s["raw"],
            s["center"], s["inv"], xmask, s["begin"], s["end"], nodes, S, tp, len(nodes), tile,
            p_from)
    if groups is None:
        lib.run_hist(*_args(gx, bx, *args, out))
    else:
        groups = np.array(groups, np.int32)
        lib.run_hist_shared(*_args(gx, len(groups) // 2, bx, *args, groups, out))
    got = out.view(np.int64)
    # the p~-only nodes' other entries 0, as the CPU's
    assert not got[p_from:][:, :, [0, 1, 5, 6, 8]].any()
    assert np.abs(ref[:, :, [2, 3, 4, 7]]).max() > 2 ** 40      # p~ sums present
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("tile,gx,bx", [(256, 4, 64), (5, 3, 96)])
def test_leaf_sums_equal_the_numba_kernel(lib, tile, gx, bx):
    s = _shard(2)
    leaves = np.array([4, 6, 3], np.int64)
    feats = np.array([[1, 3, -1], [-1, -1, -1], [0, 3, 1]], np.int64)
    D = feats.shape[1]
    ref = cpu_linear.leaf_sums(s["rows"], s["begin"][leaves], s["end"][leaves], s["raw"],
                               np.ascontiguousarray(s["g"][:, 1]),
                               np.ascontiguousarray(s["h"][:, 1]), s["center"], s["inv"],
                               feats, s["sg"], s["sh"], 3)
    out = np.zeros((len(leaves), D + 1, D + 2), np.uint64)
    tp = _tile_ptr(s["begin"], s["end"], leaves, tile)
    lib.run_leaf_sums(*_args(gx, bx, s["rows"], s["begin"], s["end"], leaves, s["raw"], s["F"],
                             s["g"], s["h"], s["K"], 1, s["center"], s["inv"], feats, D,
                             _consts(s), tp, len(leaves), tile, out))
    got = out.view(np.int64)
    low = np.tril_indices(D + 1, -1)
    assert not got[:, low[0], low[1]].any()      # the upper triangle only (the caller mirrors)
    got[:, low[0], low[1]] = got[:, low[1], low[0]]
    assert np.count_nonzero(ref[2]) == (D + 1) * (D + 2)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("tile,gx,bx", [(128, 2, 64), (3, 7, 32)])
def test_margins_equal_the_numba_kernel_bit_for_bit(lib, tile, gx, bx):
    from dgbdt.kernels.linear_math import LinearSpec
    from dgbdt.tree.linear_growth import LeafModels
    s = _shard(3)
    rng = np.random.default_rng(4)
    leaves = np.array([3, 6, 4], np.int64)
    spec = LinearSpec(3, 1.0, s["center"], 1.0 / s["inv"], s["xmask"])
    feats = [np.array([1, 3]), np.array([], np.int64), np.array([0, 3, 1])]
    lm = LeafModels.of(feats, [rng.normal(size=len(f) + 1) for f in feats], spec)
    start = rng.normal(size=(s["n"], s["K"]))
    ref = start.copy()
    cpu_linear.add_linear_leaves(ref, 1, s["rows"], s["begin"][leaves], s["end"][leaves],
                                 s["raw"], lm.begin, lm.size, lm.coef, lm.feat, lm.center,
                                 lm.inv_scale)
    got = start.copy()
    tp = _tile_ptr(s["begin"], s["end"], leaves, tile)
    lib.run_add(*_args(gx, bx, got, s["K"], 1, s["rows"], s["begin"], s["end"], leaves,
                       s["raw"], s["F"], lm.begin, lm.size, lm.coef, lm.feat, lm.center,
                       lm.inv_scale, tp, len(leaves), tile))
    assert not np.array_equal(got, start)
    np.testing.assert_array_equal(got.view(np.int64), ref.view(np.int64))


# -- the CUDA backend's linear glue (dgbdt.backends.cuda_linear) over the host build ----------
def training_rows(seed: int, classes: bool = False):
    """(X, y, w) of the training tests: 1200 rows of 4 features, a piecewise-linear target
    (three classes by its terciles with ``classes``), 5 % missing values, weights."""
    rng = np.random.default_rng(seed)
    n = 1200
    X = rng.uniform(-2, 3, (n, 4)).astype(np.float32)
    y = np.where(X[:, 0] > 0.5, 2 * X[:, 2] + 1, -X[:, 2]) + 0.1 * X[:, 1] \
        + 0.1 * rng.normal(size=n)
    X[rng.random(X.shape) < 0.05] = np.nan
    w = rng.uniform(0.5, 2.0, n)
    if classes:
        y = np.digitize(y, np.quantile(y, [0.33, 0.66])).astype(np.float64)
    return X, y, w


def _emulated_backend(lib, split_lib=None):
    """A backend whose linear-tree operations are gpu_linear.CudaLinear's (the GPU's Python
    side: buffers, tiles, the larger children's subtraction and p~ pass, the leaf sums'
    mirror, with ``split_lib`` the split search's launches and decoding) launching the host
    build of linear.cu (and linear_split.cu), and whose other operations are the CPU
    backend's: training with it runs the GPU's linear path, numpy arrays standing in for
    cupy ones."""
    from dgbdt.backends.cpu import CpuBackend
    from dgbdt.backends.cuda_linear import CudaLinear

    runs = {"linear_histograms": lib.run_hist, "linear_histograms_shared": lib.run_hist_shared,
            "linear_ptilde": lib.run_ptilde, "linear_siblings": lib.run_siblings,
            "linear_leaf_sums": lib.run_leaf_sums, "add_linear_leaves": lib.run_add}
    if split_lib is not None:
        runs.update(linear_split_scan=split_lib.run_split_scan,
                    linear_split_finish=split_lib.run_split_finish)
    launched = []

    def launch(module, name):
        assert module in ("linear", "linear_split")

        def call(grid, block, args, shared_mem=0):
            launched.append(name)
            # the kernels stride over their work: a smaller grid and block (fewer host
            # threads) compute the same; a shared kernel's grid keeps its feature groups (z)
            gx, bx = min(int(grid[0]), 3), min(int(block[0]), 32)
            conv = launch_args(args)
            z = (ctypes.c_int(int(grid[2])),) if name.endswith("_shared") else ()
            runs[name](ctypes.c_int(gx), *z, ctypes.c_int(bx), *conv)
        return call

    class Emulated(CudaLinear, CpuBackend):
        n_sm, threads_per_sm = 1, 2048
        smem_optin, smem_per_sm = 48 * 1024, 96 * 1024
        _kernel = staticmethod(launch)

        def on_device(self, a, dtype):
            return np.ascontiguousarray(a, dtype=dtype)

        def _hist_ptrs(self, hist_ptrs):
            return np.ascontiguousarray(hist_ptrs, dtype=np.int64)

        def _tile_ptr(self, shard, nodes_d, m, tile):
            return _tile_ptr(shard.begin, shard.end, nodes_d, tile)

    return Emulated(), launched


@pytest.mark.parametrize("setting,budget", [("global", None), ("shared", None),
                                            ("shared", 20 * 72)])
@pytest.mark.parametrize("growth", [
    {"max_depth": 3}, {"grow_policy": "lossguide", "max_leaves": 6, "max_depth": 0},
    {"max_depth": 3, "objective": "multi:softprob", "num_class": 3, "subsample": 0.8}],
    ids=["depthwise", "lossguide", "softprob-sampled"])
def test_training_through_the_cuda_glue_is_the_cpu_model(lib, monkeypatch, growth, setting,
                                                         budget):
    """dgbdt.train with the emulated backend (two pages, weights, missing values, column
    sampling), each histogram kernel (shared: one feature group, or with a small budget
    several): the CPU model's file, byte for byte, and every linear kernel launched."""
    from dgbdt.backends import cuda_linear as gpu_linear
    monkeypatch.setenv("DGBDT_LINEAR_HIST", setting)
    if budget:
        real = gpu_linear.feature_groups
        monkeypatch.setattr(gpu_linear, "feature_groups", lambda hp, _: real(hp, budget))
    import importlib
    import dgbdt
    train_mod = importlib.import_module("dgbdt.train")
    # classes: class k's gradients are column k of g and h [n, 3]
    X, y, w = training_rows(5, classes="num_class" in growth)
    p = {"linear_tree": True, "eta": 0.4, "max_bin": 16, "base_score": 0.5,
         "max_linear_features": 2, "colsample_bynode": 0.8, "seed": 1, **growth}
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 3, verbose_eval=False)
    backend, launched = _emulated_backend(lib)
    monkeypatch.setattr(train_mod, "get_backend", lambda device: backend)
    emu = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w, page_rows=700), 3,
                      verbose_eval=False)
    hist = "linear_histograms" + ("_shared" if setting == "shared" else "")
    # depth-wise levels take their larger children's g, h and x~ sums by subtraction; a
    # loss-guided tree builds both children of the node it expands from their rows
    siblings = {"linear_siblings"} if "grow_policy" not in growth else set()
    assert set(launched) == {hist, "linear_ptilde", "linear_leaf_sums",
                             "add_linear_leaves"} | siblings
    assert emu.save_raw() == cpu.save_raw()


def test_feature_groups_fit_the_budget():
    from dgbdt.backends.cuda_linear import feature_groups
    hp = np.cumsum([0, 17, 17, 5, 30, 17])
    g, widest = feature_groups(hp, 40 * 72)
    assert g.tolist() == [0, 3, 3, 4, 4, 5] and widest == 39     # 17 + 17 + 5 slots fit 40
    assert feature_groups(hp, 29 * 72) is None          # feature 3 alone is too wide
    g, widest = feature_groups(hp)                      # 48 KiB: one group
    assert g.tolist() == [0, 5] and widest == 86


def test_shared_budget_is_half_an_sm(monkeypatch):
    """Two linear histogram blocks resident per SM (each less the 1 KiB the device reserves),
    within the per-block limit, never under the default 48 KiB; DGBDT_LINEAR_SMEM overrides
    within the per-block limit."""
    from dgbdt.backends.cuda_linear import shared_budget
    monkeypatch.delenv("DGBDT_LINEAR_SMEM", raising=False)
    assert shared_budget(227 * 1024, 228 * 1024) == 113 * 1024      # Hopper
    assert shared_budget(163 * 1024, 164 * 1024) == 81 * 1024       # A100
    assert shared_budget(48 * 1024, 64 * 1024) == 48 * 1024
    assert shared_budget(99 * 1024, 100 * 1024) == 49 * 1024
    monkeypatch.setenv("DGBDT_LINEAR_SMEM", str(300 * 1024))
    assert shared_budget(227 * 1024, 228 * 1024) == 227 * 1024


@pytest.mark.parametrize("K", [1, 3])
def test_prediction_equals_the_numba_kernel_bit_for_bit(lib, K):
    """cuda/linear.cu predict_linear over gpu.pack_nodes' packed trees (linear leaves, and a
    constant tree's leaves mixed in): cpu_linear.predict_linear's values, bit for bit, missing
    values taking the default way and dropping their terms."""
    import dgbdt
    from dgbdt.model.margins import _concatenated
    from dgbdt.backends.cuda import pack_nodes
    rng = np.random.default_rng(8)
    n, F = 900, 4
    X = rng.uniform(-2, 3, (n, F)).astype(np.float32)
    y = np.where(X[:, 0] > 0.5, 2 * X[:, 2] + 1, -X[:, 2]) + 0.1 * rng.normal(size=n)
    X[rng.random(X.shape) < 0.1] = np.nan
    extra = {"objective": "multi:softprob", "num_class": K} if K > 1 else {}
    label = np.digitize(y, np.quantile(y, [0.33, 0.66])) if K > 1 else y
    p = {"linear_tree": True, "max_depth": 3, "eta": 0.5, "max_bin": 16, **extra}
    b = dgbdt.train(p, dgbdt.Dataset(X, label=label), 3, verbose_eval=False)
    trees = list(range(len(b.trees)))
    cat, ptrs, cls = _concatenated([b.trees[i] for i in trees], [b.tree_class[i] for i in trees])
    cat = dict(cat)
    cat["lin_size"] = cat["lin_size"].copy()
    leaf0 = np.flatnonzero(cat["lin_size"] >= 0)[0]
    cat["lin_size"][leaf0] = -1           # one constant leaf: its threshold as float64
    ref = rng.normal(size=(n, K))
    got = ref.copy()
    cpu_linear.predict_linear(X, cat["left"], cat["right"], cat["feature"], cat["threshold"],
                              cat["default_left"], cat["lin_begin"], cat["lin_size"],
                              cat["lin_coef"], cat["lin_feat"], cat["lin_center"],
                              cat["lin_inv_scale"], ptrs, cls, ref)
    nodes = pack_nodes(cat)
    lib.run_predict(*_args(3, 32, X, ctypes.c_longlong(n), F, nodes, ptrs, cls, len(ptrs) - 1, K,
                           cat["lin_begin"], cat["lin_size"], cat["lin_coef"], cat["lin_feat"],
                           cat["lin_center"], cat["lin_inv_scale"], got))
    assert np.abs(got - ref).max() == 0.0 and got.view(np.int64).tolist() == \
        ref.view(np.int64).tolist()
