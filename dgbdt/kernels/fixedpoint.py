"""Fixed-point sums: the reason dgbdt's models do not depend on row order or partitioning.

Floating-point addition is not associative, so a sum of the same numbers in another order (rows
permuted, split into other partitions, merged by another reduction tree, accumulated by racing
GPU atomics) may differ in its last bits, and a tree split can flip. dgbdt instead rounds every
summand once to an integer multiple of 2**-k,

    q_i = rint(x_i * 2**k),      k chosen so that  n * max|x| * 2**k < 2**62,

and adds the int64 q_i, which is exact in any order and cannot overflow. The scale depends only on
max|x| and the row count n, both exact and order-free reductions. The relative precision of a
summand is about 2**-62 * n * max|x| / |x_i|: for a million rows 2**-42 of the largest value,
far below float32 gradient noise.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

_HEADROOM_BITS = 62


def scale_for(max_abs: float, n: int) -> float:
    """The power of two 2**k with n * max_abs * 2**k < 2**62 (1.0 when everything is zero)."""
    if not math.isfinite(max_abs):
        raise ValueError(f"cannot sum non-finite values (max |x| = {max_abs})")
    if max_abs <= 0.0 or n <= 0:
        return 1.0
    # frexp: n * max_abs = m * 2**e with m in [0.5, 1), so n * max_abs < 2**e
    _, e = math.frexp(float(n) * float(max_abs))
    return math.ldexp(1.0, _HEADROOM_BITS - e)


def to_fixed(x: np.ndarray, scale: float) -> np.ndarray:
    """rint(x * scale) as int64 (exact for the power-of-two scale, rounding once)."""
    return np.rint(np.asarray(x, dtype=np.float64) * scale).astype(np.int64)


class ExactSum:
    """An exact sum of float64 values that merges across partitions: the result is the correctly
    rounded true sum, whatever the order, grouping or partitioning of the summands.

    Every finite double is an integer multiple of 2**-1126 (frexp: x = M 2**e with |M| < 2**53
    an integer, e - 53 >= -1126), so the sum is a Python integer in those units. ``of`` groups the
    summands by exponent and adds their 26-bit mantissa halves with np.bincount (float64 sums of
    integers below 2**53, exact for chunks of up to 2**26 values), then combines the groups in
    Python integers. Used for metrics and intercept statistics; gradients use the cheaper
    fixed-point scaling above.
    """

    __slots__ = ("units",)
    _SHIFT = 1126
    _CHUNK = 1 << 26
    #: host arrays up to this size are summed by numpy (``_bins_numpy``), not the numba loop: a
    #: fresh process's first numba call loads numba's CPU target (with scipy's BLAS check,
    #: 0.5 s on a fresh GPU worker), and a GPU training's only host sum is its row count
    _NUMPY_MAX = 1 << 12

    def __init__(self, units: int = 0):
        self.units = int(units)

    # frexp exponents of finite doubles lie in [-1073, 1024]; bin e + _EXP_OFFSET of a fixed-size
    # count, so no pass is needed to find the range (and a GPU never waits for one)
    _EXP_OFFSET = 1074
    _N_EXP = 2100

    @classmethod
    def of(cls, x) -> "ExactSum":
        """The exact sum of a host (numpy) or device (cupy) array's values; a device array is
        reduced on its GPU and only 2 x 2100 per-exponent partial sums come back."""
        xp = _module(x)
        x = xp.ascontiguousarray(xp.asarray(x, dtype=xp.float64).reshape(-1))
        total = 0
        for a in range(0, x.shape[0], cls._CHUNK):
            hi, lo, bad = cls._bins(x[a:a + cls._CHUNK], xp)
            if bad:
                raise ValueError("cannot sum non-finite values exactly")
            for j in np.flatnonzero((hi != 0) | (lo != 0)):
                units = (int(hi[j]) << 26) + int(lo[j])
                total += units << (int(j) - cls._EXP_OFFSET - 53 + cls._SHIFT)
        return cls(total)

    @classmethod
    def _bins(cls, c, xp):
        """(hi, lo, bad): per-exponent sums of the high and low 26 mantissa bits of chunk c (at
        most _CHUNK values, so every sum is an integer below 2**52, exact in any order) and
        whether a value was not finite; host arrays. A GPU chunk is reduced by one kernel
        (dgbdt.kernels.gpu_sum.exact_sum_bins) that sends 2 x 2100 int64 back, a host chunk by a
        numba loop (dgbdt.kernels.cpu_sum), or by ``_bins_numpy``, their specification, when it
        is small (``_NUMPY_MAX``)."""
        if xp is not np:
            from .gpu_sum import exact_sum_bins
            return exact_sum_bins(c)
        if c.shape[0] <= cls._NUMPY_MAX:
            return cls._bins_numpy(c)
        from .cpu_sum import exact_sum_bins
        return exact_sum_bins(c)

    @classmethod
    def _bins_numpy(cls, c):
        """``_bins`` in numpy operations (the kernels' specification, used by the tests)."""
        m, e = np.frexp(c)
        finite = np.isfinite(c)
        m = np.where(finite, m, 0.0)
        mant = np.abs(np.ldexp(m, 53)).astype(np.int64)
        sign = np.where(m < 0, -1.0, 1.0)
        idx = (e + cls._EXP_OFFSET).astype(np.int64) * finite
        hi = np.bincount(idx, weights=sign * (mant >> 26), minlength=cls._N_EXP)
        lo = np.bincount(idx, weights=sign * (mant & ((1 << 26) - 1)), minlength=cls._N_EXP)
        return hi, lo, bool((~finite).any())

    def __add__(self, other: "ExactSum") -> "ExactSum":
        if isinstance(other, int) and other == 0:  # sum()'s start value
            return self
        return ExactSum(self.units + other.units)

    __radd__ = __add__  # so that sum() works (0 + ExactSum)

    def __float__(self) -> float:
        return float(Fraction(self.units, 1 << self._SHIFT))

    def __eq__(self, other) -> bool:
        return isinstance(other, ExactSum) and self.units == other.units

    def __repr__(self) -> str:
        return f"ExactSum({float(self)!r})"

    def __reduce__(self):
        return (ExactSum, (self.units,))

    # Any sum of at most 2**62 finite doubles is below 2**(1126 + 1024 + 62) units in magnitude,
    # so 70 limbs of 32 bits hold it.
    LIMB_BITS = 32
    N_LIMBS = 70

    def limbs(self) -> np.ndarray:
        """The sum as int64 [N_LIMBS] with value sum_i limbs[i] * 2**(32 i), every limb of the
        sum's sign and below 2**32 in magnitude, so limb-wise sums of up to 2**31 such arrays
        (an all-reduce over ranks) are exact in int64 and decode with ``from_limbs``."""
        a, sign = abs(self.units), (-1 if self.units < 0 else 1)
        if a >> (self.LIMB_BITS * self.N_LIMBS):
            raise OverflowError("exact sum too large for its limb encoding")
        mask = (1 << self.LIMB_BITS) - 1
        return np.array([sign * ((a >> (self.LIMB_BITS * i)) & mask)
                         for i in range(self.N_LIMBS)], dtype=np.int64)

    @classmethod
    def from_limbs(cls, limbs) -> "ExactSum":
        """Inverse of ``limbs``, also for limb-wise sums of several encodings."""
        return cls(sum(int(v) << (cls.LIMB_BITS * i) for i, v in enumerate(np.asarray(limbs))))


def _module(x):
    """cupy for GPU arrays, numpy otherwise (no import of cupy for host arrays)."""
    if hasattr(x, "__cuda_array_interface__"):
        import cupy
        return cupy
    return np


def exact_sum(x, axis: int | None = None):
    """Correctly rounded sum of x (along axis 0 of a 2-D x with axis=0), order-independent."""
    x = np.asarray(x, dtype=np.float64)
    if axis is None:
        return float(ExactSum.of(x))
    if axis != 0 or x.ndim != 2:
        raise ValueError("exact_sum supports axis=None or axis=0 of a 2-D array")
    return np.array([float(ExactSum.of(x[:, j])) for j in range(x.shape[1])])
