"""The CUDA source of the LambdaMART gradients (dgbdt/kernels/cuda/rank.cu), run on the CPU:
compiled as host C++ (no multiply-add contraction, as the GPU backend's --fmad=false), its grid
walked one thread after another, and compared with the numba kernel
(dgbdt.kernels.cpu_rank.lambda_gradients). Valid as an emulation because each thread owns its
query's rows and scratch slices: no thread reads another's memory, none waits at a barrier.
It checks the kernel's logic (the stable sorts, topk and mean pairs, the hashed draws, delta
NDCG / AP, the normalizations and weights) in CI; the GPU's exp and log2 are checked by
tests/gpu/test_gpu_rank.py."""
import ctypes
import shutil

import numpy as np
from cuda_host import build, launch_args, source
import pytest

from dgbdt.data.queries import group_pointers
from dgbdt.kernels import cpu_rank

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")

PRELUDE = """
#include <cmath>
using std::isnan;
template <class T> inline T __ldg(const T* p) { return *p; }
#define RANK_EXP32(x) expf(x)     /* libm's, as the numba kernel's np.exp of a float32 */
struct D3 { unsigned x, y, z; };
static D3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
"""

DRIVER = """
extern "C" void emulate(int gx, int bx, int loss, int method, int k, int exp_gain,
        int normalize, int score_norm, u64 seed, u64 epoch, const i64* gptr, const u64* qids,
        i64 n_groups, const float* pred, const float* label, const float* qw, double w_norm,
        const double* discount, int* s0, int* s1, int* s2, float* s3, double* s4, double* s5,
        float* g, float* h) {
    gridDim = {(unsigned)gx, 1, 1};
    blockDim = {(unsigned)bx, 1, 1};
    for (int b = 0; b < gx; ++b) for (int t = 0; t < bx; ++t) {
        blockIdx = {(unsigned)b, 0, 0};
        threadIdx = {(unsigned)t, 0, 0};
        lambda_gradients(loss, method, k, exp_gain, normalize, score_norm, seed, epoch, gptr,
                         qids, n_groups, pred, label, qw, w_norm, discount, s0, s1, s2, s3,
                         s4, s5, g, h);
    }
}
"""


def _build(where, prelude):
    return build(prelude + source("rank") + DRIVER, where, "rank")


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    """rank.cu with libm's expf in the sigmoid: the CPU kernel's arithmetic throughout."""
    return _build(tmp_path_factory.mktemp("rank_host"), PRELUDE)


@pytest.fixture(scope="module")
def lib_double_exp(tmp_path_factory):
    """rank.cu as the GPU runs it: the sigmoid's exp in double, rounded to float32."""
    return _build(tmp_path_factory.mktemp("rank_host_dexp"),
                  PRELUDE.replace("#define RANK_EXP32", "// "))


