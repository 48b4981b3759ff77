"""The CUDA source of a device-grown linear tree's solves (dgbdt/kernels/cuda/linear_grow.cu),
run on the CPU: compiled as host C++ (tests/test_linear_kernel_host.py's emulation) and
compared with their numba specification (dgbdt.kernels.cpu_linear_fit) bit for bit: the
children's regressors, slope parts and 1 / s_p after random half-additive fits (regressor sets
empty, partial, full, holding the split feature or not; collinear systems whose pivots drop),
and the leaves' coefficients (up to 32 regressors, leaves below min_child_weight, the
sentinel). Then dgbdt.train through the GPU's Python glue (kernels.gpu_linear) with every
linear kernel's host build, device-grown (DGBDT_GROWTH=device): the CPU's host-grown model,
byte for byte."""
import ctypes
import importlib

import numpy as np
from cuda_host import build, launch_args, source
import pytest

from dgbdt.kernels import cpu_linear_fit
import test_linear_kernel_host as host
import test_linear_split_host as split_host
from test_linear_kernel_host import LAUNCH, PRELUDE, _emulated_backend, training_rows

lib = host.lib                  # the linear.cu and linear_split.cu host builds (module fixtures)
split_lib = split_host.split_lib

pytestmark = [pytest.mark.skipif(__import__("shutil").which("g++") is None,
                                 reason="g++ not installed"),
              pytest.mark.slow]  # host builds of the CUDA sources, whole trainings through them

GROW_PRELUDE = """
using std::frexp; using std::ldexp; using std::isfinite; using std::sqrt; using std::fabs;
"""

GROW_DRIVER = LAUNCH + """
extern "C" void run_children(int gx, int bx, const i64* nodes, const i64* feat,
        const i64* lefts, const i64* rights, const i64* lsum, const i64* rsum,
        const unsigned char* addable, int F, i64 sentinel, i64* regs, double* slopes,
        i64* nreg, double* inv_sp, int W, int D, const double* consts, double lam0,
        double lam1) {
    launch(gx, 1, bx, [=] {
        linear_children(nodes, feat, lefts, rights, lsum, rsum, addable, F, sentinel, regs,
                        slopes, nreg, inv_sp, W, D, consts, lam0, lam1); });
}

extern "C" void run_level(int gx, int bx, const i64* slots, int W, const i64* regs,
        const double* slopes, const i64* nreg, const double* inv_sp,
        const unsigned char* regressor, int F, int D, i64* reg_feat, double* reg_coef,
        double* isp, unsigned char* addable, unsigned char* has_p) {
    launch(gx, 1, bx, [=] {
        linear_level(slots, W, regs, slopes, nreg, inv_sp, regressor, F, D, reg_feat, reg_coef,
                     isp, addable, has_p); });
}

extern "C" void run_leaves(int gx, int bx, const i64* sums, const i64* leaves, const i64* nreg,
        i64 sentinel, int m, int D, const double* consts, double lam0, double lam1,
        double mcw, double* scratch, double* coefs) {
    launch(gx, 1, bx, [=] {
        fit_linear_leaves(sums, leaves, nreg, sentinel, m, D, consts, lam0, lam1, mcw, scratch,
                          coefs); });
}
"""


@pytest.fixture(scope="module")
def grow_lib(tmp_path_factory):
    return build(PRELUDE + GROW_PRELUDE + source("linear_grow") + GROW_DRIVER,
                 tmp_path_factory.mktemp("linear_grow_host"), "linear_grow", threads=True)


def _sums(rng, n_rows, d, scale=2.0 ** 20, collinear=False):
    """Fixed-point sums of a random weighted least squares in the basis z = (1, x_1..x_d):
    [d + 1, d + 2] (h z z^T, then g z), as the kernels' integers."""
    z = np.ones((n_rows, d + 1))
    z[:, 1:] = rng.uniform(-1, 1, (n_rows, d))
    if collinear and d >= 2:
        z[:, 2] = z[:, 1]                         # a pivot that drops
    h = rng.uniform(0.1, 1.0, n_rows)
    g = rng.normal(size=n_rows)
    out = np.zeros((d + 1, d + 2), np.int64)
    out[:, :d + 1] = np.rint((z * h[:, None]).T @ z * scale).astype(np.int64)
    out[:, d + 1] = np.rint(z.T @ g * scale).astype(np.int64)
    return out


def _tables(rng, cap, D, W):
    """Random node tables and a level of W slots: slot i's node 1 + i, its children after."""
    regs = np.full((cap, D), -1, np.int64)
    slopes = np.zeros((cap, D))
    nreg = np.zeros(cap, np.int64)
    inv_sp = np.ones(cap)
    F = 7
    for node in range(1, W + 1):
        d = [0, D, rng.integers(0, D + 1)][node % 3]
        regs[node, :d] = rng.choice(F, d, replace=False)
        slopes[node, :d] = rng.normal(size=d) * 10.0 ** rng.integers(-3, 3)
        nreg[node] = d
    return regs, slopes, nreg, inv_sp, F


