"""The CUDA source of the SHAP kernels (dgbdt/kernels/cuda/shap.cu), run on the CPU: compiled
as host C++ with CUDA's few builtins it uses emulated, its grid walked one thread after another,
and compared with the CPU's tree walk (dgbdt.kernels.cpu_shap). Valid as an emulation because
no thread of these kernels reads another's shared-memory slots and none waits at a barrier;
atomics become plain adds (one thread at a time). It checks the kernels' logic (indexing,
the path loop, class flushes, the conditioned element, category bitsets) in CI; the GPU's own
rounding (NVRTC contracts multiply-adds) is tested by tests/gpu/test_gpu_shap.py."""
import ctypes
import shutil

import numpy as np
from cuda_host import build, source
import pytest

from dgbdt.kernels.shap_paths import PATH_ARRAYS
from test_shap_paths import _model, _paths

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")

PRELUDE = """
#define MAXL {maxl}
#define HAS_CAT {has_cat}
struct D3 {{ unsigned x, y, z; }};
static D3 blockIdx, threadIdx, blockDim, gridDim;
static double g_phi[1 << 20];
#define __global__
#define __device__
#define __forceinline__ inline
#define __constant__ static
template <class T> inline T __ldg(const T* p) {{ return *p; }}
inline double atomicAdd(double* p, double v) {{ double o = *p; *p += v; return o; }}
inline int min(int a, int b) {{ return a < b ? a : b; }}
"""

DRIVER = """
typedef long long ll;
extern "C" void emulate(int which, int gx, int gy, int bx, const float* X, ll n, int F,
        const ll* path_ptr, const int* path_class, const double* path_value, int n_paths,
        const int* feat, const float* lo, const float* hi, const unsigned char* miss,
        const double* z, const double* invz, const ll* cat, const int* cat_words,
        const unsigned char* beyond, const unsigned* bits, int K, double* out) {
    gridDim = {(unsigned)gx, (unsigned)gy, 1};
    blockDim = {(unsigned)bx, 1, 1};
    for (int by = 0; by < gy; ++by) for (int b = 0; b < gx; ++b) for (int t = 0; t < bx; ++t) {
        blockIdx = {(unsigned)b, (unsigned)by, 0};
        threadIdx = {(unsigned)t, 0, 0};
        if (which == 0)
            shap_paths(X, n, F, path_ptr, path_class, path_value, n_paths, feat, lo, hi, miss,
                       z, invz, cat, cat_words, beyond, bits, K, out);
        else
            shap_interactions(X, n, F, path_ptr, path_class, path_value, n_paths, feat, lo,
                              hi, miss, z, invz, cat, cat_words, beyond, bits, K, out);
    }
}
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """(MAXL, HAS_CAT) -> the host build of shap.cu (ctypes), compiled once each."""
    built = {}
    where = tmp_path_factory.mktemp("shap_host")

    def get(maxl, has_cat):
        if (maxl, has_cat) not in built:
            src = source("shap", {"extern __shared__ double phi[];": "double* phi = g_phi;"})
            built[maxl, has_cat] = build(PRELUDE.format(maxl=maxl, has_cat=has_cat) + src
                                         + DRIVER, where, f"shap_{maxl}_{has_cat}")
        return built[maxl, has_cat]
    return get


def _launch(lib, which, X, paths, out, rows, grid_y):
    """gpu_shap._launch's grid: blocks of ``rows`` threads, ``grid_y`` block rows."""
    n, F = X.shape
    arrs = [np.ascontiguousarray(paths[k]) for k in PATH_ARRAYS]
    X = np.ascontiguousarray(X, np.float32)
    p = [ctypes.c_void_p(a.ctypes.data) for a in arrs]
    lib.emulate(ctypes.c_int(which), ctypes.c_int(-(-n // rows)), ctypes.c_int(grid_y),
                ctypes.c_int(rows), ctypes.c_void_p(X.ctypes.data), ctypes.c_longlong(n),
                ctypes.c_int(F), p[0], p[1], p[2], ctypes.c_int(len(arrs[0]) - 1), *p[3:],
                ctypes.c_int(out.shape[1]), ctypes.c_void_p(out.ctypes.data))


@pytest.mark.parametrize("n,F,depth,K,missing,categorical", [
    (150, 4, 9, 3, 0.2, False), (200, 6, 6, 1, 0.1, True), (120, 5, 5, 3, 0.1, True)])
def test_cuda_source_run_on_the_host_equals_the_tree_walk(kernels, n, F, depth, K, missing,
                                                          categorical):
    b, X = _model(n, F, depth, K, missing, seed=depth + 1, categorical=categorical, rounds=6)
    paths = _paths(b)
    has_cat = int((paths["cat"] >= 0).any())
    assert has_cat == categorical
    lib = kernels(max(2, paths["max_len"]), has_cat)
    ref = b.predict(X, pred_contribs=True, strict_shape=True)
    ref_i = b.predict(X, pred_interactions=True, strict_shape=True)
    # 128 rows a block with one path chunk; 32 rows (a partial last block), 3 chunks
    for rows, chunks in ((128, 1), (32, 3)):
        out = np.zeros((n, K, F + 1))
        _launch(lib, 0, X, paths, out, rows, chunks)
        np.testing.assert_allclose(out[:, :, :F], ref[:, :, :F], rtol=1e-12, atol=1e-12)
        assert not out[:, :, F].any()                      # the bias is the caller's
        inter = np.zeros((n, K, F + 1, F + 1))
        _launch(lib, 1, X, paths, inter, rows, F)          # block row y: conditioned feature
        assert np.abs(inter[:, :, :F, :F] * (1 - np.eye(F))).max() > 1e-3
        np.testing.assert_allclose(inter[:, :, :F, :F], ref_i[:, :, :F, :F], rtol=1e-12,
                                   atol=1e-12)
        assert not inter[:, :, F, :].any() and not inter[:, :, :, F].any()
