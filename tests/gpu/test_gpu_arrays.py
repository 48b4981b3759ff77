"""dgbdt.kernels.gpu_arrays (array basics that never compile at run time) against numpy, and
the CUDA backend's siblings against the CPU backend's."""
import numpy as np
import pytest

import cupy as cp

from dgbdt.backends import array_ops
from dgbdt.backends.cpu import CPU
from dgbdt.backends.cuda import CudaBackend
from dgbdt.kernels import gpu_arrays as ga


@pytest.mark.parametrize("dtype,value", [
    (np.int64, -1), (np.int64, 0), (np.int64, 1), (np.int64, 2 ** 40 + 3), (np.int32, -1),
    (np.int32, 7), (np.uint8, 0xFF), (np.bool_, True), (np.bool_, False), (np.float32, 1.5),
    (np.float64, -0.0), (np.float64, 0.1), (np.uint64, 2 ** 64 - 2)])
@pytest.mark.parametrize("n", [0, 1, 1000, 1_000_003])
def test_fill_and_full(dtype, value, n):
    a = cp.ones(n, dtype=dtype)
    ga.fill(a, value)
    want = np.full(n, value, dtype=dtype)
    assert cp.asnumpy(a).tobytes() == want.tobytes()
    assert cp.asnumpy(ga.full((n, 2), value, dtype)).tobytes() == \
        np.full((n, 2), value, dtype=dtype).tobytes()


def test_fill_refuses_what_it_cannot_do():
    with pytest.raises(ValueError, match="C-contiguous"):
        ga.fill(cp.zeros((4, 4))[:, 1], 1.0)
    with pytest.raises(TypeError, match="4- and 8-byte"):
        ga.fill(cp.zeros(4, dtype=cp.int16), 3)


def test_copy_concatenate_iota_arange():
    rng = np.random.default_rng(0)
    x = rng.integers(-9, 9, (1000, 3, 2))
    assert np.array_equal(cp.asnumpy(ga.copy(cp.asarray(x))), x)
    parts = [x[:10], x[10:10], x[10:]]
    got = ga.concatenate([cp.asarray(p) for p in parts])
    assert np.array_equal(cp.asnumpy(got), np.concatenate(parts))
    with pytest.raises(ValueError, match="one dtype"):
        ga.concatenate([cp.zeros(3), cp.zeros(3, dtype=cp.float32)])
    for dtype in (np.int32, np.int64):
        assert np.array_equal(cp.asnumpy(ga.arange(100_001, dtype)),
                              np.arange(100_001, dtype=dtype))
        a = cp.zeros(5, dtype=dtype)
        ga.iota(a)
        assert cp.asnumpy(a).tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(TypeError):
        ga.arange(3, np.float32)


def test_repeat_row_row_range_sums_flags():
    row = np.array([0.25, -3.0, 1e300])
    assert np.array_equal(cp.asnumpy(ga.repeat_row(cp.asarray(row), 777)),
                          np.tile(row, (777, 1)))
    assert ga.repeat_row(cp.asarray(row), 0).shape == (0, 3)
    rng = np.random.default_rng(1)
    h = rng.integers(-2 ** 62, 2 ** 62, (5000, 2))    # wrapping sums, like numpy's
    for lo, hi in ((0, 5000), (17, 18), (100, 4321), (7, 7)):
        out = cp.zeros(2, dtype=cp.int64)
        ga.row_range_sums(cp.asarray(h), lo, hi, out)
        assert np.array_equal(cp.asnumpy(out), h[lo:hi].sum(axis=0))
    f = np.array([0, 1, 1, 0, 1], dtype=np.int64)
    assert cp.asnumpy(ga.flags(cp.asarray(f))).tolist() == [False, True, True, False, True]
    assert array_ops.flags(f).tolist() == [False, True, True, False, True]


@pytest.mark.parametrize("shape", [(6, 40, 2), (3, 10, 2, 4)])
def test_siblings_equal_cpu(shape):
    """[small; parents[slot] - small] (the collective seam's level merge), any trailing shape
    (vector-leaf histograms have one more axis)."""
    rng = np.random.default_rng(2)
    small = rng.integers(-2 ** 40, 2 ** 40, shape)
    parents = rng.integers(-2 ** 40, 2 ** 40, (9,) + shape[1:])
    slot = rng.integers(0, 9, shape[0])
    want = CPU.siblings(small, parents, slot)
    got = CudaBackend.for_ordinal(0).siblings(cp.asarray(small), cp.asarray(parents), slot)
    assert np.array_equal(cp.asnumpy(got), want)
    assert np.array_equal(want[shape[0]:], parents[slot] - small)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint8, np.bool_,
                                   np.int16, np.uint16, np.int32, np.uint32, np.int64,
                                   np.uint64, np.float16])
def test_to_f64_equals_numpy_astype(dtype):
    """The prebuilt casts give numpy's bits (NaN's too); a strided vector or a dtype without
    one (float16) goes through CuPy's astype: numpy's values (its NaN payload may differ)."""
    rng = np.random.default_rng(3)
    if dtype == np.bool_:
        a = rng.random(10_001) < 0.5
    elif np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, size=10_001, dtype=dtype, endpoint=True)
        a[:2] = [info.min, info.max]
    else:
        a = (rng.standard_normal(10_001) * 1e3).astype(dtype)
        a[:3] = [np.nan, np.inf, -0.0]
    got = ga.to_f64(cp.asarray(a))
    assert got.dtype == np.float64 and got.flags.c_contiguous
    if dtype == np.float16:
        np.testing.assert_array_equal(cp.asnumpy(got), a.astype(np.float64))
    else:
        assert cp.asnumpy(got).tobytes() == a.astype(np.float64).tobytes()
    strided = ga.to_f64(cp.asarray(a)[::3])         # CuPy's cast
    np.testing.assert_array_equal(cp.asnumpy(strided), a[::3].astype(np.float64))
    assert ga.to_f64(cp.asarray(a[:0])).shape == (0,)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_proba_pair_equals_cupys_columns(dtype):
    p = cp.asarray(np.random.default_rng(4).random(5003).astype(dtype))
    got = ga.proba_pair(p)
    want = cp.stack([1.0 - p, p], axis=1)
    assert got.dtype == want.dtype and got.shape == (5003, 2)
    assert cp.asnumpy(got).tobytes() == cp.asnumpy(want).tobytes()