@pytest.mark.parametrize("D", [1, 3, 5])
def test_children_fits_equal_the_numba_loop_bit_for_bit(grow_lib, D):
    rng = np.random.default_rng(D)
    W = 24
    cap = 2 + 3 * W
    sentinel = cap - 1
    regs, slopes, nreg, inv_sp, F = _tables(rng, cap, D, W)
    nodes = np.arange(1, W + 1, dtype=np.int64)
    ok = rng.random(W) < 0.8
    nodes[~ok] = sentinel
    lefts = W + 1 + 2 * np.arange(W, dtype=np.int64)
    rights = lefts + 1
    node_rows = np.arange(1, W + 1)
    feat = np.where(rng.random(W) < 0.4,                  # often one of S (if any)
                    np.maximum(regs[node_rows, 0], 0), rng.integers(0, F, W)).astype(np.int64)
    addable = (nreg[node_rows] < D)[:, None] | (regs[node_rows][:, :, None] ==
                                                np.arange(F)).any(axis=1)
    addable &= rng.random((W, F)) < 0.9                   # sometimes not a regressor at all
    lsum = np.zeros((W, 9), np.int64)
    rsum = np.zeros((W, 9), np.int64)
    for i in range(W):        # 9 sums of (1, p~, x~) systems, some collinear (p~ = x~)
        for out in (lsum, rsum):
            s = _sums(rng, 50, 2, collinear=rng.random() < 0.2)
            out[i] = [s[0, 3], s[0, 0], s[1, 3], s[0, 1], s[1, 1], s[2, 3], s[0, 2], s[1, 2],
                      s[2, 2]]
    lsum[0, 1] = 0                                        # an empty side: no constant kept
    ref = [a.copy() for a in (regs, slopes, nreg, inv_sp)]
    got = [a.copy() for a in (regs, slopes, nreg, inv_sp)]
    args = (0.5 ** 20, 0.5 ** 20, 1.0, 0.5)
    cpu_linear_fit.linear_children(nodes, feat, lefts, rights, lsum, rsum, addable, sentinel,
                                   *ref, *args)
    grow_lib.run_children(ctypes.c_int(2), ctypes.c_int(8), *launch_args((
        nodes, feat, lefts, rights, lsum, rsum, addable.astype(np.uint8), np.int32(F),
        np.int64(sentinel), *got, np.int32(W), np.int32(D),
        np.array([0.0, 0.0, args[0], args[1], 0.0]), np.float64(args[2]), np.float64(args[3]))))
    for r, g in zip(ref, got):
        assert r.tobytes() == g.tobytes()
    # the loop did something: every splitting slot's children have rows, others none
    assert (ref[2][lefts[ok]] >= ref[2][node_rows[ok]]).all()
    assert (ref[0][lefts[~ok]] == -1).all() and ref[1][rights[ok]].any()


def test_level_inputs_equal_the_numba_loop_and_the_array_rule(grow_lib):
    """linear_level's gathers, addable and has_p: level_inputs' bit for bit, and addable is
    LinearNodes._addable's rule (a regressor feature while |S| < D, else S's own)."""
    rng = np.random.default_rng(9)
    D, W, cap = 3, 16, 40
    regs, slopes, nreg, inv_sp, F = _tables(rng, cap, D, W)
    inv_sp[:] = rng.uniform(0.1, 1, cap)
    regressor = rng.random(F) < 0.8
    regressor[regs[regs >= 0]] = True                     # S's features are regressors
    slots = rng.integers(0, cap, W).astype(np.int64)
    ref = (np.empty((W, D), np.int64), np.empty((W, D)), np.empty(W),
           np.empty((W, F), np.bool_), np.empty(W, np.bool_))
    cpu_linear_fit.level_inputs(slots, regs, slopes, nreg, inv_sp, regressor, *ref)
    got = (np.empty((W, D), np.int64), np.empty((W, D)), np.empty(W),
           np.empty((W, F), np.uint8), np.empty(W, np.uint8))
    grow_lib.run_level(ctypes.c_int(2), ctypes.c_int(8), *launch_args((
        slots, np.int32(W), regs, slopes, nreg, inv_sp, regressor.astype(np.uint8),
        np.int32(F), np.int32(D), *got)))
    for r, g in zip(ref, got):
        assert np.array_equal(r, g) and r.dtype.itemsize == 1 or r.tobytes() == g.tobytes()
    for i, node in enumerate(slots.tolist()):
        S = regs[node, :nreg[node]]
        want = regressor.copy() if len(S) < D else np.isin(np.arange(F), S) & regressor
        assert (ref[3][i] == want).all() and ref[4][i] == (len(S) > 0)


