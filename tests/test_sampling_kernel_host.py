"""The CUDA source of row sampling's draws (dgbdt/kernels/cuda/sampling.cu), run on the CPU:
compiled as host C++ (no multiply-add contraction, as the GPU backend's --fmad=false), its grid
walked one thread after another, against the array code it replaces on a GPU (dgbdt.engine.sampling's
apply_rows, dgbdt.engine.gradient_sampling's sample_class, dgbdt.engine.sampled_rounds's candidate_rows), which is
the specification and what the CPU runs. Each thread owns its row: the emulation is exact.
tests/gpu/test_gpu_compact_rows.py checks the GPU's build."""
import shutil
from types import SimpleNamespace

import numpy as np
import pytest
from cuda_host import build, launch_args, source

from dgbdt.engine import sampled_rounds as compact
from dgbdt.backends.cpu import CPU
from dgbdt.engine.sampling import Sampling, draw_key
from dgbdt.engine.gradient_sampling import (
    _DRAW, BITS, LAMBDA, Holder, magnitudes, sample_class, threshold)

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")

PRELUDE = """
#include <cmath>
using std::sqrt; using std::ceil;
template <class T> inline T __ldg(const T* p) { return *p; }
struct D3 { unsigned x, y, z; };
static D3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
"""

DRIVER = """
static void grid(int gx, int bx) { gridDim = {(unsigned)gx, 1, 1}; blockDim = {(unsigned)bx, 1, 1}; }
#define WALK(call) for (int b = 0; b < (int)gridDim.x; ++b) for (int t = 0; t < (int)blockDim.x; ++t) \\
    { blockIdx = {(unsigned)b, 0, 0}; threadIdx = {(unsigned)t, 0, 0}; call; }
extern "C" void emulate_candidates(const double* g, const double* h, int K, i64 n, i64 id0,
        const u64* keys, const double* cr, const double* step, const double* vt, double lam,
        u64 key0, double rate, unsigned char* keep) {
    grid(3, 7);
    WALK(candidates(g, h, K, n, id0, keys, cr, step, vt, lam, key0, rate, keep))
}
extern "C" void emulate_apply(double* g, double* h, int K, int k, i64 n, i64 id0, u64 key,
        int by_gradient, double rate, double lam, double qscale, i64 t_star, double ratio,
        int v_zero) {
    grid(3, 7);
    WALK(apply_sample(g, h, K, k, n, id0, key, by_gradient, rate, lam, qscale, t_star, ratio,
                      v_zero))
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build(PRELUDE + source("sampling") + DRIVER,
                 tmp_path_factory.mktemp("sampling_host"), "sampling")


def _gradients(seed, n=3000, K=2):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((n, K)) * rng.choice([1e-3, 1.0, 30.0], (n, K))
    h = rng.random((n, K)) * 0.25
    g[rng.random(n) < 0.1] = 0.0          # rows outside a sample, rows without a gradient
    h[rng.random(n) < 0.05] = 0.0
    return g, h


def _shard(g, h, id0):
    return SimpleNamespace(g=g, h=h, be=CPU, n_rows=g.shape[0], id_pieces=[(id0, g.shape[0])])


@pytest.mark.parametrize("by_gradient", [False, True])
def test_candidates_are_the_array_codes_rows(lib, by_gradient):
    g, h = _gradients(1)
    n, K = g.shape
    sampling = Sampling(seed=11, subsample=0.3,
                        method="gradient_based" if by_gradient else "uniform")
    guess = [(0.8, 1e-3, 2.5), (1.7, 2e-4, 0.9)]
    want = compact.candidate_rows(_shard(g, h, 500), sampling, 7, guess)
    keep = np.zeros(n, dtype=np.uint8)
    if by_gradient:
        keys = np.array([draw_key(11, _DRAW + k, 7) for k in range(K)], dtype=np.uint64)
        cr = np.array([c * compact.REACH for c, _, _ in guess])
        st = np.array([s for _, s, _ in guess])
        vt = np.array([v / compact.REACH for _, _, v in guess])
        args = (g, h, np.int32(K), np.int64(n), np.int64(500), keys, cr, st, vt,
                np.float64(LAMBDA), np.uint64(0), np.float64(0.0), keep)
    else:
        z = np.zeros(1)
        args = (g, h, np.int32(0), np.int64(n), np.int64(500), np.zeros(1, np.uint64), z, z,
                z, np.float64(LAMBDA), np.uint64(draw_key(11, 0, 7)), np.float64(0.3), keep)
    lib.emulate_candidates(*launch_args(args))
    assert 0 < want.shape[0] < n
    np.testing.assert_array_equal(np.flatnonzero(keep), want)


def test_uniform_apply_is_apply_rows(lib):
    g, h = _gradients(2)
    want = _shard(g.copy(), h.copy(), 40)
    Sampling(seed=3, subsample=0.4).apply_rows(want, 5)
    n, K = g.shape
    lib.emulate_apply(*launch_args((g, h, np.int32(K), np.int32(0), np.int64(n),
                                    np.int64(40), np.uint64(draw_key(3, 0, 5)), np.int32(0),
                                    np.float64(0.4), np.float64(0), np.float64(0),
                                    np.int64(0), np.float64(0), np.int32(0))))
    assert g.tobytes() == want.g.tobytes() and h.tobytes() == want.h.tobytes()


@pytest.mark.parametrize("T_frac", [0.05, 0.3, 2.0])
def test_gradient_apply_is_sample_class(lib, T_frac):
    """Class 1's reweighting: the same bytes as the array code, for a threshold inside the
    rows, a wide one, and one that keeps every row (V = 0)."""
    g, h = _gradients(3)
    n, K = g.shape
    k, seed, epoch = 1, 9, 4
    T = int(n * T_frac)
    vmax = float(np.sqrt(np.abs(g[:, k]).max() ** 2 + LAMBDA * h[:, k].max() ** 2))
    want = _shard(g.copy(), h.copy(), 77)
    sample_class([want], k, vmax, T, seed, epoch, lambda a, op: a)
    q = magnitudes(g[:, k], h[:, k], vmax, np)
    holder = Holder(q, np)
    t_star, c_star, v_star = threshold(T, holder.sums)
    ratio = 0.0 if v_star == 0 else float(T - c_star) / float(v_star)
    lib.emulate_apply(*launch_args((g, h, np.int32(K), np.int32(k), np.int64(n), np.int64(77),
                                    np.uint64(draw_key(seed, _DRAW + k, epoch)), np.int32(1),
                                    np.float64(0), np.float64(LAMBDA),
                                    np.float64(float(2 ** BITS) / vmax), np.int64(t_star),
                                    np.float64(ratio), np.int32(v_star == 0))))
    assert g.tobytes() == want.g.tobytes() and h.tobytes() == want.h.tobytes()
    kept = np.count_nonzero(want.h[:, k])
    assert 0 < kept <= n
