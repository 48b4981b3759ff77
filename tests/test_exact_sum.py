"""ExactSum (dgbdt.kernels.fixedpoint): the numba per-exponent sums equal their numpy specification,
and the sum is the exact rational sum whatever the order or the chunking."""
from fractions import Fraction

import numpy as np
import pytest

from dgbdt.kernels import cpu_sum
from dgbdt.kernels.fixedpoint import ExactSum


def _cases():
    rng = np.random.default_rng(3)
    n = 200_003
    yield "labels", (rng.random(n) < 0.3).astype(np.float64)
    yield "many exponents", rng.standard_normal(n) * np.exp2(rng.integers(-300, 300, n))
    yield "subnormals", rng.standard_normal(n) * 5e-324 * rng.integers(0, 2 ** 40, n)
    yield "extremes", np.array([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308,
                                -2.225073858507201e-308, 1.7976931348623157e308,
                                -1.7976931348623157e308, 1.0, -1.0])
    yield "empty", np.zeros(0)


@pytest.mark.parametrize("name,x", list(_cases()))
def test_kernel_equals_numpy_specification(name, x):
    hi, lo, bad = cpu_sum.exact_sum_bins(x)      # the numba loop, whatever the size
    h2, l2, b2 = ExactSum._bins_numpy(x)
    np.testing.assert_array_equal(hi, np.asarray(h2, dtype=np.int64))
    np.testing.assert_array_equal(lo, np.asarray(l2, dtype=np.int64))
    assert bad is False and b2 is False
    exact = sum((Fraction(float(v)) for v in x[:2000]), Fraction(0))
    assert Fraction(ExactSum.of(x[:2000]).units, 1 << ExactSum._SHIFT) == exact


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_values_are_refused(bad):
    x = np.ones(1000)
    x[517] = bad
    with pytest.raises(ValueError, match="non-finite"):
        ExactSum.of(x)


def test_small_host_sums_take_numpy_and_agree_with_the_kernel():
    """Sums of up to _NUMPY_MAX host values skip numba (a GPU worker's first fit would load its
    CPU target for the row count alone); both ways give the same exact sum."""
    x = np.random.default_rng(8).standard_normal(ExactSum._NUMPY_MAX) * 1e3
    hi, lo, _ = cpu_sum.exact_sum_bins(x)
    kernel = sum((int(hi[j]) << 26) + int(lo[j]) << (int(j) - ExactSum._EXP_OFFSET - 53
                 + ExactSum._SHIFT) for j in np.flatnonzero((hi != 0) | (lo != 0)))
    assert ExactSum.of(x).units == kernel
    assert ExactSum.of(np.array([3.0e7])).units == 30_000_000 << ExactSum._SHIFT


def test_order_and_chunking_do_not_matter():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(100_000) * np.exp2(rng.integers(-40, 40, 100_000))
    whole = ExactSum.of(x)
    assert ExactSum.of(rng.permutation(x)) == whole
    assert sum(ExactSum.of(p) for p in np.array_split(x, 7)) == whole