def test_leaf_fits_equal_the_numba_loop_bit_for_bit(grow_lib):
    rng = np.random.default_rng(3)
    for D in (1, 5, 32):
        m, cap = 12, 40
        sentinel = cap - 1
        leaves = rng.choice(cap - 1, m, replace=False).astype(np.int64)
        leaves[[2, 7]] = sentinel
        nreg = rng.integers(0, D + 1, cap).astype(np.int64)
        nreg[leaves[0]] = D
        sums = np.zeros((m, D + 1, D + 2), np.int64)
        for j, node in enumerate(leaves.tolist()):
            d = int(nreg[node])
            s = _sums(rng, 80, d, collinear=j % 4 == 1)
            sums[j, :d + 1, :d + 1] = s[:, :d + 1]
            sums[j, :d + 1, D + 1] = s[:, d + 1]
        sums[5, 0, 0] = 3                                 # below min_child_weight
        ref = np.full((m, D + 1), 7.0)
        got = ref.copy()
        args = (0.5 ** 20, 0.5 ** 20, 1.0, 0.25, 1e-3, 0.3)
        cpu_linear_fit.fit_leaves(sums, leaves, nreg, sentinel, *args, ref)
        n = D + 1
        scratch = np.zeros(m * (2 * n * n + 4 * n))
        grow_lib.run_leaves(ctypes.c_int(2), ctypes.c_int(4), *launch_args((
            sums, leaves, nreg, np.int64(sentinel), np.int32(m), np.int32(D),
            np.array([0.0, 0.0, args[0], args[1], args[5]]), *(np.float64(a) for a in args[2:5]),
            scratch, got)))
        assert ref.tobytes() == got.tobytes()
        assert not ref[[2, 5, 7]].any() and ref[0].all()


def test_leaf_fit_is_the_host_fit_leaf():
    """fit_leaves' coefficients are tree.linear.fit_leaf's times eta (the host grower's)."""
    from dgbdt.kernels.linear_math import fit_leaf
    rng = np.random.default_rng(4)
    D, eta = 4, 0.3
    leaves = np.arange(5, dtype=np.int64)
    nreg = np.array([0, 1, 2, 4, 3], np.int64)
    sums = np.zeros((5, D + 1, D + 2), np.int64)
    for j in range(5):
        d = int(nreg[j])
        s = _sums(rng, 60, d, collinear=j == 3)
        sums[j, :d + 1, :d + 1] = s[:, :d + 1]
        sums[j, :d + 1, D + 1] = s[:, d + 1]
    coefs = np.zeros((5, D + 1))
    cpu_linear_fit.fit_leaves(sums, leaves, nreg, 99, 0.5 ** 20, 0.5 ** 20, 1.0, 0.5, 0.0,
                              eta, coefs)
    for j in range(5):
        d = int(nreg[j])
        want = fit_leaf(sums[j], d, 0.5 ** 20, 0.5 ** 20, 1.0, 0.5, 0.0) * eta
        assert coefs[j, :d + 1].tobytes() == want.tobytes()


@pytest.mark.parametrize("extra", [{}, {"max_linear_features": 1, "colsample_bynode": 0.7},
                                   {"objective": "multi:softprob", "num_class": 3,
                                    "subsample": 0.8}], ids=["plain", "capped", "softprob"])
def test_device_grown_training_through_the_cuda_glue_is_the_cpu_model(lib, split_lib, grow_lib,
                                                                     monkeypatch, extra):
    """dgbdt.train, device-grown, with the emulated GPU backend running every linear kernel
    (histograms, split search, the children's and leaves' fits, leaf sums, margins) through
    gpu_linear's glue: the CPU's host-grown model file, byte for byte."""
    import dgbdt
    train_mod = importlib.import_module("dgbdt.train")
    X, y, w = training_rows(6, classes="num_class" in extra)
    p = {"linear_tree": True, "eta": 0.4, "max_bin": 16, "max_depth": 3,
         "max_linear_features": 2, "seed": 1, "min_child_weight": 2.0, **extra}
    monkeypatch.setenv("DGBDT_GROWTH", "host")
    cpu = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 3, verbose_eval=False)
    backend, launched = _emulated_backend(lib, split_lib)
    emulated = backend._kernel

    def launch(module, name):
        if module != "linear_grow":
            return emulated(module, name)

        def call(grid, block, args, shared_mem=0):
            launched.append(name)
            run = {"linear_children": grow_lib.run_children,
                   "fit_linear_leaves": grow_lib.run_leaves,
                   "linear_level": grow_lib.run_level}[name]
            run(ctypes.c_int(min(int(grid[0]), 2)), ctypes.c_int(min(int(block[0]), 16)),
                *launch_args(args))
        return call

    backend._kernel = launch
    monkeypatch.setattr(train_mod, "get_backend", lambda device: backend)
    monkeypatch.setenv("DGBDT_GROWTH", "device")
    emu = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w, page_rows=700), 3,
                      verbose_eval=False)
    assert {"linear_split_scan", "linear_split_finish", "linear_children", "fit_linear_leaves",
            "linear_leaf_sums", "add_linear_leaves"} <= set(launched)
    assert emu.save_raw() == cpu.save_raw()