def _queries(seed, n_queries=60, max_rows=200, binary=False):
    """Queries of 1 to max_rows rows, ties in labels and in predictions."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_rows + 1, n_queries)
    sizes[:3] = (1, 2, max_rows)
    qid = np.repeat(np.arange(n_queries, dtype=np.int64) * 7 + 3, sizes)
    n = qid.shape[0]
    label = (rng.integers(0, 2, n) if binary else rng.integers(0, 5, n)).astype(np.float32)
    pred = (np.round(rng.standard_normal(n) * 4) / 4).astype(np.float32)    # many ties
    pred += ((rng.random(n) < 0.5) * rng.standard_normal(n) * 0.01).astype(np.float32)
    label[qid == qid[0]] = 1.0                       # a query with one label: no pairs
    qw = (rng.random(n_queries) * 2 + 0.1).astype(np.float32)
    return qid, pred.astype(np.float32), label, qw


def _cpu(args, qid, pred, label, qw, w_norm):
    gptr, ids = group_pointers(qid)
    g = np.empty_like(pred)
    h = np.empty_like(pred)
    cpu_rank.lambda_gradients(*args, gptr, ids.view(np.uint64), pred, label, g, h, qw, w_norm,
                              *cpu_rank.NO_BIAS)
    return g, h


def _emulated(lib, args, qid, pred, label, qw, w_norm, block):
    loss, method, k, exp_gain, normalize, score_norm, seed, epoch = args
    gptr, ids = group_pointers(qid)
    ids = ids.view(np.uint64)
    n, nq = pred.shape[0], gptr.shape[0] - 1
    discount = cpu_rank.discount_table(int(np.diff(gptr).max()))
    ints = np.full((3, n), -7, dtype=np.int32)
    ry = np.zeros(n, np.float32)
    dbl = np.zeros((2, n))
    g = np.full(n, np.nan, np.float32)
    h = np.full(n, np.nan, np.float32)

    def ptr(a):
        return ctypes.c_void_p(a.ctypes.data)
    gx = -(-nq // block)
    lib.emulate(ctypes.c_int(gx), ctypes.c_int(block), ctypes.c_int(loss), ctypes.c_int(method),
                ctypes.c_int(k), ctypes.c_int(int(exp_gain)), ctypes.c_int(int(normalize)),
                ctypes.c_int(int(score_norm)), ctypes.c_uint64(int(seed)),
                ctypes.c_uint64(int(epoch)), ptr(gptr), ptr(ids), ctypes.c_longlong(nq),
                ptr(pred), ptr(label), ptr(qw), ctypes.c_double(w_norm), ptr(discount),
                ptr(ints[0]), ptr(ints[1]), ptr(ints[2]), ptr(ry), ptr(dbl[0]), ptr(dbl[1]),
                ptr(g), ptr(h))
    return g, h


CASES = [  # loss (0 ndcg, 1 pairwise, 2 map), method (0 topk, 1 mean), k, exp_gain, normalize,
           # score_norm
    (0, 0, 32, True, True, True), (0, 0, 3, False, True, False), (0, 1, 1, True, True, True),
    (0, 1, 4, True, False, True), (1, 0, 32, True, True, True), (1, 1, 2, True, True, False),
    (2, 0, 32, True, True, True), (2, 1, 3, True, True, True), (2, 0, 5, True, False, True)]


@pytest.mark.parametrize("case", CASES)
def test_cuda_source_run_on_the_host_equals_the_cpu_kernel(lib, case):
    loss, method, k, exp_gain, normalize, score_norm = case
    qid, pred, label, qw = _queries(seed=sum(case[:3]), binary=loss == 2)
    args = (loss, method, k, exp_gain, normalize, score_norm, np.uint64(5), np.uint64(3))
    w_norm = 0.83
    ref_g, ref_h = _cpu(args, qid, pred, label, qw, w_norm)
    assert np.abs(ref_g).max() > 0 and np.isfinite(ref_g).all()
    for block in (32, 7):         # the result does not depend on the launch shape
        g, h = _emulated(lib, args, qid, pred, label, qw, w_norm, block)
        # the same float32 sums, bit for bit (host exp/log2: glibc's, as numba's)
        np.testing.assert_array_equal(g, ref_g)
        np.testing.assert_array_equal(h, ref_h)
    if method == 1:               # another round draws other partners
        other = (*args[:7], np.uint64(4))
        g2, _ = _emulated(lib, other, qid, pred, label, qw, w_norm, 32)
        np.testing.assert_array_equal(g2, _cpu(other, qid, pred, label, qw, w_norm)[0])
        assert not np.array_equal(g2, ref_g)


def test_stable_sort_matches_numpy(lib):
    """The kernel's ranking (its stable merge sort) is numpy's stable argsort of -pred: with
    ties everywhere, pairwise gradients with every pair (k = n) depend on the tie order only
    through which row is 'first'; a query whose rows all tie makes delta NDCG positional."""
    qid = np.zeros(9, np.int64)
    pred = np.array([1, 1, 0, 1, 0, 0, 2, 2, 1], np.float32)
    label = np.array([0, 1, 2, 0, 1, 3, 0, 2, 1], np.float32)
    qw = np.ones(1, np.float32)
    for args in [(0, 0, 2, True, True, True, np.uint64(0), np.uint64(0)),
                 (0, 0, 9, True, False, False, np.uint64(0), np.uint64(0))]:
        ref = _cpu(args, qid, pred, label, qw, 1.0)
        got = _emulated(lib, args, qid, pred, label, qw, 1.0, 4)
        np.testing.assert_array_equal(got[0], ref[0])
        np.testing.assert_array_equal(got[1], ref[1])


def test_double_exp_differs_from_expf_by_an_ulp_at_most_rarely(lib_double_exp):
    """The GPU's sigmoid (exp in double, rounded) against the CPU's expf: the gradients agree
    but in a last float32 bit of a few rows (the tolerance tests/gpu/test_gpu_rank.py uses)."""
    qid, pred, label, qw = _queries(seed=1)
    args = (0, 0, 32, True, True, True, np.uint64(5), np.uint64(3))
    ref_g, ref_h = _cpu(args, qid, pred, label, qw, 1.0)
    g, h = _emulated(lib_double_exp, args, qid, pred, label, qw, 1.0, 32)
    for a, b in ((g, ref_g), (h, ref_h)):
        assert (a != b).mean() < 0.01
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


# -- the GPU path's Python side (objective_rank.device_gradients, kernels.gpu_rank) ----------
def _launcher(lib, launched):
    """gpu.kernel's stand-in: launches the host build with the arguments gpu_rank passes,
    converted by their numpy types (so their order and types must be the kernel's)."""
    def launch(module, name):
        assert (module, name) == ("rank", "lambda_gradients")

        def call(grid, block, args):
            launched.append(name)
            conv = launch_args(args)
            # a grid-stride loop over the groups: a smaller grid computes the same
            lib.emulate(ctypes.c_int(min(int(grid[0]), 3)), ctypes.c_int(min(int(block[0]), 32)),
                        *conv)
        return call
    return launch


@pytest.mark.parametrize("objective,extra", [
    ("rank:ndcg", {}), ("rank:pairwise", {"lambdarank_pair_method": "mean"}),
    ("rank:map", {"lambdarank_pair_method": "mean", "lambdarank_num_pair_per_sample": 3}),
    ("rank:map", {"lambdarank_num_pair_per_sample": 4})])
def test_training_through_the_gpu_glue_is_the_cpu_model(lib, monkeypatch, objective, extra):
    """dgbdt.train whose rank gradients go through the GPU path (the seam's cached groups,
    casts, the launch's arguments) to the host build: the CPU model, byte for byte, with
    query weights and several pages."""
    import dgbdt
    from dgbdt.objectives import ranking as objective_rank
    from dgbdt.kernels import gpu_rank
    from test_rank import rank_data
    X, y, qid = rank_data(n_queries=50, seed=21, binary=objective == "rank:map")
    w = np.random.default_rng(3).uniform(0.5, 2.0, np.unique(qid).shape[0])
    p = {"objective": objective, "max_depth": 3, "eta": 0.3, "seed": 2, **extra}
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y, qid=qid, weight=w), 4)
    launched = []
    monkeypatch.setattr(gpu_rank, "kernel", _launcher(lib, launched))
    monkeypatch.setattr(objective_rank, "on_device", lambda backend: True)
    glue = dgbdt.train(p, dgbdt.Dataset(X, label=y, qid=qid, weight=w, page_rows=300), 4)
    assert launched == ["lambda_gradients"] * 4
    assert glue.save_raw() == cpu.save_raw()
